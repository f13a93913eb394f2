"""`native_functions.yaml`, read by a line scanner that keeps every entry's lines and offsets.

A YAML library's round trip would rewrite thousands of lines of this file, so it is never used to
write; ruamel.yaml only validates the few entries a command edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.cache import cached_index
from mpsgen.read.cpp import match_brace, split_top_level
from mpsgen.textedit import LineIndex

_FUNC = re.compile(r"- func:[ \t]*(?P<schema>(?P<name>[A-Za-z0-9_.]+)\(.*?)[ \t]*\r?\n?$")
_KEY = re.compile(r"  (?P<key>[A-Za-z_][A-Za-z0-9_]*):[ \t]*(?P<value>[^#\r\n]*?)[ \t]*(?:#.*)?\r?\n?$")
_DISPATCH = re.compile(
    r"(?P<indent>    )(?P<keys>[A-Za-z0-9_]+(?:,[ \t]*[A-Za-z0-9_]+)*):[ \t]*(?P<kernel>[A-Za-z0-9_:]+)"
    r"(?P<trail>[ \t]*(?:#.*)?)(?P<eol>\r?\n?)$"
)


@dataclass(frozen=True)
class DispatchLine:
    """One `    CPU, CUDA: atan2_out` line of an entry's dispatch block."""

    keys: tuple[str, ...]
    kernel: str
    location: Location
    start: int
    end: int
    text: str

    @property
    def keys_text(self) -> str:
        return ", ".join(self.keys)


@dataclass(frozen=True)
class YamlEntry:
    """One `- func:` entry: its schema, simple keys and dispatch lines, with line and offsets."""

    schema: str
    name: str
    location: Location
    start: int
    end: int
    keys: tuple[tuple[str, str], ...]
    dispatch: tuple[DispatchLine, ...]
    dispatch_location: Location | None

    @property
    def base(self) -> str:
        return base_name(self.name)

    @property
    def overload(self) -> str:
        return self.name.partition(".")[2]

    def key(self, name: str) -> str | None:
        for key, value in self.keys:
            if key == name:
                return value
        return None

    @property
    def structured(self) -> bool:
        return (self.key("structured") or "").lower() == "true"

    @property
    def structured_delegate(self) -> str | None:
        return self.key("structured_delegate")

    @property
    def tags(self) -> tuple[str, ...]:
        """`tags: reduction` or `tags: [core, pointwise]`, as names."""
        value = (self.key("tags") or "").split("#", 1)[0].strip().strip("[]")
        return tuple(tag.strip() for tag in value.split(",") if tag.strip())

    @cached_property
    def arguments(self) -> tuple[tuple[str, str, bool], ...]:
        """(type, name, kwarg_only) for each argument of the schema."""
        return parse_arguments(self.schema)

    @property
    def tensor_inputs(self) -> tuple[str, ...]:
        """Names of the tensor inputs (out arguments excluded)."""
        return tuple(
            name
            for type_, name, kwarg_only in self.arguments
            if type_.startswith("Tensor") and not type_.startswith("Tensor[]")
            and not (kwarg_only and "!" in type_)
        )

    @property
    def scalar_inputs(self) -> tuple[str, ...]:
        return tuple(name for type_, name, _ in self.arguments if type_.rstrip("?") in ("Scalar", "float", "int"))


def base_name(func_name: str) -> str:
    """`atan2.out` -> `atan2`; `atan2_` -> `atan2`; `__and__` stays."""
    name = func_name.partition(".")[0]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name


def parse_arguments(schema: str) -> tuple[tuple[str, str, bool], ...]:
    open_paren = schema.find("(")
    close = match_brace(schema, open_paren)
    inner = schema[open_paren + 1 : close]
    parts = [part.strip() for part in split_top_level(inner) if part.strip()]
    out, kwarg_only = [], False
    for part in parts:
        if part == "*":
            kwarg_only = True
            continue
        decl = part.split("=", 1)[0].strip()
        type_, _, name = decl.rpartition(" ")
        out.append((type_.strip(), name.strip(), kwarg_only))
    return tuple(out)


_FUNC_LINE = re.compile(r"^- func:[^\n]*", re.MULTILINE)


class NativeFunctions:
    """All entries of one native_functions.yaml text, indexed by operator base name.

    Reading is lazy: the constructor only finds the `- func:` lines (one regex pass, ~10 ms for the
    real file where the full line scan takes ~0.15 s); an op's entries are scanned when asked for,
    from their `- func:` line to the next one, which gives exactly what the full scan gives."""

    def __init__(self, text: str, path: str, cache_root=None):
        """`cache_root`: the checkout whose file this is, unedited, when its index may be kept in
        the user cache (`mpsgen.read.cache`: the `- func:` lines and the full scan, used while the
        text hashes the same)."""
        self.text = text
        self.path = path
        self._cache_root = cache_root
        heads = [(name, offset) for name, offset in cached_index(cache_root, path, text, "yaml-heads",
                                                                  lambda: _func_heads(text, path))]
        self._heads = heads
        by_base: dict[str, list[int]] = {}
        for i, (name, _) in enumerate(heads):
            by_base.setdefault(base_name(name), []).append(i)
        self._by_base_heads = by_base
        self._by_name_head = {name: i for i, (name, _) in enumerate(heads)}
        self._scanned: dict[int, YamlEntry] = {}
        self._lines = None

    def _entry_at(self, i: int) -> YamlEntry:
        if i not in self._scanned:
            start = self._heads[i][1]
            end = self._heads[i + 1][1] if i + 1 < len(self._heads) else len(self.text)
            if self._lines is None:

                self._lines = LineIndex(self.text)
            line = self._lines.line_of(start)
            self._scanned[i] = next(scan_entries(self.text[start:end], self.path, first_line=line, base=start))
        return self._scanned[i]

    @cached_property
    def entries(self) -> tuple[YamlEntry, ...]:
        if self._cache_root is None:
            found = tuple(scan_entries(self.text, self.path))
        else:
            found = _entries_from_json(self.text, self.path, cached_index(
                self._cache_root, self.path, self.text, "yaml-entries",
                lambda: [_entry_to_json(e) for e in scan_entries(self.text, self.path)]))
        if [e.name for e in found] == [name for name, _ in self._heads]:  # one pass serves op_entries too
            self._scanned.update(enumerate(found))
        return found

    def op_entries(self, op: str) -> tuple[YamlEntry, ...]:
        return tuple(self._entry_at(i) for i in self._by_base_heads.get(op, ()))

    def entry(self, name: str) -> YamlEntry | None:
        i = self._by_name_head.get(name)
        return None if i is None else self._entry_at(i)

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(self._by_base_heads)


def _func_heads(text: str, path: str) -> list[tuple[str, int]]:
    """(entry name, offset of its `- func:` line) of every entry, in file order."""
    heads = []
    for match in _FUNC_LINE.finditer(text):
        func = _FUNC.match(match.group(0))
        if not func:
            raise MpsgenError(
                "cannot read this `- func:` line",
                location=Location(path, text.count("\n", 0, match.start()) + 1),
                hint="expected `- func: name.overload(args) -> returns`",
            )
        heads.append((func.group("name"), match.start()))
    return heads


def _entry_to_json(e: YamlEntry) -> list:
    """An entry as JSON data (a dispatch line's text is the file's text between its offsets)."""
    return [e.schema, e.name, e.location.line, e.start, e.end, [list(kv) for kv in e.keys],
            [[list(d.keys), d.kernel, d.location.line, d.start, d.end] for d in e.dispatch],
            e.dispatch_location.line if e.dispatch_location else None]


def _entries_from_json(text: str, path: str, data: list) -> tuple[YamlEntry, ...]:
    return tuple(
        YamlEntry(schema, name, Location(path, line), start, end, tuple((k, v) for k, v in keys),
                  tuple(DispatchLine(tuple(dkeys), kernel, Location(path, dline), dstart, dend, text[dstart:dend])
                        for dkeys, kernel, dline, dstart, dend in dispatch),
                  Location(path, dispatch_line) if dispatch_line is not None else None)
        for schema, name, line, start, end, keys, dispatch, dispatch_line in data)


def scan_entries(text: str, path: str, first_line: int = 1, base: int = 0):
    """`text` is the file's text, or a slice of it starting at line `first_line`, offset `base`."""
    lines = text.splitlines(keepends=True)
    offset = base
    current = None  # dict of the entry being read

    def finish(cur):
        return YamlEntry(
            schema=cur["schema"],
            name=cur["name"],
            location=Location(path, cur["line"]),
            start=cur["start"],
            end=cur["end"],
            keys=tuple(cur["keys"]),
            dispatch=tuple(cur["dispatch"]),
            dispatch_location=cur["dispatch_location"],
        )

    in_dispatch = False
    for number, line in enumerate(lines, start=first_line):
        start, end = offset, offset + len(line)
        offset = end
        if line.startswith("- func:"):
            if current is not None:
                yield finish(current)
            match = _FUNC.match(line)
            if not match:
                raise MpsgenError(
                    "cannot read this `- func:` line",
                    location=Location(path, number),
                    hint="expected `- func: name.overload(args) -> returns`",
                )
            current = {
                "schema": match.group("schema"),
                "name": match.group("name"),
                "line": number,
                "start": start,
                "end": end,
                "keys": [],
                "dispatch": [],
                "dispatch_location": None,
            }
            in_dispatch = False
            continue
        if current is None:
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line.startswith("    ") and in_dispatch:
            match = _DISPATCH.match(line)
            if match:
                keys = tuple(k.strip() for k in match.group("keys").split(","))
                current["dispatch"].append(
                    DispatchLine(keys, match.group("kernel"), Location(path, number), start, end, line)
                )
            current["end"] = end
            continue
        if line.startswith("  ") and not line.startswith("   "):
            match = _KEY.match(line)
            in_dispatch = False
            if match:
                current["keys"].append((match.group("key"), match.group("value")))
                if match.group("key") == "dispatch":
                    in_dispatch = True
                    current["dispatch_location"] = Location(path, number)
            current["end"] = end
            continue
        if line[0] not in " \t":
            # Anything else at column 0 ends the entry (a new top-level item we do not know).
            yield finish(current)
            current = None
            in_dispatch = False
            continue
        current["end"] = end
    if current is not None:
        yield finish(current)


def validate_entry(text: str, entry: YamlEntry) -> None:
    """Parse the entry's own lines with ruamel.yaml and check the scanner read the same dispatch.

    Raises MpsgenError with the line and column of a YAML error, or when the two readings differ
    (the entry is then in a form mpsgen does not edit safely)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    snippet = text[entry.start : entry.end]
    yaml = YAML(typ="safe", pure=True)
    try:
        data = yaml.load(snippet)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = entry.location.line + (mark.line if mark else 0)
        column = (mark.column + 1) if mark else 1
        raise MpsgenError(
            f"malformed YAML at column {column}: {exc.problem or exc.context}",
            location=Location(entry.location.path, line),
            hint="fix the entry so that the file parses",
        ) from None
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], dict):
        raise MpsgenError(
            f"entry {entry.name} is not a single mapping",
            location=entry.location,
            hint="each `- func:` entry must be one YAML mapping",
        )
    dispatch = data[0].get("dispatch") or {}
    if not isinstance(dispatch, dict):
        raise MpsgenError(
            f"entry {entry.name} has a `dispatch:` that is not a mapping",
            location=entry.dispatch_location or entry.location,
            hint="write one `KEYS: kernel` pair per line under `dispatch:`",
        )
    scanned = {line.keys_text: line.kernel for line in entry.dispatch}
    parsed = {", ".join(k.strip() for k in str(key).split(",")): str(value) for key, value in dispatch.items()}
    if scanned != parsed:
        raise MpsgenError(
            f"cannot read the dispatch block of {entry.name} line by line",
            location=entry.dispatch_location or entry.location,
            hint="write one `KEYS: kernel` pair per line, indented four spaces",
        )
