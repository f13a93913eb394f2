"""Compile one .metal kernel file of a checkout with the host C++ compiler and the Metal prelude."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.cpp import mask_code
from mpsgen.metalhost.compiler import PRELUDE_LABEL, Compiler, attribute, find_compiler, parse_diagnostics
from mpsgen.metalhost.rewrite import copy_tree, double_literals, include_roots
from mpsgen.model import Location

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
COMPILE_TIMEOUT = 120.0
MAX_DIAGNOSTICS = 20


@dataclass(frozen=True)
class CompileResult:
    """The outcome of compiling `path`: passed, failed (with diagnostics) or skipped (with reason)."""

    path: str
    status: str
    diagnostics: tuple[tuple[Location, str], ...] = ()
    reason: str = ""
    compiler: str = ""
    seconds: float = 0.0
    command: tuple[str, ...] = field(default=(), compare=False)


def compile_metal_file(checkout_root: Path | str, rel_path: str, *, text: str | None = None,
                       compiler: Compiler | None = None, literals_in: tuple[str, ...] | None = None) -> CompileResult:
    """Check the kernel file `rel_path` (relative to `checkout_root`, or `text` in its place) with
    the checkout's own c10/metal headers: one `-fsyntax-only` run of the host compiler on rewritten
    copies, plus the double-literal check on the file itself (only inside the functors named in
    `literals_in` when given; `()` turns it off). Diagnostics name checkout paths."""
    root = Path(checkout_root)
    if compiler is None:
        compiler, why = find_compiler()
        if compiler is None:
            return CompileResult(rel_path, SKIPPED, reason=why)
    if text is None:
        text = (root / rel_path).read_text(encoding="utf-8", errors="replace")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mpsgen-metal-") as work:
        tree = copy_tree(root, rel_path, Path(work), main_text=text)
        command = compiler.syntax_command(tree.main, include_roots(Path(work)))
        try:
            ran = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return CompileResult(rel_path, FAILED, ((Location(rel_path, 1), f"the host compiler took more than {COMPILE_TIMEOUT:.0f} s"),),
                                 compiler=compiler.path, seconds=time.perf_counter() - started, command=tuple(command))
        except OSError as exc:
            return CompileResult(rel_path, SKIPPED, reason=f"cannot run {compiler.path}: {exc.strerror or exc}",
                                 compiler=compiler.path)
    seconds = time.perf_counter() - started
    diagnostics = _diagnostics(ran.stderr, rel_path, text)
    if diagnostics and all(where.path.startswith(PRELUDE_LABEL) for where, _ in diagnostics):
        # Nothing in the checkout is to blame: this compiler cannot take the prelude (e.g. clang
        # before 15 has no _Float16 on x86-64).
        where, message = diagnostics[0]
        return CompileResult(rel_path, SKIPPED, reason=f"{compiler.path} cannot compile mpsgen's Metal prelude "
                             f"({where}: {message}); use g++ 12+ or clang++ 15+ ($MPSGEN_CXX)",
                             compiler=compiler.path, seconds=seconds, command=tuple(command))
    diagnostics += double_literal_findings(text, rel_path, literals_in)
    if ran.returncode != 0 and not diagnostics:
        tail = (ran.stderr.strip().splitlines() or ["no output"])[-1]
        diagnostics = [(Location(rel_path, 1), f"the host compiler failed without a diagnostic mpsgen can read: {tail}")]
    diagnostics = sorted(dict.fromkeys(diagnostics), key=lambda d: (d[0].path != rel_path, d[0], d[1]))
    status = FAILED if diagnostics else PASSED
    return CompileResult(rel_path, status, tuple(diagnostics[:MAX_DIAGNOSTICS]), compiler=compiler.path,
                         seconds=seconds, command=tuple(command))


def double_literal_findings(text: str, rel_path: str, functors: tuple[str, ...] | None = None) -> list[tuple[Location, str]]:
    """Unsuffixed floating literals (`0.5`) in the file, or only inside `struct <name>_functor` for
    the given names. Metal reads them as float, the host as double: mpsgen's kernels write `0.5f`."""
    found = double_literals(text)
    if functors is not None:
        spans = [_functor_lines(text, rel_path, name) for name in functors]
        found = [(line, literal) for line, literal in found if any(lo <= line <= hi for lo, hi in spans)]
    return [(Location(rel_path, line), f"floating literal {literal} is a double on the host and Metal has no double (write {literal}f)")
            for line, literal in found]


def _functor_lines(text: str, rel_path: str, name: str) -> tuple[int, int]:
    from mpsgen.metal import read_kernel_file

    span = read_kernel_file(text, rel_path).functors.get(name)
    if span is None:
        return (0, -1)
    return text.count("\n", 0, span[0]) + 1, text.count("\n", 0, span[1]) + 1


def _diagnostics(stderr: str, rel_path: str, text: str) -> list[tuple[Location, str]]:
    code_lines = mask_code(text).splitlines()
    out = []
    for raw in parse_diagnostics(stderr):
        where, message = attribute(raw, rel_path)
        if where.path == rel_path:
            where = Location(rel_path, _missing_token_line(code_lines, where.line, message))
        out.append((where, message))
    return out


# gcc: "expected ';' before '}' token", reported at the `}` on the next line.
_EXPECTED_BEFORE = re.compile(r"^expected [‘'`](.+?)[’'`] before [‘'`](.+?)[’'`] token")


def _missing_token_line(code_lines: list[str], line: int, message: str) -> int:
    """The line a missing `;` (or `)`, ...) belongs on: gcc names the line of the token after the
    gap, which starts a later line when the author forgot the punctuation at the end of a line."""
    m = _EXPECTED_BEFORE.match(message)
    if not m or not (0 < line <= len(code_lines)) or not code_lines[line - 1].lstrip().startswith(m.group(2)):
        return line
    previous = line - 1
    while previous > 0 and not code_lines[previous - 1].strip():
        previous -= 1
    return previous or line
