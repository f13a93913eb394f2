"""`.metal` kernel files as written: the literal functors and registration lines, the file's own
`REGISTER_*` macros and its namespace spelling (what the kernel edit places its lines by)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.cpp import mask_code, match_brace

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(REGISTER_\w+)\(", re.M)


_FUNCTOR = re.compile(r"\bstruct\s+(\w+)_functor\b")


_REGISTER_CALL = re.compile(r"^(REGISTER_\w+)\s*\((.*)\)\s*;?[ \t]*\r?$", re.M)


_USING_NAMESPACE = re.compile(r"^using[ \t]+namespace[ \t]+(?:::)?((?:c10::)?metal)[ \t]*;", re.M)


@dataclass(frozen=True)
class NamespacePrefixes:
    """How a kernel file spells Metal's and c10's names: empty under its file-level
    `using namespace metal;` / `using namespace c10::metal;`, qualified otherwise."""

    metal: str = "::metal::"
    c10: str = "c10::metal::"

    def template_vars(self) -> dict[str, str]:
        """The variables every functor template gets: `metal_ns` and `c10_ns`."""
        return {"metal_ns": self.metal, "c10_ns": self.c10}


def namespace_prefixes(text: str) -> NamespacePrefixes:
    """The prefixes new code in this .metal file takes, read from its `using namespace` lines at
    file level (column 0, outside comments)."""
    used = set(_USING_NAMESPACE.findall(mask_code(text)))
    return NamespacePrefixes("" if "metal" in used else "::metal::", "" if "c10::metal" in used else "c10::metal::")


@dataclass(frozen=True)
class Registration:
    macro: str
    args: tuple[str, ...]
    group: str = field(default="", compare=False)  # the dtype group it registers the op for

    def render(self) -> str:
        return f"{self.macro}({', '.join(self.args)});"

    @property
    def key(self) -> str:
        return f"{self.macro}({','.join(self.args)})"


@dataclass(frozen=True)
class KernelFile:
    """What one .metal file holds, read from its masked text."""

    path: str
    functors: dict[str, tuple[int, int]]  # name -> span of its struct, to the end of its closing line
    registrations: tuple[tuple[Registration, int], ...]  # with the offset just past the line
    own_macros: frozenset[str]
    broken: dict[str, MpsgenError] = field(default_factory=dict)  # functor -> why: its braces do not balance

    def has_registration(self, reg: Registration) -> bool:
        return any(existing.key == reg.key for existing, _ in self.registrations)


def read_kernel_file(text: str, path: str, masked: str | None = None, *, strict: bool = True) -> KernelFile:
    """The literal functors and registration lines of a .metal file. A functor whose braces do not
    balance is an error (`strict`, for editing), else it is left out and kept in `broken`: a
    check of another op is not about it."""
    masked = mask_code(text) if masked is None else masked
    functors = {}
    broken = {}
    for match in _FUNCTOR.finditer(masked):
        brace = masked.find("{", match.end())
        semicolon = masked.find(";", match.end())
        if brace < 0 or (0 <= semicolon < brace):
            continue  # a declaration, not a definition
        close = match_brace(masked, brace)
        if close < 0:
            error = MpsgenError(
                f"unbalanced braces in struct {match.group(1)}_functor",
                location=Location(path, masked.count("\n", 0, match.start()) + 1),
                hint="fix the kernel file so that it compiles",
            )
            if strict:
                raise error
            broken[match.group(1)] = error
            continue
        end = masked.find("\n", close)
        functors[match.group(1)] = (match.start(), len(masked) if end < 0 else end + 1)
    registrations = []
    for match in _REGISTER_CALL.finditer(masked):
        if _continued(masked, match.start()):
            continue
        args = tuple(a.strip() for a in match.group(2).split(","))
        end = masked.find("\n", match.start())
        registrations.append((Registration(match.group(1), args), len(masked) if end < 0 else end + 1))
    own = frozenset(_DEFINE.findall(masked))
    return KernelFile(path, functors, tuple(registrations), own, broken)


def kernel_file_to_json(file: KernelFile) -> dict:
    """A KernelFile as JSON data (kept in the user cache by `mpsgen.facts.views.Views.kernel`)."""
    return {"functors": [[name, start, end] for name, (start, end) in file.functors.items()],
            "registrations": [[reg.macro, list(reg.args), end] for reg, end in file.registrations],
            "own_macros": sorted(file.own_macros),
            "broken": [[name, exc.message, exc.location.line if exc.location else 0, exc.hint]
                       for name, exc in file.broken.items()]}


def kernel_file_from_json(data: dict, path: str) -> KernelFile:
    return KernelFile(
        path,
        {name: (start, end) for name, start, end in data["functors"]},
        tuple((Registration(macro, tuple(args)), end) for macro, args, end in data["registrations"]),
        frozenset(data["own_macros"]),
        {name: MpsgenError(message, location=Location(path, line) if line else None, hint=hint)
         for name, message, line, hint in data["broken"]},
    )


def _continued(masked: str, offset: int) -> bool:
    """True when the line at `offset` continues a `#define` (the previous line ends in a backslash)."""
    if offset == 0:
        return False
    previous = masked[: offset - 1].rstrip("\r")
    return previous.endswith("\\")
