"""Per-file indexes kept in the user's cache directory, outside the checkout: safe to delete, never
stale, never required.

An index is JSON data computed from one file's text (e.g. where every OpInfo call starts in
common_methods_invocations.py). It is stored under `<cache dir>/index/<checkout key>/`, the checkout
key being a hash of the checkout's resolved path, with the file's size, mtime and the SHA-256 of the
text it was computed from, and used only when the text at hand hashes to that SHA-256: the hash is
the key, size and mtime only say which version was seen. A missing, corrupt, foreign-version or
mismatching cache file is ignored and rebuilt; writes go to a temporary file renamed into place, and
a cache directory that cannot be written to simply means running without the cache. Nothing is ever
written inside the checkout. Within one process, indexes are also kept in memory by their text's
SHA-256 (`cached_index`'s memo), an edited text's too.

A result (`cached_result`) is JSON data a tool computed from inputs named in full by the caller (the
host compiler's verdict on a kernel file: the compiler, its command line and every byte it reads).
It is stored under `<cache dir>/<kind>/<SHA-256 of the inputs>.json`, so any checkout with the same
bytes shares it; the least recently used go when a kind holds more than `RESULTS_KEPT`.

The cache directory is `$MPSGEN_CACHE_DIR` when set, else the platform's user cache directory
(platformdirs: `$XDG_CACHE_HOME/mpsgen` or `~/.cache/mpsgen` on Linux, `~/Library/Caches/mpsgen` on
macOS). `MPSGEN_NO_CACHE=1` turns it off.

What `verify` writes (its build and test logs) goes to the user state directory (`state_dir`), also
outside the checkout: read-only commands leave the checkout byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import platformdirs

FORMAT = 3  # 2: OpInfo calls on commented-out lines are not indexed; 3: explicit specializations and TORCH_LIBRARY blocks delimited


def cache_enabled() -> bool:
    return os.environ.get("MPSGEN_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path:
    """The user cache directory mpsgen keeps its indexes in (see the module's doc)."""
    explicit = os.environ.get("MPSGEN_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return platformdirs.user_cache_path("mpsgen", appauthor=False)


def state_dir() -> Path:
    """The user state directory mpsgen keeps what a run leaves (verify's logs) in: `$MPSGEN_STATE_DIR`
    when set, else the platform's (`$XDG_STATE_HOME/mpsgen` or `~/.local/state/mpsgen` on Linux,
    `~/Library/Application Support/mpsgen` on macOS)."""
    explicit = os.environ.get("MPSGEN_STATE_DIR")
    if explicit:
        return Path(explicit)
    return platformdirs.user_state_path("mpsgen", appauthor=False)


def checkout_dir_name(root: Path) -> str:
    """A directory name for one checkout's files in a user directory: its folder's name and its key."""
    return f"{Path(root).name or 'root'}-{checkout_key(root)[:12]}"


def checkout_key(root: Path) -> str:
    """A short name for a checkout, from its resolved path (two checkouts never share index files)."""
    try:
        resolved = str(Path(root).resolve())
    except OSError:
        resolved = str(Path(root).absolute())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def cache_file(root: Path, kind: str, rel: str) -> Path:
    return cache_dir() / "index" / checkout_key(root) / f"{kind}--{rel.replace('/', '__')}.json"


def cached_index(root: Path | None, rel: str, text: str, kind: str, build: Callable[[], Any],
                 valid: Callable[[Any], bool] | None = None) -> Any:
    """`build()` (JSON data computed from `text`, the current text of `rel`), taken from the cache
    when it holds the index of exactly this text (and `valid(data)` holds: e.g. the other files it
    was computed from are unchanged too). The process's memo (`_MEMO`) is asked first, then the
    user cache; `root=None` (a text no file holds: an edit planned in memory) is kept on disk
    by its path and text (`_edited`), since a plan made once is often made again (a dry run, then
    the run; scan confirming the same candidates). The data is shared: callers read it and never
    change it."""
    if not cache_enabled():
        return build()
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    memo_key = (kind, rel, digest)
    for data in _MEMO.get(memo_key, ()):
        if valid is None or valid(data):
            _MEMO.move_to_end(memo_key)
            return data
    if root is None:
        return _remember(memo_key, _edited(kind, rel, digest, build, valid))
    try:
        path = cache_file(root, kind, rel)
    except (OSError, RuntimeError):  # no home directory to find the cache in
        return _remember(memo_key, build())
    stored = _load(path)
    if stored is not None and stored.get("format") == FORMAT and stored.get("kind") == kind \
            and stored.get("path") == rel and stored.get("sha256") == digest and "data" in stored \
            and (valid is None or valid(stored["data"])):
        return _remember(memo_key, stored["data"])
    data = _remember(memo_key, build())
    try:
        stat = (root / rel).stat()
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    except OSError:
        size, mtime_ns = None, None
    _store(path, {"format": FORMAT, "kind": kind, "path": rel, "root": str(root), "size": size,
                  "mtime_ns": mtime_ns, "sha256": digest, "data": data})
    return data


EDITED_KEPT = 1024


def _edited(kind: str, rel: str, digest: str, build: Callable[[], Any], valid: Callable[[Any], bool] | None) -> Any:
    """`build()` for a text no file holds, kept in `<cache dir>/edited/` under its kind, path and
    text (the EDITED_KEPT most recently used): unlike a checkout's files, one path has as many
    such texts as edits planned on it, so they cannot share the checkout's one file per path."""
    try:
        folder = cache_dir() / "edited"
    except (OSError, RuntimeError):  # no home directory to find the cache in
        return build()
    name = hashlib.sha256("\0".join((kind, rel, digest)).encode("utf-8", "surrogateescape")).hexdigest()
    # a text read with other headers (two plans editing a header differently) keeps each reading
    return _kept(folder, name, {"kind": kind, "path": rel, "sha256": digest}, valid or (lambda data: True),
                 build, EDITED_KEPT, variants=VARIANTS)


# The indexes this process computed or loaded, by (kind, path, SHA-256 of the text): a test run or a
# library user reading the same texts again (another copy of a checkout, an edit planned twice) gets
# them without the preprocessor or the disk. A text read with other headers (`valid` tells) keeps up
# to VARIANTS readings, the newest first. Bounded: the least recently used texts go first.
_MEMO: OrderedDict[tuple[str, str, str], list[Any]] = OrderedDict()
MEMO_SIZE = 4096
VARIANTS = 4


def _remember(key: tuple[str, str, str], data: Any) -> Any:
    _MEMO[key] = [data, *_MEMO.get(key, ())][:VARIANTS]
    _MEMO.move_to_end(key)
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)
    return data


def forget() -> None:
    """Empty the process's memo (the user cache on disk is left as it is)."""
    _MEMO.clear()


RESULTS_KEPT = 256


def executable_identity(path: str) -> str | None:
    """What names an installed program for a kept result of running it: its resolved path, size
    and modification time (a reinstalled one is another); None when the path names no file."""
    real = os.path.realpath(path)
    try:
        stat = os.stat(real)
    except OSError:
        return None
    return f"{real}\0{stat.st_size}\0{stat.st_mtime_ns}"


def cached_result(kind: str, inputs: Iterable[str | bytes], run: Callable[[], dict]) -> dict:
    """`run()` (JSON data), taken from `<cache dir>/<kind>/` when a result of exactly these
    `inputs` (everything the result depends on, in order) is kept there. A `run()` that raises is
    not kept."""
    if not cache_enabled():
        return run()
    digest = hashlib.sha256()
    for part in inputs:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    key = digest.hexdigest()
    try:
        folder = cache_dir() / kind
    except (OSError, RuntimeError):  # no home directory to find the cache in
        return run()
    return _kept(folder, key, {"kind": kind, "sha256": key}, lambda data: isinstance(data, dict), run, RESULTS_KEPT)


def _kept(folder: Path, name: str, fields: dict, usable: Callable[[Any], bool], build: Callable[[], Any],
          keep: int, variants: int = 1) -> Any:
    """The data kept in `folder/name.json` when its `fields` are these and `usable(data)`, else
    `build()` kept there (a build that raises is not) beside up to `variants - 1` earlier data of
    the same fields that were not usable this time, newest first; the `keep` most recently used
    files of the folder stay."""
    path = folder / f"{name}.json"
    stored = _load(path)
    earlier = []
    if stored is not None and stored.get("format") == FORMAT and all(stored.get(k) == v for k, v in fields.items()) \
            and isinstance(stored.get("variants"), list):
        earlier = stored["variants"]
        for data in earlier:
            if usable(data):
                try:
                    os.utime(path)  # recently used: kept when older ones go
                except OSError:
                    pass
                return data
    data = build()
    _store(path, {"format": FORMAT, **fields, "variants": [data, *earlier][:variants]})
    _prune(folder, keep)
    return data


def _prune(folder: Path, keep: int) -> None:
    """Remove the least recently used results of `folder` beyond the `keep` newest."""
    try:
        names = [e for e in os.scandir(folder) if e.name.endswith(".json")]
        if len(names) <= keep:  # the common case: no file's age is needed
            return
        entries = [(e.stat().st_mtime_ns, e.path) for e in names]
    except OSError:
        return
    for _, path in sorted(entries)[: len(entries) - keep]:
        try:
            os.unlink(path)
        except OSError:
            pass


def _load(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def _store(path: Path, stored: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(stored, handle, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:  # Ctrl-C included: it must not turn into the OSError below
            try:
                os.unlink(tmp)
            except OSError:
                pass  # already renamed into place
            raise
    except OSError:
        pass  # an unwritable cache directory: run without the cache
