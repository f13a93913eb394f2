"""A PyTorch checkout on disk, and `Texts`: what reading needs of it (the checkout as edited so far,
`mpsgen.edit.workspace.Workspace`, is one)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mpsgen.errors import MpsgenError
from mpsgen.model import Location

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
NATIVE_DIR = "aten/src/ATen/native"
MPS_DIR = "aten/src/ATen/native/mps"
KERNELS_DIR = "aten/src/ATen/native/mps/kernels"
OPERATIONS_DIR = "aten/src/ATen/native/mps/operations"
C10_METAL_DIR = "c10/metal"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
COMMON_METHODS = "torch/testing/_internal/common_methods_invocations.py"


class Texts(Protocol):
    """The texts of a checkout as the readers see them: on disk, or as a plan has edited them so far
    (`mpsgen.edit.workspace.Workspace`). Readers and facts take this, never the Workspace itself."""

    @property
    def checkout(self) -> Checkout: ...

    def read(self, rel: str) -> str: ...

    def exists(self, rel: str) -> bool: ...


@dataclass
class Reads:
    """What a command read of one checkout on disk (`recording`): each file's text, each `exists`
    answer, each directory listing. A result computed under it is valid while all of them are the
    same (`mpsgen.commands.kept`)."""

    root: Path
    texts: dict[str, str] = field(default_factory=dict)
    exists: dict[str, bool] = field(default_factory=dict)
    globs: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


_RECORDING: list[Reads] = []


@contextmanager
def recording(root: Path) -> Iterator[Reads]:
    """Record every read of the checkout at `root` on disk (through any `Checkout` of it, a
    `PlannedCheckout`'s planned texts excepted) while the block runs."""
    reads = Reads(Path(root))
    _RECORDING.append(reads)
    try:
        yield reads
    finally:
        # by identity: a nested recording of the same reads is equal to the outer one
        del _RECORDING[next(i for i, r in enumerate(_RECORDING) if r is reads)]


def add_reads(found: Reads) -> None:
    """What another process read of a checkout (a worker computing part of a command) added to
    every recording of that checkout here, as if read here."""
    for reads in _recorders(found.root):
        reads.texts.update(found.texts)
        reads.exists.update(found.exists)
        reads.globs.update(found.globs)


@contextmanager
def recording_new(root: Path) -> Iterator[Reads]:
    """`recording(root)`, keeping only what this process's other recordings of the checkout did not
    hold when the block began: in a worker forked from a command, what the command had not read
    when it forked (what it read it need not be sent back)."""
    known = [(dict(k.texts), dict(k.exists), dict(k.globs)) for k in _recorders(root)]
    with recording(root) as reads:
        yield reads
    for texts, exists, globs in known:
        for rel in [rel for rel, text in reads.texts.items() if texts.get(rel) is text]:
            del reads.texts[rel]
        for rel in [rel for rel, there in reads.exists.items() if rel in exists and exists[rel] == there]:
            del reads.exists[rel]
        for key in [key for key, found in reads.globs.items() if globs.get(key) == found]:
            del reads.globs[key]


def _recorders(root: Path) -> list[Reads]:
    return [r for r in _RECORDING if r.root == root] if _RECORDING else []


class Checkout:
    """The root of a PyTorch source tree. Reads are lazy and cached; the cache keys on the path only,
    because one command reads each file once."""

    def __init__(self, root: Path):
        self.root = root
        self._texts: dict[str, str] = {}
        self._globs: dict[tuple[str, str], list[str]] = {}

    @property
    def checkout(self) -> Checkout:
        """Itself: a checkout read as it stands is `Texts` (what `try` reads facts from, with no plan)."""
        return self

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
        found = (self.root / rel).is_file()
        for reads in _recorders(self.root):
            reads.exists[rel] = found
        return found

    def read(self, rel: str) -> str:
        """The file's text, decoded as UTF-8 with its line endings exactly as on disk."""
        if rel not in self._texts:
            self._texts[rel] = read_text(self.root, rel)
        text = self._texts[rel]
        if _RECORDING and not self._is_planned(rel):
            for reads in _recorders(self.root):
                reads.texts[rel] = text
        return text

    def _is_planned(self, rel: str) -> bool:
        return False

    def glob(self, rel_dir: str, pattern: str) -> list[str]:
        """The files of `rel_dir` matching `pattern` (listed once per command, like the reads)."""
        key = (rel_dir, pattern)
        if key not in self._globs:
            base = self.root / rel_dir
            found = sorted(f"{rel_dir}/{p.name}" for p in base.glob(pattern) if p.is_file()) if base.is_dir() else []
            self._globs[key] = found
        for reads in _recorders(self.root):
            reads.globs[key] = tuple(self._globs[key])
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


def _checkout_root_at_or_above(path: Path) -> Path | None:
    """The nearest directory at or above `path` holding native_functions.yaml, else None."""
    for candidate in (path, *path.parents):
        if (candidate / NATIVE_FUNCTIONS).is_file():
            return candidate
    return None


class PlannedCheckout(Checkout):
    """The checkout as a plan would leave it, held in memory: `read` gives each planned file's new
    text (`texts`: rel -> text), every other file as on disk. Nothing is written; `try` runs a
    planned kernel through it before the plan is applied."""

    def __init__(self, root: Path, texts: dict[str, str]):
        super().__init__(root)
        self._texts.update(texts)
        self._planned = frozenset(texts)

    def exists(self, rel: str) -> bool:
        return rel in self._planned or super().exists(rel)

    def _is_planned(self, rel: str) -> bool:
        return rel in self._planned

    def glob(self, rel_dir: str, pattern: str) -> list[str]:
        """On disk, and the files the plan creates there (a params op's new `kernels/Unary.h`)."""
        created = [rel for rel in self._planned if rel.rpartition("/")[0] == rel_dir
                   and fnmatch.fnmatchcase(rel.rpartition("/")[2], pattern)]
        return sorted(set(super().glob(rel_dir, pattern)) | set(created))
