"""The host C++ compiler: finding it, the command line, and reading its diagnostics."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpsgen.model import Location
from mpsgen.read.cache import cache_dir, cache_enabled, executable_identity

PRELUDE_DIR = Path(__file__).resolve().parent / "include"
PRELUDE = PRELUDE_DIR / "mpsgen_metal.h"

# g++ first: the prelude is written for and tested with g++ 12; clang++ also works.
_CANDIDATES = ("g++", "clang++", "c++")
ENV_VAR = "MPSGEN_CXX"

# Flags shared by every use: C++17, the prelude before the checkout, Metal attributes and pragmas
# (which the host compiler does not know) quiet, no colours, no caret lines.
_COMMON_FLAGS = ("-std=c++17", "-x", "c++", "-w", "-fno-diagnostics-color", "-fdiagnostics-show-option")


# Metal converts float to bfloat implicitly and makes `c ? a_bfloat : a_float` float; the prelude's
# bfloat (a class) cannot have both: with the conversion implicit the host compiler calls such a
# choice ambiguous. A file refused for that alone is compiled again with the conversion explicit.
EXPLICIT_BFLOAT = "-DMPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT"
# each type as g++ names it: `‘bfloat’`, `‘const float’`, or a typedef `‘scalar_t’ {aka ‘bfloat’}`
_CHOICE_TYPE = r"[‘'`](?:const )?(?:(?:bfloat|float)[’']|[^’']*[’'] \{aka [‘'`](?:const )?(?:bfloat|float)[’']\})"
_MIXED_CHOICE = re.compile(rf"operands to [‘'`]\?:[’'] have different types {_CHOICE_TYPE} and {_CHOICE_TYPE}")


def mixed_bfloat_choice(stderr: str) -> bool:
    """Whether the host compiler refused a `c ? bfloat : float` (see EXPLICIT_BFLOAT)."""
    return any("bfloat" in m.group(0) for m in _MIXED_CHOICE.finditer(stderr))


@dataclass(frozen=True)
class Compiler:
    path: str
    family: str  # "gcc" or "clang"

    def syntax_command(self, source: Path, include_dirs: tuple[Path, ...], explicit_bfloat: bool = False) -> list[str]:
        if explicit_bfloat:  # the precompiled prelude is the implicit one
            return [self.path, *self.base_flags(include_dirs), EXPLICIT_BFLOAT, *self.prelude_first(), "-fsyntax-only",
                    str(source)]
        return [self.path, *self.base_flags(include_dirs), *self.prelude_first(precompiled=True), "-fsyntax-only",
                str(source)]

    def build_command(self, source: Path, include_dirs: tuple[Path, ...], output: Path,
                      explicit_bfloat: bool = False) -> list[str]:
        # -O0: the program runs a few thousand functor calls; optimising costs more (0.8 s vs 0.3 s
        # for BinaryKernel.metal) than it saves, and float results are the same (SSE, no contraction).
        # -fwrapv: signed integer overflow wraps in Metal; on the host it is otherwise undefined.
        return [self.path, *self.base_flags(include_dirs), "-O0", "-fwrapv",
                *((EXPLICIT_BFLOAT,) if explicit_bfloat else ()), str(source), "-o", str(output)]

    def prelude_first(self, precompiled: bool = False) -> list[str]:
        """The prelude read before the source's first line, as the Metal compiler has its types and
        `__METAL__` before any line: a header that tests `#ifdef __METAL__` before including
        <metal_stdlib> (2.15's c10/metal/common.h, included first through a kernels/*.h) takes its
        Metal branch. (A host driver that must come first includes <metal_stdlib> itself instead.)
        `precompiled`: through `precompiled_prelude` where there is one (g++ reads the prelude in
        ~0.02 s instead of ~0.17 s, most of a kernel file's check)."""
        if precompiled:
            header = precompiled_prelude(self)
            if header is not None:
                return ["-include", str(header)]
        return ["-include", str(PRELUDE)]

    def identity(self) -> str | None:
        """What names this compiler's build: its resolved path, size and modification time (a
        reinstalled compiler is another), and its family; None when the path names no file."""
        identity = executable_identity(self.path)
        return None if identity is None else f"{identity}\0{self.family}"

    def base_flags(self, include_dirs: tuple[Path, ...]) -> list[str]:
        flags = list(_COMMON_FLAGS)
        if self.family == "gcc":
            flags.append("-fno-diagnostics-show-caret")
        else:
            flags.append("-fno-caret-diagnostics")
        flags.append(f"-I{PRELUDE_DIR}")
        flags.extend(f"-I{d}" for d in include_dirs)
        return flags


@functools.lru_cache(maxsize=1)
def prelude_digest() -> str:
    """SHA-256 of every file of the prelude (names and bytes): package data, read once a process."""
    digest = hashlib.sha256()
    for path in sorted(p for p in PRELUDE_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(PRELUDE_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


PCH_TIMEOUT = 120.0
_PCH_HEADER = "mpsgen_prelude.h"
_PRECOMPILED: dict[tuple[Compiler, str], Path | None] = {}


def precompiled_prelude(compiler: Compiler) -> Path | None:
    """g++ only: a header that includes the prelude (by its path, so diagnostics name the prelude's
    own files), with its precompiled form (`.gch`) beside it, in the user cache
    (`<cache dir>/pch/<key>/`, the key hashing the compiler's resolved path, size and modification
    time, the flags and every file of the prelude); built once (~0.5 s), atomically. None, and the
    plain prelude is read, for clang, with the cache off or unwritable, or when the build fails.
    g++ itself ignores a precompiled header it cannot use and reads the header instead."""
    if compiler.family != "gcc" or not cache_enabled():
        return None
    try:
        root = cache_dir() / "pch"
    except (OSError, RuntimeError):
        return None
    memo = (compiler, str(root))
    known = _PRECOMPILED.get(memo)
    if memo not in _PRECOMPILED or (known is not None and not known.is_file()):  # (the cache was emptied)
        _PRECOMPILED[memo] = _build_precompiled(compiler, root)
    return _PRECOMPILED[memo]


def _build_precompiled(compiler: Compiler, root: Path) -> Path | None:
    # the same flags as a check, the language a header's (g++ keeps the first -x it is given)
    base = compiler.base_flags(())
    at = base.index("-x")
    flags = [*base[:at], "-x", "c++-header", *base[at + 2 :]]
    identity = compiler.identity()
    if identity is None:
        return None
    key = "\0".join((identity, *flags, prelude_digest()))
    folder = root / hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    header = folder / _PCH_HEADER
    if header.is_file() and (folder / f"{_PCH_HEADER}.gch").is_file():
        return header
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    except OSError:
        return None
    try:
        (work / _PCH_HEADER).write_text(f'#include "{PRELUDE}"\n', encoding="utf-8")
        ran = subprocess.run([compiler.path, *flags, str(work / _PCH_HEADER), "-o", str(work / f"{_PCH_HEADER}.gch")],
                             capture_output=True, text=True, timeout=PCH_TIMEOUT)
        if ran.returncode != 0:
            return None
        try:
            os.rename(work, folder)
        except OSError:  # another process put it there first
            if not header.is_file():
                return None
        return header
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def find_compiler() -> tuple[Compiler | None, str]:
    """The host compiler to use and, when there is none, why: `$MPSGEN_CXX` if set, else the first
    of g++, clang++, c++ on PATH."""
    wanted = os.environ.get(ENV_VAR)
    names = (wanted,) if wanted else _CANDIDATES
    for name in names:
        path = shutil.which(name)
        if path:
            family = "clang" if "clang" in Path(path).name or "clang" in Path(os.path.realpath(path)).name else "gcc"
            return Compiler(path, family), ""
    if wanted:
        return None, f"${ENV_VAR} names {wanted!r}, which is not an executable on PATH"
    return None, "no C++ compiler found (looked for g++, clang++, c++ on PATH; set $MPSGEN_CXX to choose one)"


# path:line[:col]: severity: message   (gcc and clang)
_DIAG = re.compile(r"^(?P<path>[^:\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$")
# gcc's instantiation context, printed before the error it explains: "path:line:col:   required from here"
_CONTEXT = re.compile(r"^(?P<path>[^:\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s+(?P<msg>required from.*|In instantiation.*)$")
_MACRO_NOTE = re.compile(r"in expansion of macro|expanded from macro|requested here|required from")


@dataclass(frozen=True)
class RawDiagnostic:
    location: Location
    message: str
    notes: tuple[tuple[Location, str], ...]  # macro expansion and instantiation notes/context


def parse_diagnostics(output: str) -> list[RawDiagnostic]:
    """Errors in compiler output, each with the notes and instantiation context that explain it."""
    found: list[RawDiagnostic] = []
    pending: list[tuple[Location, str]] = []
    current: tuple[Location, str, list[tuple[Location, str]]] | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            found.append(RawDiagnostic(current[0], current[1], tuple(current[2])))
            current = None

    for line in output.splitlines():
        m = _DIAG.match(line)
        if m:
            where = Location(m.group("path"), int(m.group("line")))
            severity, message = m.group("sev"), m.group("msg").strip()
            if severity in ("error", "fatal error"):
                close()
                current = (where, message, list(pending))
                pending = []
            elif severity == "note" and current is not None:
                current[2].append((where, message))
            continue
        c = _CONTEXT.match(line)
        if c:
            pending.append((Location(c.group("path"), int(c.group("line"))), c.group("msg").strip()))
    close()
    return found


def attribute(diag: RawDiagnostic, checked: str) -> tuple[Location, str]:
    """Where a person should look for `diag` when checking the file `checked`: the error's own place
    when it is in that file; else the place in that file whose macro call or template instantiation
    led to it (the error's place is then named in the message); else the error's own place."""
    if diag.location.path == checked:
        return diag.location, diag.message
    in_checked = [loc for loc, msg in diag.notes if loc.path == checked and _MACRO_NOTE.search(msg)]
    if in_checked:
        # Macro expansions and instantiations are listed innermost first (gcc prints the instantiation
        # context before the error, ending with "required from here"): the last place in the checked
        # file is the call the author wrote there, e.g. REGISTER_FLOAT_BINARY_OP(hypot).
        where = in_checked[-1]
        return where, f"{diag.message} (at {_display(diag.location)})"
    return Location(_display_path(diag.location.path), diag.location.line), diag.message


PRELUDE_LABEL = "<mpsgen metal prelude>"


def _display_path(path: str) -> str:
    if path.startswith(str(PRELUDE_DIR)):
        return f"{PRELUDE_LABEL}/{Path(path).name}"
    return path


def _display(location: Location) -> str:
    return f"{_display_path(location.path)}:{location.line}"
