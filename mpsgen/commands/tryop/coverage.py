"""Branch coverage of the functor under try's samples, on the host build: the try program compiled
with g++'s `--coverage`, run, and read back with `gcov --json-format` (gcc 9+). The shader source's
`#line` directives attribute every line to its real file, so the functor's branches are those gcov
counts on the lines of its struct in the kernel file and of the functions of that file it calls
(`branchvalues.functor_spans`: a derived body's helpers). A template
functor is instantiated once per dtype: a branch counts as taken when any instantiation took it
(try runs every dtype on the same values, rounded). Exception edges are not branches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GCOV_TIMEOUT = 60.0
FLAGS = ("--coverage", "-fprofile-update=single")


@dataclass(frozen=True)
class Untaken:
    line: int
    code: str  # the line's text, stripped
    branch: int  # gcov's index of the branch on its line, from 0
    of: int  # the branches on that line


@dataclass(frozen=True)
class Coverage:
    path: str  # the file holding the functor
    spans: tuple[tuple[int, int], ...]  # its lines (first, last): the struct, then the helpers it calls
    taken: int
    total: int
    untaken: tuple[Untaken, ...]

    @property
    def summary(self) -> str:
        return f"{self.taken} of {self.total} branches taken"

    @property
    def where(self) -> str:
        """`path:98-155` (with its helpers: `path:81-89, 66-72`)."""
        return f"{self.path}:" + ", ".join(f"{a}-{b}" for a, b in self.spans)


@dataclass(frozen=True)
class Target:
    """What to measure: the functor's lines in its file."""

    path: str
    spans: tuple[tuple[int, int], ...]
    text: str  # the file's text (to quote an untaken branch's line)


def gcov_for(compiler_path: str, family: str) -> tuple[str | None, str]:
    """The gcov matching the compiler (`g++-12` -> `gcov-12`), or None and why there is none."""
    if family != "gcc":
        return None, "branch coverage needs g++ and gcov (the compiler is clang)"
    name = Path(compiler_path).name
    suffix = name[len("g++"):] if name.startswith("g++") else ""
    for candidate in (f"gcov{suffix}", "gcov"):
        found = shutil.which(candidate, path=os.pathsep.join([str(Path(compiler_path).parent), os.environ.get("PATH", "")]))
        if found:
            return found, ""
    return None, "gcov is not on PATH (it comes with g++)"


def read_coverage(work: Path, gcov: str, target: Target) -> tuple[Coverage | None, str]:
    """Run gcov on the .gcda files the try program wrote in `work`; the functor's branches."""
    data = sorted(work.glob("*.gcda"))
    if not data:
        return None, "the try program wrote no coverage data"
    try:
        ran = subprocess.run([gcov, "-b", "--json-format", "--stdout", *(str(p) for p in data)], cwd=work,
                             capture_output=True, text=True, timeout=GCOV_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"gcov did not run: {exc}"
    if ran.returncode != 0:
        return None, f"gcov failed: {(ran.stderr.strip().splitlines() or ['no output'])[-1]}"
    return branches(ran.stdout, target), ""


def branches(gcov_json: str, target: Target) -> Coverage:
    """The functor's branches from gcov's JSON output (one document per line of output)."""
    counts: dict[tuple[int, int], int] = {}
    per_line: dict[int, int] = {}
    for doc in gcov_json.splitlines():
        doc = doc.strip()
        if not doc.startswith("{"):
            continue
        for f in json.loads(doc).get("files", ()):
            if f.get("file") != target.path:
                continue
            for line in f.get("lines", ()):
                number = line.get("line_number", 0)
                if not any(a <= number <= b for a, b in target.spans):
                    continue
                kept = [b for b in line.get("branches", ()) if not b.get("throw")]
                per_line[number] = max(per_line.get(number, 0), len(kept))
                for k, b in enumerate(kept):
                    counts[(number, k)] = counts.get((number, k), 0) + int(b.get("count", 0))
    lines = target.text.split("\n")
    untaken = tuple(Untaken(n, lines[n - 1].strip() if n <= len(lines) else "", k, per_line[n])
                    for (n, k), c in sorted(counts.items()) if c == 0)
    return Coverage(target.path, target.spans, len(counts) - len(untaken), len(counts), untaken)


def untaken_lines(coverage: Coverage) -> list[str]:
    """One line per source line with an untaken branch: `path:line: `code` (branch k of n never taken)`."""
    by_line: dict[int, list[Untaken]] = {}
    for u in coverage.untaken:
        by_line.setdefault(u.line, []).append(u)
    out = []
    for n, found in by_line.items():
        which = ", ".join(str(u.branch) for u in found)
        out.append(f"{coverage.path}:{n}: `{found[0].code}`: branch {which} of {found[0].of} never taken")
    return out


def coverage_to_json(coverage: Coverage | None, why: str) -> dict:
    if coverage is None:
        return {"measured": False, "why": why}
    return {"measured": True, "path": coverage.path, "lines": [list(span) for span in coverage.spans],
            "taken": coverage.taken, "total": coverage.total,
            "untaken": [{"line": u.line, "code": u.code, "branch": u.branch, "branches_on_line": u.of}
                        for u in coverage.untaken]}
