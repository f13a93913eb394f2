"""The data mpsgen passes around: frozen, printable, comparable in tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Location:
    """A place in the checkout: a path relative to its root (POSIX separators) and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 line`, `2 lines` (`plural` when the noun does not just take an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Change:
    """One thing a plan does, for the report: `kind` is a short tag (`dispatch`, `functor`,
    `register`, `host-stub`, `remove-function`, `remove-include`, `xfail`, ...)."""

    kind: str
    location: Location
    detail: str

    def __str__(self) -> str:
        return f"{self.location}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class Note:
    """What the user should know that is not an edit. `kind`: `kept` (something left as it is, and
    why), `todo` (something left for the user to do), `info` (anything else worth saying)."""

    kind: str
    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


@dataclass(frozen=True)
class FileChange:
    """What one file family plans for one file: the file's new text (its current text when nothing
    changes), what it changed, and what it left alone with the reason. A family that cannot plan
    raises `MpsgenError` with the location instead. Every family returns this shape; the pipeline
    applies them in order (`mpsgen.edit.pipeline`)."""

    path: str
    text: str
    changes: tuple[Change, ...] = ()
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class FileEdit:
    """The whole before/after text of one file the plan changes."""

    path: str
    before: str
    after: str
    before_sha256: str
    created: bool = False  # the file does not exist yet

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Plan:
    """What a command would do: file edits (only changed files), the report items, notes for the
    user (things reported but left alone) and the next steps."""

    root: str
    edits: tuple[FileEdit, ...] = ()
    changes: tuple[Change, ...] = ()
    notes: tuple[Note, ...] = ()
    steps: tuple[str, ...] = ()  # what to do next: build, run the op's tests
    ops: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.edits
