"""Compile one .metal kernel file of a checkout with the host C++ compiler and the Metal prelude."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.model import Location
from mpsgen.read.cache import cached_result
from mpsgen.read.cpp import mask_code
from mpsgen.read.metalhost.compiler import (
    PRELUDE_DIR,
    PRELUDE_LABEL,
    Compiler,
    attribute,
    find_compiler,
    mixed_bfloat_choice,
    parse_diagnostics,
    prelude_digest,
)
from mpsgen.read.metalhost.owners import named_functors
from mpsgen.read.metalhost.rewrite import copy_tree, include_roots

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
COMPILE_TIMEOUT = 120.0


@dataclass(frozen=True)
class DiagnosticContext:
    lines: tuple[int, ...] = ()
    functors: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompileResult:
    """The outcome of compiling `path`: passed, failed (with diagnostics) or skipped (with reason)."""

    path: str
    status: str
    diagnostics: tuple[tuple[Location, str], ...] = ()
    reason: str = ""
    # For each diagnostic, what `owners.diagnostic_owners` reads: the lines of the checked file in
    # its instantiation and macro context (its own line included when it is in that file), and the
    # functors its messages name.
    contexts: tuple[DiagnosticContext, ...] = field(default=(), compare=False)
    compiler: str = ""
    seconds: float = 0.0
    command: tuple[str, ...] = field(default=(), compare=False)


def compile_metal_file(checkout_root: Path | str, rel_path: str, *, text: str | None = None,
                       compiler: Compiler | None = None, texts: Mapping[str, str] | None = None) -> CompileResult:
    """Check the kernel file `rel_path` (relative to `checkout_root`, or `text` in its place) with
    the checkout's own c10/metal headers: one `-fsyntax-only` run of the host compiler on rewritten
    copies (`rewrite.rewrite_metal`: unsuffixed floating literals are read as float, as in Metal).
    Diagnostics name checkout paths. `texts`: other files (the headers it includes) as planned."""
    root = Path(checkout_root)
    if compiler is None:
        compiler, why = find_compiler()
        if compiler is None:
            return CompileResult(rel_path, SKIPPED, reason=why)
    if text is None:
        text = (root / rel_path).read_text(encoding="utf-8", errors="replace")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mpsgen-metal-") as work:
        tree = copy_tree(root, rel_path, Path(work), main_text=text, texts=texts)
        command = compiler.syntax_command(tree.main, include_roots(Path(work)))
        try:
            ran = run_compiler(compiler, command, Path(work))
        except subprocess.TimeoutExpired:
            return CompileResult(rel_path, FAILED, ((Location(rel_path, 1), f"the host compiler took more than {COMPILE_TIMEOUT:.0f} s"),),
                                 compiler=compiler.path, seconds=time.perf_counter() - started, command=tuple(command))
        except OSError as exc:
            return CompileResult(rel_path, SKIPPED, reason=f"cannot run {compiler.path}: {exc.strerror or exc}",
                                 compiler=compiler.path)
        if ran.returncode != 0 and mixed_bfloat_choice(ran.stderr):
            # `c ? bfloat : float`: again with float -> bfloat explicit (compiler.EXPLICIT_BFLOAT)
            again = compiler.syntax_command(tree.main, include_roots(Path(work)), explicit_bfloat=True)
            try:
                other = run_compiler(compiler, again, Path(work))
            except (subprocess.TimeoutExpired, OSError):
                other = None
            if other is not None and other.returncode == 0:
                ran, command = other, again
    seconds = time.perf_counter() - started
    found = _diagnostics(ran.stderr, rel_path, text)
    diagnostics = list(found)
    if diagnostics and all(where.path.startswith(PRELUDE_LABEL) for where, _ in diagnostics):
        # Nothing in the checkout is to blame: this compiler cannot take the prelude (e.g. clang
        # before 15 has no _Float16 on x86-64).
        where, message = diagnostics[0]
        return CompileResult(rel_path, SKIPPED, reason=f"{compiler.path} cannot compile mpsgen's Metal prelude "
                             f"({where}: {message}); use g++ 12+ or clang++ 15+ ($MPSGEN_CXX)",
                             compiler=compiler.path, seconds=seconds, command=tuple(command))
    unreadable = headers_unreadable(root, rel_path, text, compiler, ran.stderr) if diagnostics else None
    if unreadable is not None:
        return CompileResult(rel_path, SKIPPED, reason=unreadable, compiler=compiler.path, seconds=seconds,
                             command=tuple(command))
    if ran.returncode != 0 and not diagnostics:
        tail = (ran.stderr.strip().splitlines() or ["no output"])[-1]
        diagnostics = [(Location(rel_path, 1), f"the host compiler failed without a diagnostic mpsgen can read: {tail}")]
    diagnostics = sorted(dict.fromkeys(diagnostics), key=lambda d: (d[0].path != rel_path, d[0], d[1]))
    status = FAILED if diagnostics else PASSED
    contexts = tuple(found.get(d, DiagnosticContext()) for d in diagnostics)
    return CompileResult(rel_path, status, tuple(diagnostics), compiler=compiler.path,
                         seconds=seconds, command=tuple(command), contexts=contexts)


@dataclass(frozen=True)
class CompilerRun:
    returncode: int
    stderr: str


# Variables the host compilers read include directories and programs from.
_COMPILER_ENV = ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "OBJCPLUS_INCLUDE_PATH", "GCC_EXEC_PREFIX",
                 "COMPILER_PATH", "SDKROOT")
_WORK = "@mpsgen-work@"


def run_compiler(compiler: Compiler, command: list[str], work: Path) -> CompilerRun:
    """The host compiler's exit status and messages for `command` on the files copied into `work`,
    kept in the user cache (`mpsgen.read.cache.cached_result`) under everything the verdict
    depends on: the compiler (its resolved path, size and modification time), the command line,
    the variables it reads include paths from, and every byte of the copied tree and of mpsgen's
    prelude. The same kernel file with the same headers is compiled once, whichever checkout holds
    it; any changed byte compiles afresh. A timeout or a compiler that cannot start is not kept."""
    identity = compiler.identity() or f"{compiler.path}\0?\0{compiler.family}"
    inputs: list[str | bytes] = [identity, "\0".join(c.replace(str(work), _WORK) for c in command),
                                 prelude_digest()]
    inputs += [f"{name}={os.environ.get(name, '')}" for name in _COMPILER_ENV]
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        inputs += [path.relative_to(work).as_posix(), path.read_bytes()]

    def run() -> dict:
        ran = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
        return {"returncode": ran.returncode, "stderr": ran.stderr.replace(str(work), _WORK)}

    data = cached_result("metal-compile", inputs, run)
    return CompilerRun(data["returncode"], data["stderr"].replace(_WORK, str(work)))


def headers_unreadable(root: Path, rel_path: str, text: str, compiler: Compiler, stderr: str) -> str | None:
    """Why the host compiler cannot check `rel_path` at all, or None: errors located in the
    checkout's headers (not in `rel_path`, not in the prelude) that compiling the file's #include
    lines alone reproduces. The headers are upstream's and build with the Metal compiler; what the
    prelude cannot take is no fault of the kernel file (one such probe compile, only when a header
    has an error)."""
    prelude = str(PRELUDE_DIR)
    in_headers = {(d.location, d.message) for d in parse_diagnostics(stderr)
                  if d.location.path != rel_path and not d.location.path.startswith(prelude)}
    if not in_headers:
        return None
    masked = mask_code(text).split("\n")
    lines = text.split("\n")
    probe = "\n".join(line if i < len(masked) and _INCLUDE_LINE.match(masked[i]) else ""
                      for i, line in enumerate(lines))
    with tempfile.TemporaryDirectory(prefix="mpsgen-metal-") as work:
        tree = copy_tree(root, rel_path, Path(work), main_text=probe)
        try:
            ran = run_compiler(compiler, compiler.syntax_command(tree.main, include_roots(Path(work))), Path(work))
        except (subprocess.TimeoutExpired, OSError):
            return None
    reproduced = [d for d in parse_diagnostics(ran.stderr) if (d.location, d.message) in in_headers]
    if not reproduced:
        return None
    first = reproduced[0]
    return (f"{compiler.path} with mpsgen's Metal prelude cannot take the checkout's headers ({first.location}: "
            f"{first.message}; the file's #include lines alone give it): upstream builds them with the Metal "
            "compiler, so nothing here is checked")


# An #include line in masked code (the masked text keeps directives; a quoted name is blanked).
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b")


def _diagnostics(stderr: str, rel_path: str, text: str) -> dict[tuple[Location, str], DiagnosticContext]:
    """(place, message) of each error -> its context in `rel_path` (see CompileResult)."""
    code_lines = mask_code(text).splitlines()
    out: dict[tuple[Location, str], DiagnosticContext] = {}
    for raw in parse_diagnostics(stderr):
        where, message = attribute(raw, rel_path)
        if where.path == rel_path:
            where = Location(rel_path, _missing_token_line(code_lines, where.line, message))
        context = diagnostic_context(raw, rel_path, where)
        seen = out.get((where, message), DiagnosticContext())
        out[(where, message)] = DiagnosticContext(tuple(sorted(set(seen.lines) | set(context.lines))),
                                                  tuple(sorted(set(seen.functors) | set(context.functors))))
    return out


def diagnostic_context(raw, rel_path: str, where: Location) -> DiagnosticContext:
    """The lines of `rel_path` among a raw diagnostic's place, its attributed place and its notes,
    and the functors its messages name."""

    places = (where, raw.location, *(n for n, _ in raw.notes))
    return DiagnosticContext(tuple(sorted({loc.line for loc in places if loc.path == rel_path})),
                             named_functors([raw.message, *(m for _, m in raw.notes)]))


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
