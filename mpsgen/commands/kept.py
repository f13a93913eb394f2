"""Results of whole commands kept in the user cache (`mpsgen.read.cache`): `scan`'s report, and the
plan of `migrate`/`new-op` for the same arguments, so that running one again on a checkout nothing
changed in is a load: no op is classified again, no candidate or op planned again, no body checked
again, and nothing that computes them (torch least of all) is imported.

A result is kept with everything it was computed from: the text of every file the command read of
the checkout (through `Checkout`, recorded by `mpsgen.read.checkout.recording`: a planned kernel's
try and compile included), every `exists` answer and directory listing it asked for, and the
environment the answers depend on besides the checkout (`environment`: mpsgen's own files, the host
compiler, clang-format, torch's version, the checkout's `.clang-format` and template overrides,
the `MPSGEN_*` settings). It is used only when all of them are the same: each file's text hashes to
the SHA-256 kept, each listing and answer is the same. Anything else (a file edited, added or
removed where the command looked, another compiler or torch, another mpsgen) computes again, and
keeps the new result. Scan keeps one report per checkout (`<cache dir>/kept/<checkout>/scan.pickle`),
a plan one file per command line (`plan-<SHA-256 of the arguments>.pickle`, the 64 most recently
used kept); a plan's edited files keep only their new text (the old one is the checkout's, checked
by its SHA-256). Written atomically; a corrupt or foreign one is ignored; `MPSGEN_NO_KEPT=1`
(or `MPSGEN_NO_CACHE=1`) turns both off. Results are pickled (frozen dataclasses of
`mpsgen.commands.scanreport` and `mpsgen.model`): a file of the user's own cache directory, whose
result is unpickled only when the format, the environment (mpsgen's own files included) and every
read match."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import tempfile
from dataclasses import replace
from pathlib import Path

from mpsgen.commands.scanreport import ScanReport
from mpsgen.errors import MpsgenError
from mpsgen.model import FileEdit, Plan
from mpsgen.read.cache import cache_dir, cache_enabled, checkout_dir_name, executable_identity
from mpsgen.read.checkout import Checkout, Reads
from mpsgen.read.metalhost.compiler import find_compiler

FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent.parent
# the settings that change no answer of the scan
_NOT_SETTINGS = frozenset({"MPSGEN_CACHE_DIR", "MPSGEN_STATE_DIR", "MPSGEN_NO_CACHE", "MPSGEN_NO_KEPT", "MPSGEN_JOBS"})
_OVERRIDES = ".mpsgen/templates"
_STYLE_FILES = (".clang-format", "_clang-format")


def environment(root: Path) -> str:
    """SHA-256 of what a scan's answers depend on besides the files it reads through `Checkout`."""
    digest = hashlib.sha256()

    def add(*parts: str | bytes) -> None:
        for part in parts:
            data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "little") + data)

    add(str(FORMAT))
    # mpsgen's own files (code, templates, catalog, the Metal prelude): a reinstall or an edit is another mpsgen
    for base in sorted({_PACKAGE, _PACKAGE.parent / "templates"}):
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            stat = path.stat()
            add(str(path), str(stat.st_size), str(stat.st_mtime_ns))
    compiler, _ = find_compiler()
    add(f"compiler={compiler and executable_identity(compiler.path)}")
    add(f"clang-format={_clang_format()}")
    add(f"torch={_torch_version()}")
    for name in sorted(os.environ):
        if name.startswith("MPSGEN_") and name not in _NOT_SETTINGS:
            add(f"{name}={os.environ[name]}")
    for rel in _STYLE_FILES:
        path = root / rel
        add(rel, path.read_bytes() if path.is_file() else b"-")
    overrides = root / _OVERRIDES
    if overrides.is_dir():
        for path in sorted(p for p in overrides.rglob("*") if p.is_file()):
            add(str(path.relative_to(root)), path.read_bytes())
    return digest.hexdigest()


def _clang_format() -> str | None:
    spec = importlib.util.find_spec("clang_format")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            found = sorted(Path(location).glob("data/bin/clang-format*"))
            if found:
                return executable_identity(str(found[0]))
    import shutil

    on_path = shutil.which("clang-format")
    return executable_identity(on_path) if on_path else None


def _torch_version() -> str:
    """torch's version file, looked up, not imported ("" without torch): the body check's reference."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ""
    version = Path(spec.origin).parent / "version.py" if spec is not None and spec.origin else None
    return version.read_text(encoding="utf-8") if version is not None and version.is_file() else ("torch" if spec else "")


PLANS_KEPT = 64


def _folder(root: Path) -> Path | None:
    if not cache_enabled() or os.environ.get("MPSGEN_NO_KEPT", "") not in ("", "0"):
        return None
    try:
        return cache_dir() / "kept" / checkout_dir_name(root)
    except (OSError, RuntimeError):
        return None


def _path(root: Path, name: str = "scan") -> Path | None:
    folder = _folder(root)
    return None if folder is None else folder / f"{name}.pickle"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _load(checkout: Checkout, path: Path | None, env: str | None):
    """The result kept at `path` when everything it was computed from is the same, else None."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            kept = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != FORMAT:
        return None
    if kept.get("environment") != (env or environment(checkout.root)):
        return None
    try:
        if any(checkout.glob(*key) != list(found) for key, found in kept["globs"].items()):
            return None
        if any(checkout.exists(rel) != found for rel, found in kept["exists"].items()):
            return None
        if any(_sha(checkout.read(rel)) != digest for rel, digest in kept["texts"].items()):
            return None
        result = pickle.loads(kept["result"])
    except (MpsgenError, OSError, KeyError, AttributeError, pickle.UnpicklingError, EOFError, TypeError, ValueError,
            ImportError):
        return None
    try:
        os.utime(path)  # recently used: kept when older ones go
    except OSError:
        pass
    return result


def _store(path: Path | None, result, reads: Reads, env: str, keep: int | None = None) -> None:
    """Keep `result` with what it was computed from (a cache that cannot be written is no cache)."""
    if path is None:
        return
    kept = {"format": FORMAT, "environment": env, "globs": dict(reads.globs), "exists": dict(reads.exists),
            "texts": {rel: _sha(text) for rel, text in reads.texts.items()},
            "result": pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(kept, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return
    if keep is not None:
        _prune(path.parent, keep)


def _prune(folder: Path, keep: int) -> None:
    try:
        entries = sorted((e.stat().st_mtime_ns, e.path) for e in os.scandir(folder) if e.name.startswith("plan-"))
    except OSError:
        return
    for _, old in entries[: max(0, len(entries) - keep)]:
        try:
            os.unlink(old)
        except OSError:
            pass


def kept_scan(checkout: Checkout, env: str | None = None) -> ScanReport | None:
    """The report kept for this checkout, when everything it was computed from is the same; else None."""
    report = _load(checkout, _path(checkout.root), env)
    return report if isinstance(report, ScanReport) and report.root == str(checkout.root) else None


def keep_scan(checkout: Checkout, report: ScanReport, reads: Reads, env: str) -> None:
    _store(_path(checkout.root), report, reads, env)


def _plan_path(checkout: Checkout, arguments: str) -> Path | None:
    return _path(checkout.root, "plan-" + hashlib.sha256(arguments.encode("utf-8", "surrogateescape")).hexdigest())


def kept_plan(checkout: Checkout, arguments: str, env: str | None = None) -> Plan | None:
    """The plan kept for this command line (`arguments`: the command and every option, as text) on
    this checkout, when everything it was computed from is the same; else None."""
    kept = _load(checkout, _plan_path(checkout, arguments), env)
    if not (isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], Plan)):
        return None
    plan, edits = kept
    restored = []
    for path, after, before_sha256, created in edits:
        before = "" if created else checkout.read(path)
        if _sha(before) != before_sha256 and not created:
            return None
        restored.append(FileEdit(path, before, after, before_sha256, created))
    return replace(plan, edits=tuple(restored)) if plan.root == str(checkout.root) else None


def keep_plan(checkout: Checkout, arguments: str, plan: Plan, reads: Reads, env: str) -> None:
    """Keep `plan` for this command line; an edited file's old text is the checkout's (not stored)."""
    edits = tuple((e.path, e.after, e.before_sha256, e.created) for e in plan.edits)
    _store(_plan_path(checkout, arguments), (replace(plan, edits=()), edits), reads, env, PLANS_KEPT)
