"""Per-file indexes kept under `<checkout>/.mpsgen/cache/`: safe to delete, never stale.

An index is JSON data computed from one file's text (e.g. where every OpInfo call starts in
common_methods_invocations.py). It is stored with the file's size, mtime and the SHA-256 of the text
it was computed from, and used only when the text at hand hashes to that SHA-256: the hash is the
key, size and mtime only say which version was seen. A missing, corrupt, foreign-version or
mismatching cache file is ignored and rebuilt; writes go to a temporary file renamed into place, and
a checkout that cannot be written to simply runs without the cache. `MPSGEN_NO_CACHE=1` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_DIR = ".mpsgen/cache"
FORMAT = 2  # 2: OpInfo calls on commented-out lines are not indexed


def cache_enabled() -> bool:
    return os.environ.get("MPSGEN_NO_CACHE", "") in ("", "0")


def cache_file(root: Path, kind: str, rel: str) -> Path:
    return root / CACHE_DIR / f"{kind}--{rel.replace('/', '__')}.json"


def cached_index(root: Path | None, rel: str, text: str, kind: str, build: Callable[[], Any]) -> Any:
    """`build()` (JSON data computed from `text`, the current text of `rel`), taken from the cache
    when it holds the index of exactly this text. `root=None` (e.g. text edited in memory) builds."""
    if root is None or not cache_enabled():
        return build()
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    path = cache_file(root, kind, rel)
    stored = _load(path)
    if stored is not None and stored.get("format") == FORMAT and stored.get("kind") == kind \
            and stored.get("path") == rel and stored.get("sha256") == digest and "data" in stored:
        return stored["data"]
    data = build()
    try:
        stat = (root / rel).stat()
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    except OSError:
        size, mtime_ns = None, None
    _store(path, {"format": FORMAT, "kind": kind, "path": rel, "size": size, "mtime_ns": mtime_ns,
                  "sha256": digest, "data": data})
    return data


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
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# mpsgen's index cache: safe to delete\n*\n", encoding="utf-8")
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(stored, handle, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only checkout runs without the cache
