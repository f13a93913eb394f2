"""Which functor each line of a kernel file belongs to: the attribution of metal-compile diagnostics.

One small interface, `code_owners(text, rel) -> CodeOwners`: for each functor, the line ranges of
its `struct <name>_functor { ... }`, and of each macro call that registers it (directly or through
the file's own macros) or defines it (`DEFINE_UNARY_FLOATING_FUNCTOR(erf)`). A diagnostic of the
host compiler belongs to the functors whose code holds its line or a line of its instantiation/macro
context (`diagnostic_owners`): a struct first (an error in a helper instantiated from sin's body is
sin's), else the registering calls, narrowed to the functors the compiler's messages name when one
call registers many. The reading here is textual; a preprocessor-based reader of the kernel file
can replace `code_owners` without changing its callers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mpsgen.read.cpp import mask_code, match_brace, split_top_level

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CodeOwners:
    """functor name (without `_functor`) -> line ranges (first, last; 1-based) of its own code."""

    structs: dict[str, Ranges]  # its struct definition
    calls: dict[str, Ranges]  # the top-level macro calls that register or define it

    def ranges(self, name: str) -> Ranges:
        return self.structs.get(name, ()) + self.calls.get(name, ())

    @property
    def functors(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.structs) | set(self.calls)))


_FUNCTOR = re.compile(r"\bstruct\s+(\w+)_functor\b")
_MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
# A macro call written at the start of a line, possibly continued over several lines.
_CALL = re.compile(r"^[ \t]*(\w+)\s*\(", re.M)
_INNER_CALL = re.compile(r"\b(\w+)\s*\(([^()]*)\)")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


def _line(masked: str, offset: int) -> int:
    return masked.count("\n", 0, offset) + 1


def _struct_spans(masked: str) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for m in _FUNCTOR.finditer(masked):
        brace = masked.find("{", m.end())
        semicolon = masked.find(";", m.end())
        if brace < 0 or (0 <= semicolon < brace):
            continue  # a declaration, not a definition
        close = match_brace(masked, brace)
        if close < 0:
            continue
        spans.setdefault(m.group(1), []).append((_line(masked, m.start()), _line(masked, close)))
    return spans


def code_owners(text: str, rel: str = "", masked: str | None = None) -> CodeOwners:
    """The own code of each functor of the kernel file `text`: its struct, and every top-level
    macro call that registers or defines it."""
    masked = mask_code(text) if masked is None else masked
    owned: dict[str, list[tuple[int, int]]] = {}
    macros: dict[str, tuple[list[str], str]] = {}
    for m in _MACRO_DEF.finditer(masked):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        macros[m.group(1)] = (params, m.group(3).replace("\\\r\n", "\n").replace("\\\n", "\n"))

    def names(macro: str, args: list[str], depth: int) -> set[str]:
        """The functors a call registers or defines: the first argument of each REGISTER_* call it
        expands to, or its first argument when it defines a `..._functor` struct."""
        if depth > 8:
            return set()
        if macro in macros:
            params, body = macros[macro]
            mapping = dict(zip(params, args))
            found: set[str] = set()
            if "_functor" in body and args and _IDENT.match(args[0]):
                found.add(args[0])
            for inner in _INNER_CALL.finditer(body):
                inner_args = [mapping.get(a.strip(), a.strip()) for a in inner.group(2).split(",")]
                found |= names(inner.group(1), inner_args, depth + 1)
            return found
        if (macro.startswith("REGISTER_") or macro.startswith("DEFINE_")) and args and _IDENT.match(args[0]):
            return {args[0]}
        return set()

    # Inside the file's own macros, a registration that names its functor outright
    # (`REGISTER_UNARY_OP(thrice, DTYPE, DTYPE)` in a `#define` taking DTYPE) is that functor's.
    for m in _MACRO_DEF.finditer(masked):
        params = {p.strip() for p in m.group(2).split(",")}
        body_start = m.start(3)
        for inner in _INNER_CALL.finditer(masked, body_start, m.end(3)):
            first = inner.group(2).split(",")[0].strip()
            if inner.group(1).startswith(("REGISTER_", "DEFINE_")) and _IDENT.match(first) and first not in params:
                line = _line(masked, inner.start())
                owned.setdefault(first, []).append((line, line))

    for m in _CALL.finditer(masked):
        start = m.start()
        if start > 0 and masked[: start - 1].rstrip("\r").endswith("\\"):
            continue  # inside a #define body
        macro = m.group(1)
        if macro not in macros and not macro.startswith(("REGISTER_", "DEFINE_")):
            continue
        close = match_brace(masked, m.end() - 1)
        if close < 0:
            continue
        first, last = _line(masked, start), _line(masked, close)
        for name in names(macro, [arg.strip() for arg in split_top_level(masked[m.end(): close], "([{", ")]}")], 0):
            owned.setdefault(name, []).append((first, last))
    structs = {name: tuple(sorted(set(spans))) for name, spans in _struct_spans(masked).items()}
    return CodeOwners(structs, {name: tuple(sorted(set(ranges))) for name, ranges in owned.items()})


def in_ranges(line: int, ranges: Ranges) -> bool:
    return any(lo <= line <= hi for lo, hi in ranges)


_NAMED_FUNCTOR = re.compile(r"\b(\w+)_functor\b")


def named_functors(messages: Iterable[str]) -> tuple[str, ...]:
    """The functors the compiler's messages name (`... [with F = sin_functor]`)."""
    return tuple(sorted({m for text in messages for m in _NAMED_FUNCTOR.findall(text)}))


def diagnostic_owners(lines: Iterable[int], owners: CodeOwners, named: Iterable[str] = ()) -> tuple[str, ...]:
    """The functors a diagnostic belongs to, sorted: those whose struct holds one of `lines` (its
    line in the checked file and the lines of its instantiation and macro context there); else those
    registered or defined by a call on one of them, only those of them in `named` (the functors
    the diagnostic's messages name) when there are any."""
    lines = tuple(lines)
    in_struct = {name for name, ranges in owners.structs.items() if any(in_ranges(n, ranges) for n in lines)}
    if in_struct:
        return tuple(sorted(in_struct))
    per_line = [{name for name, ranges in owners.calls.items() if in_ranges(n, ranges)} for n in lines]
    per_line = [names for names in per_line if names]
    if not per_line:
        return ()
    # A call that registers many functors (on the file's line) and the registration of one of them
    # (in the body of the file's macro) are both in the context: the one they share is meant.
    in_calls = set.intersection(*per_line) or set.union(*per_line)
    return tuple(sorted((in_calls & set(named)) or in_calls))
