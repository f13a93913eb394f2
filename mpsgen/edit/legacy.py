"""Migrate: delete an op's MPSGraph implementation and what the deletion leaves unused.

A pure library on strings. It deletes whole definitions located by `cpp.find_definitions`
(`TORCH_IMPL_FUNC` bodies, plain kernel functions, one-line generator-macro instantiations), then,
until nothing changes, the `static` / `namespace mps` helpers and `#define` macros that only the
deleted code used, and finally the op's `#include <ATen/ops/<op>_native.h>` where nothing left in
the file needs it. Helpers another op still uses are kept and reported. Bytes outside the deleted
spans never change.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, replace

from mpsgen.edit.linemap import EditMap
from mpsgen.errors import MpsgenError
from mpsgen.facts.views import HELPER_KINDS
from mpsgen.model import Change, FileChange, Location, Note, counted
from mpsgen.read.cpp import Definition, code_only, find_definitions, find_directives, identifiers, mask_code
from mpsgen.textedit import LineIndex, replace_spans

GRAPH_SITE = "LookUpOrCreateCachedGraph"
_FILE_LOCAL_SUFFIXES = (".mm", ".m", ".cpp", ".cc", ".metal")
# definitions whose own text names them (not references): bodies, prototypes, `#define`s
_SAME_NAME_KINDS = ("function", "impl-func", "macro", "declaration")


@dataclass(frozen=True)
class Removal:
    """One deleted item. `kind` is `impl-func`, `function`, `macro-instance`, `static-helper`,
    `macro` or `include`; `line_count` is the number of lines deleted with it; `graph_sites` the
    `LookUpOrCreateCachedGraph` calls it held."""

    kind: str
    name: str
    location: Location
    line_count: int
    graph_sites: int = 0

    def __str__(self) -> str:
        return f"{self.location}: remove {self.kind} {self.name} (-{counted(self.line_count, 'line')})"


@dataclass(frozen=True)
class LegacyResult:
    """New texts of the changed files only, what was removed, and what was kept on purpose (why)."""

    texts: dict[str, str]
    removals: tuple[Removal, ...]
    kept: tuple[Note, ...]

    @property
    def lines_removed(self) -> int:
        return sum(r.line_count for r in self.removals)

    @property
    def graph_sites(self) -> int:
        return sum(r.graph_sites for r in self.removals)


class _Source:
    """One file: its text, masked views, and (on demand) its definitions."""

    def __init__(self, path: str, text: str, read_definitions=None, read_names=None):
        self.path = path
        self.text = text
        self._read_definitions = read_definitions  # path -> the definitions of `text` (a Views')
        self._read_names = read_names  # path -> its function and macro names (a Views', kept apart)
        self._defs: list[Definition] | MpsgenError | None = None
        self.removed: list[tuple[Definition, str]] = []  # (definition, removal kind)

    # a checkout has ~100 host files and a plan asks each about a few names: the masked code and
    # identifier counts of a file are read only once a name occurs in its text at all
    @functools.cached_property
    def masked(self) -> str:
        return mask_code(self.text)

    @functools.cached_property
    def ids(self) -> Counter[str]:
        return identifiers(self.masked)

    @functools.cached_property
    def helper_names(self) -> frozenset[str]:
        """The names of the functions and macros this file defines (raises MpsgenError for a file
        that cannot be read)."""
        if self._read_names is None or self._defs is not None:
            return frozenset(d.name for d in self.definitions if d.kind in HELPER_KINDS)
        try:
            return frozenset(self._read_names(self.path))
        except MpsgenError as exc:
            self._defs = exc  # (read once: `definitions` raises it from now on)
            raise

    def mentions(self, name: str) -> bool:
        """`name` occurs in the code (not only in comments or strings)."""
        return name in self.text and name in self.ids

    @property
    def definitions(self) -> list[Definition]:
        """Raises MpsgenError for a file that cannot be read, each time (read once)."""
        if isinstance(self._defs, MpsgenError):
            raise self._defs
        if self._defs is None:
            try:
                if self._read_definitions is not None:
                    self._defs = self._read_definitions(self.path)
                else:
                    self._defs = find_definitions(self.text, self.path)
            except MpsgenError as exc:
                self._defs = exc
                raise
        return self._defs

    @property
    def scannable(self) -> bool:
        try:
            self.definitions
        except MpsgenError:
            return False
        return True

    @property
    def file_local(self) -> bool:
        return self.path.endswith(_FILE_LOCAL_SUFFIXES)

    def is_removed(self, d: Definition) -> bool:
        return any(r is d for r, _ in self.removed)

    def removed_ids(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for d, _ in self.removed:
            total.update(d.identifiers)
        return total

    def remaining_count(self, name: str, excluding: list[Definition]) -> int:
        """Code references to `name` left in this file, not counting the given definitions."""
        if not self.mentions(name):
            return 0
        count = self.ids[name] - sum(d.identifiers[name] for d, _ in self.removed)
        return count - sum(d.identifiers[name] for d in excluding if not self.is_removed(d))

    def remaining_text(self) -> str:
        bodies = [(d.start, d.end, d.args[0]) for d, kind in self.removed if kind == "body"]
        spans = _tidy(self.text, _merged_spans([(d.start, d.end) for d, kind in self.removed if kind != "body"]))
        return replace_spans(self.text, sorted([(s, e, "") for s, e in spans] + bodies))


def _body_item(src: _Source, d: Definition, statements: str) -> Definition:
    """The inside of `d`'s body braces as an item replaced by `statements` (kind "body": its
    `args[0]` is the new text); its identifiers are those the old body had beyond the new one's,
    so that what only the old body used is found unused."""
    masked = src.masked
    open_at = masked.index("{", masked.index(")", d.code_start))
    while True:  # the body's brace: after the parameter list (`TORCH_IMPL_FUNC(x)(...) {`)
        before = masked[d.code_start:open_at]
        if before.count("(") == before.count(")"):
            break
        open_at = masked.index("{", open_at + 1)
    close_at = d.code_end - 1
    while masked[close_at] != "}":
        close_at -= 1
    old = identifiers(masked[open_at + 1 : close_at])
    new = identifiers(mask_code(statements))
    return replace(d, kind="body", start=open_at + 1, end=close_at, code_start=open_at + 1, code_end=close_at,
                   identifiers=old - new, args=("\n" + statements,))


def _merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def _tidy(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Deleting neighbouring items can leave two blank lines (or a blank line right after an
    opening brace) where there was one: take the extra blank line along."""
    out = []
    for start, end in spans:
        line_above = text[text.rfind("\n", 0, max(start - 1, 0)) + 1 : start]
        after = text.find("\n", end)
        line_below = text[end : len(text) if after < 0 else after + 1]
        above_open = not line_above.strip() or mask_code(line_above).rstrip().endswith("{")
        if start > 0 and above_open and line_below and not line_below.strip() and end < len(text):
            end += len(line_below)
        out.append((start, end))
    return out


def _lines_in(text: str, start: int, end: int) -> int:
    return text.count("\n", start, end) + (1 if end > start and not text[start:end].endswith("\n") else 0)


def plan_legacy_removal(
    files: dict[str, str], kernels: set[str], op: str, header_symbols: set[str], read_definitions=None,
    read_names=None, rewrite: dict[str, str] | None = None,
) -> LegacyResult:
    """Plan the deletion of `kernels` (the legacy `MPS:` kernel names of `op`) from `files`.

    `files` maps checkout-relative paths of the MPS sources to their text; `header_symbols` are all
    kernel names the op's yaml entries mention (they decide whether the op's `_native.h` include is
    still needed). Call again on the returned texts for the next op. `read_definitions(path)`: the
    definitions of `files[path]` as a Views keeps them (`Views.definitions`), else they are found here;
    `read_names(path)`, the names of the functions and macros they define (`Views.helper_names`),
    asked of every file first. `rewrite`: kernels that stay, each with the statements its body
    becomes (a per-device op's MPS function made the stub call); what only the old body used goes.
    """
    rewrite = rewrite or {}
    sources = {path: _Source(path, text, read_definitions, read_names) for path, text in sorted(files.items())}
    removed_names: set[str] = set()

    def remove(src: _Source, d: Definition, kind: str) -> None:
        if not src.is_removed(d):
            src.removed.append((d, kind))

    # 1. the kernels themselves
    for kernel in sorted(kernels):
        hits = [
            (src, d)
            for src in sources.values()
            if src.mentions(kernel)
            for d in src.definitions
            if (d.kind in ("impl-func", "function") and d.name == kernel)
            or (d.kind == "macro-instance" and kernel in d.args)
        ]
        if not hits:
            raise MpsgenError(
                f"legacy MPS kernel {kernel} of {op} is not defined in any of {len(sources)} files: "
                + ", ".join(sources),
                hint="check the `MPS:` line in native_functions.yaml, or pass the file defining it with --legacy-file PATH",
            )
        if kernel in rewrite:
            for src, d in hits:
                remove(src, _body_item(src, d, rewrite[kernel]), "body")
            continue
        for src, d in hits:
            others = [a for a in d.args if "mps" in a.split("_") and a not in kernels]
            if d.kind == "macro-instance" and others:
                raise MpsgenError(
                    f"{d.name}(...) defines {kernel} together with {', '.join(others)}",
                    location=d.location,
                    hint="migrate those ops in the same run, or split the instantiation by hand",
                )
            remove(src, d, d.kind)
        removed_names.add(kernel)
        _remove_prototypes(sources, kernel, remove)

    # 2. what only the deleted code used, until nothing changes
    decided: set[str] = set()
    still_used: set[str] = set()
    while True:
        triggered: Counter[str] = Counter()
        for src in sources.values():
            triggered.update(src.removed_ids())
        pending = sorted(name for name in triggered if name not in decided and name not in removed_names)
        progress = False
        for name in pending:
            outcome = _try_remove_unused(sources, name, remove)
            if outcome is None:
                decided.add(name)  # not a helper of ours (an API, a type, a local name)
            elif outcome:
                removed_names.add(name)
                still_used.discard(name)
                progress = True
            else:
                still_used.add(name)
        if not progress:
            break
    kept_notes = _kept_notes(sources, still_used)

    for src in sources.values():
        if src.removed:
            _remove_emptied_namespaces(src)

    # 3. the op's per-operator header include
    for src in sources.values():
        if src.removed:
            _plan_include_removal(src, op, header_symbols, kept_notes)

    # 4. assemble
    texts: dict[str, str] = {}
    removals: list[Removal] = []
    for src in sources.values():
        if not src.removed:
            continue
        texts[src.path] = src.remaining_text()
        if not code_only(mask_code(texts[src.path]), find_directives(texts[src.path])).strip():
            kept_notes.append(Note("todo", "kept the file: only preprocessor lines are left (delete it by hand)", Location(src.path, 1)))
        index = LineIndex(src.text)
        for d, kind in sorted(src.removed, key=lambda item: item[0].start):
            if kind == "namespace":
                continue  # an emptied namespace block goes with its last member
            removals.append(
                Removal(
                    kind=kind,
                    name=f"{d.name}({', '.join(d.args)})" if kind == "macro-instance" else d.name,
                    location=Location(src.path, index.line_of(d.code_start)),
                    line_count=_lines_in(src.text, d.start, d.end),
                    graph_sites=d.identifiers[GRAPH_SITE],
                )
            )
    dangling = _dangling(sources, kernels)
    if dangling:
        name, where = dangling[0]
        raise MpsgenError(
            f"removing {op}'s legacy kernels would leave this code naming the removed {name}",
            location=where,
            hint="migrate the op using it in the same run, or keep its legacy implementation",
        )
    return LegacyResult(texts=texts, removals=tuple(removals), kept=tuple(kept_notes))


def _dangling(sources: dict[str, _Source], kernels: set[str]) -> list[tuple[str, Location]]:
    """Code outside the removed spans still naming a removed function or macro (in the original
    text, so that the location is where the user reads it)."""
    out = []
    for src in sources.values():
        for d, kind in src.removed:
            if kind in ("include", "namespace", "body"):
                continue
            names = [a for a in d.args if a in kernels] if kind == "macro-instance" else [d.name]
            scope = [src] if src.file_local and (d.is_static or kind == "macro") else list(sources.values())
            for name in names:
                out.extend((name, loc) for loc in _reference_locations(sources, name, scope))
    return sorted(set(out), key=lambda item: (item[1], item[0]))


_EMPTY_NAMESPACE = re.compile(r"\s*(?:inline\s+)?namespace\s*[\w:]*\s*\{\s*\}[ \t]*(?://[^\n]*)?\s*")


def _remove_emptied_namespaces(src: _Source) -> None:
    """A namespace block the removal emptied goes too (innermost first); one that was already empty,
    or that still holds a comment, stays."""
    changed = True
    while changed:
        changed = False
        for ns in src.definitions:
            if ns.kind != "namespace" or src.is_removed(ns):
                continue
            inner = [(d.start, d.end) for d, _ in src.removed if ns.code_start < d.start and d.end <= ns.end]
            if not inner:
                continue
            spans = _merged_spans(inner)
            left = replace_spans(src.text[ns.code_start : ns.end], [(a - ns.code_start, b - ns.code_start, "") for a, b in spans])
            if _EMPTY_NAMESPACE.fullmatch(left):
                src.removed.append((ns, "namespace"))
                changed = True


def _remove_prototypes(sources: dict[str, _Source], name: str, remove) -> None:
    for src in sources.values():
        if src.mentions(name):
            for d in src.definitions:
                if d.kind == "declaration" and d.name == name:
                    remove(src, d, "function")


def _helper_candidates(sources: dict[str, _Source], name: str, *,
                       readable_only: bool = False) -> list[tuple[_Source, Definition, str]] | None:
    """Definitions of `name` that may go when unused: static functions, functions in a `mps`
    namespace, `#define` macros. None when a file naming it cannot be scanned (then nothing of that
    name is removed: the unscannable file might define or use it in a way we cannot see), unless
    `readable_only`: then the candidates of the files that can be."""
    out = []
    for src in sources.values():
        try:
            if name not in src.helper_names:
                continue
        except MpsgenError:
            if readable_only or not src.mentions(name):
                continue
            return None
        definitions = src.definitions
        for d in definitions:
            if d.name != name or src.is_removed(d):
                continue
            if d.kind == "macro":
                out.append((src, d, "macro"))
            elif d.kind == "function" and (d.is_static or d.namespace.split("::")[-1:] == ["mps"]):
                out.append((src, d, "static-helper"))
    return out


def _scope_of(sources: dict[str, _Source], src: _Source, d: Definition) -> list[_Source]:
    """Where references to `d` may live: its own file for file-local statics and macros."""
    local = src.file_local and (d.kind == "macro" or d.is_static)
    return [src] if local else list(sources.values())


def _try_remove_unused(sources, name, remove) -> bool | None:
    """Remove every candidate definition of `name` nothing else references. None: no candidate."""
    candidates = _helper_candidates(sources, name)
    if candidates is None:
        return False
    if not candidates:
        return None
    removed_any = False
    for src, d, kind in candidates:
        scope = _scope_of(sources, src, d)
        same_name = [x for s in scope for x in s.definitions if x.name == name and x.kind in _SAME_NAME_KINDS]
        refs = sum(s.remaining_count(name, [x for x in same_name if _in(s, x)]) for s in scope)
        if refs == 0 and kind != "macro" and _pasting_macro(scope, name):
            refs = 1  # a macro may form the name by token pasting (`binaryOp##other_type`)
        if refs == 0:
            remove(src, d, kind)
            for s in scope:
                for x in s.definitions:
                    if x.kind == "declaration" and x.name == name:
                        remove(s, x, "function")
            removed_any = True
    return removed_any


_PASTE = re.compile(r"(\w*)\s*##\s*(\w*)")


def _pasting_macro(scope: list[_Source], name: str) -> Definition | None:
    """A remaining `#define` whose `a##b` pasting could produce `name` (its fixed prefix or suffix
    matches): such a use is invisible to identifier counting, so the helper stays."""
    for src in scope:
        if "##" not in src.text:
            continue
        for d in src.definitions:
            if d.kind != "macro" or src.is_removed(d):
                continue
            for left, right in _PASTE.findall(src.masked[d.code_start : d.code_end]):
                if (left and name.startswith(left)) or (right and name.endswith(right)):
                    return d
    return None


def _in(src: _Source, d: Definition) -> bool:
    return any(x is d for x in src.definitions)


def _kept_notes(sources: dict[str, _Source], names: set[str]) -> list[Note]:
    notes = []
    for name in sorted(names):
        candidates = _helper_candidates(sources, name)
        if candidates is None:
            if not _helper_candidates(sources, name, readable_only=True):
                continue  # no file it could be removed from defines it as a helper: nothing was kept
            unscannable = [p for p, s in sources.items() if s.mentions(name) and not s.scannable]
            notes.append(Note("kept", f"kept {name}: {', '.join(unscannable)} names it and cannot be scanned",
                              Location(unscannable[0], 1)))
            continue
        for src, d, kind in candidates:
            scope = _scope_of(sources, src, d)
            users = _reference_locations(sources, name, scope)
            if not users:
                paster = _pasting_macro(scope, name) if kind != "macro" else None
                if paster is not None:
                    notes.append(Note("kept", f"kept helper {name}: macro {paster.name} at {paster.location} may paste it", d.location))
                continue
            what = "macro" if kind == "macro" else "helper"
            more = f" and {len(users) - 1} more" if len(users) > 1 else ""
            notes.append(Note("kept", f"kept {what} {name}: still used at {users[0]}{more}", d.location))
    return notes


def _reference_locations(sources: dict[str, _Source], name: str, scope: list[_Source]) -> list[Location]:
    """Code references to `name` outside any definition of `name`, in the remaining text."""
    out = []
    for src in scope:
        if not src.mentions(name):
            continue
        skipped = [(d.code_start, d.code_end) for d in src.definitions if d.name == name and d.kind in _SAME_NAME_KINDS]
        skipped += [(d.start, d.end) for d, _ in src.removed]
        index = None  # built for the first reference found (most names have none left)
        for m in re.finditer(rf"\b{re.escape(name)}\b", src.masked):
            if any(s <= m.start() < e for s, e in skipped):
                continue
            index = index or LineIndex(src.text)
            out.append(Location(src.path, index.line_of(m.start())))
    return out


def _plan_include_removal(src: _Source, op: str, header_symbols: set[str], kept: list[Note]) -> None:
    wanted = f"ATen/ops/{op}_native.h"
    directives = find_directives(src.text, src.masked)
    includes = [d for d in directives if d.word == "include" and _include_target(src.text, d) == wanted]
    if not includes:
        return
    left = identifiers(mask_code(src.remaining_text()))
    needed = set(header_symbols) | {f"structured_{s}" for s in header_symbols}
    users = sorted(needed & set(left))
    if users:
        kept.append(Note("kept", f"kept #include <{wanted}>: the file still uses {', '.join(users)}", Location(src.path, includes[0].line)))
        return
    for d in includes:
        src.removed.append((_directive_item(src, d, wanted), "include"))
    # an `#else` branch left empty goes with its line: `#ifndef X ... #endif` stays valid and tidy
    gone = _merged_spans([(x.start, x.end) for x, _ in src.removed])
    for branch, endif in _else_branches(directives):
        if any(branch.end <= d.start < endif.start for d in includes) and _only_blank_left(
            src.text, branch.end, endif.start, gone
        ):
            src.removed.append((_directive_item(src, branch, "#else"), "include"))


def _else_branches(directives):
    """(`#else`, its `#endif`) pairs."""
    pairs, stack = [], []
    for d in directives:
        if d.word in ("if", "ifdef", "ifndef"):
            stack.append(None)
        elif d.word == "else" and stack:
            stack[-1] = d
        elif d.word == "endif" and stack:
            opened = stack.pop()
            if opened is not None:
                pairs.append((opened, d))
    return pairs


def _directive_item(src: _Source, d, name: str) -> Definition:
    return Definition(
        kind="include",
        name=name,
        start=d.start,
        end=d.end,
        location=Location(src.path, d.line),
        line_count=1,
        identifiers=Counter(),
        code_start=d.start,
        code_end=d.end,
    )


def _include_target(text: str, d) -> str:
    m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', text[d.start : d.end])
    return m.group(1) if m else ""


def _only_blank_left(text: str, start: int, end: int, gone: list[tuple[int, int]]) -> bool:
    pos = start
    for s, e in gone:
        if e <= pos or s >= end:
            continue
        if text[pos:max(s, pos)].strip():
            return False
        pos = max(pos, e)
    return not text[pos:end].strip()


def find_dangling_references(files: dict[str, str], names: set[str]) -> list[Location]:
    """Code (not comments or strings) still naming any of `names`, in path and line order."""
    out: list[Location] = []
    if not names:
        return out
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    for path in sorted(files):
        text = files[path]
        if not any(name in text for name in names):  # masking only blanks: not in the text, not in its code
            continue
        masked = mask_code(text)
        skip = [(d.start, d.end) for d in find_directives(text, masked) if d.word == "include"]
        index = LineIndex(text)
        for m in pattern.finditer(masked):
            if not any(s <= m.start() < e for s, e in skip):
                out.append(Location(path, index.line_of(m.start())))
    return sorted(set(out))


def plan_legacy(views, spec, legacy_files: tuple[str, ...] = ()) -> tuple[FileChange, ...]:
    """(migrate) The host files (operations/*.mm, plus `legacy_files`: `--legacy-file`) with
    `spec`'s MPSGraph implementation removed, and what it leaves unused; refused when code would
    still refer to what goes."""

    files = {rel: views.ws.read(rel) for rel in dict.fromkeys([*views.host_files(), *legacy_files])}
    rewrite = {body.kernel: body.text for body in spec.per_device.bodies} if spec.per_device is not None else {}
    result = plan_legacy_removal(files, set(spec.legacy_kernels), spec.op, set(spec.header_symbols),
                                 read_definitions=views.definitions, read_names=views.helper_names, rewrite=rewrite)
    removed = {r.name for r in result.removals if r.kind not in ("include", "body")}
    dangling = find_dangling_references({**files, **result.texts}, removed)
    if dangling:
        raise MpsgenError(
            f"code still refers to what migrating {spec.op} removes",
            location=dangling[0],
            hint="port or remove that use first, then run migrate again",
        )
    changes: dict[str, list[Change]] = {}
    for removal in result.removals:
        detail = f"{removal.name} ({counted(removal.line_count, 'line')}"
        detail += f", {counted(removal.graph_sites, 'graph site')})" if removal.graph_sites else ")"
        if removal.kind == "body":  # a per-device op's MPS function: it stays, its body is the stub call
            detail = f"{removal.name}: its body {detail.partition(' ')[2]} becomes the stub call"
            changes.setdefault(removal.location.path, []).append(Change("body", removal.location, detail))
            continue
        changes.setdefault(removal.location.path, []).append(Change(f"remove-{removal.kind}", removal.location, detail))
    notes: dict[str, list[Note]] = {}
    after = _LinesAfter({rel: EditMap(files[rel], text) for rel, text in result.texts.items()})
    for note in result.kept:  # found in the text before the removals: told at the lines after them
        note = replace(note, message=after.in_text(note.message), location=after.location(note.location))
        notes.setdefault(note.location.path, []).append(note)
    paths = dict.fromkeys([*result.texts, *changes, *notes])
    return tuple(
        FileChange(rel, result.texts.get(rel, files[rel]), tuple(changes.get(rel, ())), tuple(notes.get(rel, ())))
        for rel in paths
    )


@dataclass(frozen=True)
class _LinesAfter:
    """Lines of the files before the removals, as they stand after them."""

    maps: dict[str, EditMap]

    def location(self, where: Location) -> Location:
        edit = self.maps.get(where.path)
        return where if edit is None else Location(where.path, edit.line(where.line))

    def in_text(self, text: str) -> str:
        """`path:line` mentions of the edited files in `text`, moved."""
        def moved(m: re.Match) -> str:
            return str(self.location(Location(m.group(1), int(m.group(2)))))

        return _MENTION.sub(moved, text)


_MENTION = re.compile(r"(\S+?):(\d+)\b")
