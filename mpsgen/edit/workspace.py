"""The in-memory overlay a plan is built on: families read the current text and write new text;
nothing reaches the disk until the finished Plan is applied."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from mpsgen.edit.clangformat import format_planned_texts
from mpsgen.edit.linemap import EditMap, settle
from mpsgen.model import Change, FileChange, FileEdit, Location, Note, Plan, sha256_text
from mpsgen.read.checkout import Checkout, path_inside


@dataclass
class Workspace:
    """An overlay over a checkout: families read the current text and write new text; nothing reaches
    the disk until the finished Plan is applied. Several ops planned in one Workspace form one
    transaction.

    `reports=False` keeps the texts only: no changes, notes or steps, and no following of them
    through later edits (`confirm.migrate_refusal` plans to learn whether a command refuses; the
    reports of a plan nobody will see cost it a line diff per edit)."""

    checkout: Checkout
    reports: bool = True
    _overlay: dict[str, str] = field(default_factory=dict)
    _changes: list[Change] = field(default_factory=list)
    _notes: list[Note] = field(default_factory=list)
    _steps: list[str] = field(default_factory=list)

    def fork(self) -> Workspace:
        """A copy holding the same texts, reports and steps, planned on apart from this one (the
        body check writes an op's plan there before the command takes it: `take`)."""
        return Workspace(self.checkout, self.reports, dict(self._overlay), list(self._changes), list(self._notes),
                         list(self._steps))

    def take(self, other: Workspace) -> None:
        """Become `other` (a `fork` of this Workspace planned further): its texts, reports and steps."""
        self._overlay, self._changes = dict(other._overlay), list(other._changes)
        self._notes, self._steps = list(other._notes), list(other._steps)

    def read(self, rel: str) -> str:
        if rel in self._overlay:
            return self._overlay[rel]
        return self.checkout.read(rel)

    def planned_texts(self) -> dict[str, str]:
        """The files the plan has changed so far, as planned (rel -> text)."""
        return dict(self._overlay)

    def exists(self, rel: str) -> bool:
        return rel in self._overlay or self.checkout.exists(rel)

    def write(self, rel: str, text: str) -> None:
        self._overlay[rel] = text

    def add_change(self, kind: str, location: Location, detail: str) -> None:
        self._changes.append(Change(kind, location, detail))

    def add_note(self, note: Note) -> None:
        """A note; a `kept` note on what an earlier op's note already kept for the same reason
        replaces it (the later op saw the file as the transaction left it: `kept macro X: still used
        at ...` once, with the final uses, not once per op)."""
        subject = _kept_subject(note)
        if subject is not None:
            self._notes = [n for n in self._notes if _kept_subject(n) != subject or _gist(n) != _gist(note)]
        if note not in self._notes:
            self._notes.append(note)

    def apply(self, change: FileChange) -> None:
        """Take one family's FileChange: its text (when it differs), its changes and notes."""
        current = self.read(change.path) if self.exists(change.path) else None
        if not self.reports:
            if change.text != (current if current is not None else ""):
                self.write(change.path, change.text)
            return
        if change.text != (current if current is not None else ""):
            self.write(change.path, change.text)
            self._follow_edit(change.path, current or "", change.text, change.changes)
        else:
            self._changes.extend(change.changes)
        for note in change.notes:
            self.add_note(note)

    def _follow_edit(self, rel: str, before: str, after: str, new: tuple[Change, ...] = ()) -> None:
        """Move the reports on `rel` to their lines in `after` (see mpsgen.edit.linemap); `new` are the
        editing family's own, given at a line of `before` or of `after`."""

        edit = EditMap(before, after)
        self._changes = [settle(c, edit, reported_after=False) if c.location.path == rel else c for c in self._changes]
        self._notes = [replace(n, location=replace(n.location, line=edit.line(n.location.line)))
                       if n.location is not None and n.location.path == rel else n for n in self._notes]
        self._changes.extend(settle(c, edit, reported_after=True) if c.location.path == rel else c for c in new)

    def add_step(self, step: str) -> None:
        """A next step for the user (build, run a test), shown apart from the notes."""
        if step not in self._steps:
            self._steps.append(step)

    def plan(self, ops: tuple[str, ...] = ()) -> Plan:
        """The finished Plan. The lines the families added to C++/Metal files are formatted here, in
        one place, by the checkout's `.clang-format` (nothing else of those files changes)."""

        texts = {}
        new_files: set[str] = set()
        for rel in sorted(self._overlay):
            created = not self.checkout.exists(rel)
            before = "" if created else self.checkout.read(rel)
            if before != self._overlay[rel]:
                path_inside(self.checkout.root, rel)
                texts[rel] = (before, self._overlay[rel])
                if created:
                    new_files.add(rel)
        formatted, note = format_planned_texts(self.checkout.root, texts)
        for rel, (_before, after) in texts.items():
            if formatted[rel] != after:
                self._follow_edit(rel, after, formatted[rel])
        if note is not None:
            self.add_note(Note("info", note))
        edits = [FileEdit(rel, before, formatted[rel], sha256_text(before), rel in new_files)
                 for rel, (before, _) in texts.items()]
        # what a later op removed is not also reported kept (softplus keeps SKIPLIST_GRAD's entry, a
        # gradient list; softplus_backward in the same run removes it)
        removed = {(c.location.path, c.detail.split(": ", 1)[0]) for c in self._changes if c.kind == "removed-entry"}
        notes = [n for n in self._notes if n.location is None or _kept_subject(n) is None
                 or (n.location.path, _kept_subject(n)[1]) not in removed]
        return Plan(
            root=str(self.checkout.root),
            edits=tuple(edits),
            changes=tuple(self._changes),
            notes=tuple(notes),
            steps=tuple(self._steps),
            ops=ops,
        )


def _kept_subject(note: Note) -> tuple[str, str] | None:
    """(path, what) of a `kept` note: `kept macro X: still used ...` -> (its file, "macro X")."""
    if note.kind != "kept" or note.location is None or not note.message.startswith("kept "):
        return None
    return note.location.path, note.message[len("kept "):].split(": ", 1)[0]


def _gist(note: Note) -> str:
    """A note's words without the places and counts in it."""
    return _PLACES.sub("", note.message)


_PLACES = re.compile(r"\S*\d\S*")
