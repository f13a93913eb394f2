"""Report lines that point where each entry stands after the whole change.

Families report a `Change` at a line of the text they were given or of the text they return (an
added registration at the line it was inserted before, a functor at its own first line), and
later edits of the same file (the next op, clang-format) move lines again. The Workspace passes
every report through each later edit of its file (`EditMap`) and settles a new entry on the added
line that holds it (`settle`): the summary's `path:line` is then the line of the finished file
(dry-run and written alike), and for something removed, the line now standing where it was."""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from mpsgen.edit.apply import text_opcodes
from mpsgen.model import Change

_SPACE = re.compile(r"\s+")
_MIN_PREFIX = 8  # a wrapped first line must say this much of the entry to count as its line


class EditMap:
    """Old 1-based line -> new 1-based line through one edit of a file; and the new text's blocks
    of added or rewritten lines."""

    def __init__(self, before: str, after: str) -> None:
        self.old = before.splitlines()
        self.new = after.splitlines()
        self.codes = text_opcodes(before, after)
        self._starts = [code[1] for code in self.codes]

    def line(self, old_line: int) -> int:
        i = old_line - 1
        if i >= len(self.old):
            return len(self.new) + 1 + (i - len(self.old))
        k = bisect.bisect_right(self._starts, i) - 1
        while k > 0 and self.codes[k][1] == self.codes[k][2]:  # an insert block holds no old line
            k -= 1
        tag, i1, i2, j1, j2 = self.codes[max(k, 0)]
        if not i1 <= i < i2:
            return j1 + 1
        if tag == "equal":
            return j1 + (i - i1) + 1
        return j1 + min(i - i1, max(j2 - j1 - 1, 0)) + 1

    def added_block_at(self, new_line: int) -> range | None:
        """The 1-based new lines of the insert/replace block that holds or starts at `new_line`."""
        j = new_line - 1
        for tag, _i1, _i2, j1, j2 in self.codes:
            if tag in ("insert", "replace") and j1 <= j <= j2 and j2 > j1:
                return range(j1 + 1, j2 + 1)
        return None


def _norm(text: str) -> str:
    return _SPACE.sub("", text)


# test-list edits whose entry stands after the change, reported as `TABLE['key']: added "key" ...`
_KEYED_LIST_EDITS = frozenset({"added-complex", "removed-dtypes", "listed-dtypes"})
_LIST_KEY = re.compile(r"""^\w+\[(['"])(?P<key>.*?)\1\]:""")


def entry_key(change: Change) -> str:
    """What the entry's own line says: the detail up to its explanation (a test-list entry: its
    key, quoted)."""
    listed = _LIST_KEY.match(change.detail) if change.kind in _KEYED_LIST_EDITS else None
    if listed:
        return f'"{listed["key"]}"'
    key = change.detail.split(" registers ", 1)[0]
    return key.split(" (", 1)[0] if not key.startswith(("static ", "REGISTER_")) else key


def holds(line_text: str, change: Change) -> bool:
    """Whether a line of the new text is (the first line of) the entry."""
    # a line continuing a `#define` (an entry of a registration list macro) ends in a backslash
    line, key = _norm(line_text.rstrip().removesuffix("\\")), _norm(entry_key(change))
    if not line or not key:
        return False
    if change.kind in _KEYED_LIST_EDITS:  # a Python string, either quote
        return key in line or key.replace('"', "'") in line
    return key in line or (len(line) >= _MIN_PREFIX and key.startswith(line))


def settle(change: Change, edit: EditMap, *, reported_after: bool) -> Change:
    """The change at its line of `edit`'s new text. `reported_after`: the family may have given a
    line of the new text already (kept when that line holds the entry)."""
    line = change.location.line
    if reported_after and 0 < line <= len(edit.new) and holds(edit.new[line - 1], change):
        return change
    mapped = edit.line(line)
    if 0 < mapped <= len(edit.new) and holds(edit.new[mapped - 1], change):
        return _at(change, mapped)
    # the block inserted at that place (or just before it: a family appending at the end of a file
    # may name the line after its last one)
    for near in (mapped, mapped - 1):
        block = edit.added_block_at(near)
        for candidate in block or ():
            if holds(edit.new[candidate - 1], change):
                return _at(change, candidate)
    return _at(change, min(mapped, len(edit.new) + 1))


def _at(change: Change, line: int) -> Change:
    if line == change.location.line:
        return change
    return replace(change, location=replace(change.location, line=line))
