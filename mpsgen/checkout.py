"""A PyTorch checkout on disk, and the in-memory Workspace a plan is built on."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.model import Change, FileChange, FileEdit, Location, Note, Plan, sha256_text

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
NATIVE_DIR = "aten/src/ATen/native"
MPS_DIR = "aten/src/ATen/native/mps"
KERNELS_DIR = "aten/src/ATen/native/mps/kernels"
OPERATIONS_DIR = "aten/src/ATen/native/mps/operations"
C10_METAL_DIR = "c10/metal"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
COMMON_METHODS = "torch/testing/_internal/common_methods_invocations.py"


class Checkout:
    """The root of a PyTorch source tree. Reads are lazy and cached; the cache keys on the path only,
    because one command reads each file once."""

    def __init__(self, root: Path):
        self.root = root
        self._texts: dict[str, str] = {}
        self._globs: dict[tuple[str, str], list[str]] = {}

    @classmethod
    def find(cls, explicit: str | os.PathLike | None = None, start: Path | None = None) -> Checkout:
        """The checkout at or above `explicit` (-C PATH: any directory inside a checkout, as `git -C`
        takes), else at or above `start` (the CWD)."""
        if explicit is not None:
            root = Path(explicit).resolve()
            if not root.is_dir():
                raise MpsgenError(f"{explicit}: no such directory", hint="pass a PyTorch checkout to -C")
            found = _checkout_root_at_or_above(root)
            if found is not None:
                return cls(found)
            raise MpsgenError(
                f"{explicit} is not inside a PyTorch checkout: no {NATIVE_FUNCTIONS} in it or above",
                hint="pass a directory of the checkout to -C",
            )
        here = (start or Path.cwd()).resolve()
        found = _checkout_root_at_or_above(here)
        if found is not None:
            return cls(found)
        raise MpsgenError(
            f"not inside a PyTorch checkout (no {NATIVE_FUNCTIONS} in {here} or above)",
            hint="run mpsgen inside a checkout or pass -C PATH",
        )

    def path(self, rel: str) -> Path:
        return self.root / rel

    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def read(self, rel: str) -> str:
        """The file's text, decoded as UTF-8 with its line endings exactly as on disk."""
        if rel not in self._texts:
            self._texts[rel] = read_text(self.root, rel)
        return self._texts[rel]

    def glob(self, rel_dir: str, pattern: str) -> list[str]:
        """The files of `rel_dir` matching `pattern` (listed once per command, like the reads)."""
        key = (rel_dir, pattern)
        if key not in self._globs:
            base = self.root / rel_dir
            found = sorted(f"{rel_dir}/{p.name}" for p in base.glob(pattern) if p.is_file()) if base.is_dir() else []
            self._globs[key] = found
        return list(self._globs[key])


def path_inside(root: Path, rel: str) -> Path:
    """The real path of `rel`, following symlinks, refused when it lies outside the checkout (a `..`
    in the name, or a symlink pointing elsewhere): mpsgen never writes outside the checkout."""
    root_real = Path(root).resolve()
    path = Path(root) / rel
    real = path.resolve()
    if real != root_real and root_real not in real.parents:
        if _has_symlink(Path(root), rel):
            raise MpsgenError(
                f"{rel} is a symlink to {real}, outside the checkout",
                hint="mpsgen only writes files inside the checkout; replace the symlink with the file",
            )
        raise MpsgenError(f"{rel} resolves to {real}, outside the checkout", hint="name a file inside the checkout")
    return real


def _has_symlink(root: Path, rel: str) -> bool:
    path = root
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            return True
    return False


def read_text(root: Path, rel: str) -> str:
    path = root / rel
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        raise MpsgenError(f"{rel}: file not found", hint="is the checkout complete?") from None
    except PermissionError:
        raise MpsgenError(f"{rel}: permission denied", hint="make the file readable") from None
    except IsADirectoryError:
        raise MpsgenError(f"{rel}: is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise MpsgenError(
            f"not valid UTF-8 (byte {exc.start})",
            location=Location(rel, line),
            hint="save the file as UTF-8",
        ) from None


@dataclass
class Workspace:
    """An overlay over a checkout: families read the current text and write new text; nothing reaches
    the disk until the finished Plan is applied. Several ops planned in one Workspace form one
    transaction."""

    checkout: Checkout
    _overlay: dict[str, str] = field(default_factory=dict)
    _changes: list[Change] = field(default_factory=list)
    _notes: list[Note] = field(default_factory=list)
    _steps: list[str] = field(default_factory=list)

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
        if note not in self._notes:
            self._notes.append(note)

    def apply(self, change: FileChange) -> None:
        """Take one family's FileChange: its text (when it differs), its changes and notes."""
        current = self.read(change.path) if self.exists(change.path) else None
        if change.text != (current if current is not None else ""):
            self.write(change.path, change.text)
            self._follow_edit(change.path, current or "", change.text, change.changes)
        else:
            self._changes.extend(change.changes)
        for note in change.notes:
            self.add_note(note)

    def _follow_edit(self, rel: str, before: str, after: str, new: tuple[Change, ...] = ()) -> None:
        """Move the reports on `rel` to their lines in `after` (see mpsgen.linemap); `new` are the
        editing family's own, given at a line of `before` or of `after`."""
        from mpsgen.linemap import EditMap, settle

        edit = EditMap(before, after)
        self._changes = [settle(c, edit, reported_after=False) if c.location.path == rel else c for c in self._changes]
        self._changes.extend(settle(c, edit, reported_after=True) if c.location.path == rel else c for c in new)

    def add_step(self, step: str) -> None:
        """A next step for the user (build, run a test), shown apart from the notes."""
        if step not in self._steps:
            self._steps.append(step)

    def plan(self, ops: tuple[str, ...] = ()) -> Plan:
        """The finished Plan. The lines the families added to C++/Metal files are formatted here, in
        one place, by the checkout's `.clang-format` (nothing else of those files changes)."""
        from mpsgen.clangformat import format_planned_texts

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
        return Plan(
            root=str(self.checkout.root),
            edits=tuple(edits),
            changes=tuple(self._changes),
            notes=tuple(self._notes),
            steps=tuple(self._steps),
            ops=ops,
        )


def _checkout_root_at_or_above(path: Path) -> Path | None:
    """The nearest directory at or above `path` holding native_functions.yaml, else None."""
    for candidate in (path, *path.parents):
        if (candidate / NATIVE_FUNCTIONS).is_file():
            return candidate
    return None
