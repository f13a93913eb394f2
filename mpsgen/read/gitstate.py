"""What git knows about the files a plan touches. Outside a git work tree, or without git, there is
nothing to report: mpsgen still works on a plain directory."""

from __future__ import annotations

import subprocess
from pathlib import Path


def uncommitted(root: Path, rels: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Those of `rels` (paths relative to the checkout) with staged, unstaged or untracked changes."""
    if not rels:
        return ()
    prefix = _git(root, "rev-parse", "--show-prefix")
    if prefix is None:
        return ()
    prefix = prefix.strip()
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rels)
    if out is None:
        return ()
    dirty = set()
    records = out.split("\0")
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if len(record) < 4:
            continue
        status, path = record[:2], record[3:]
        if "R" in status or "C" in status:
            i += 1  # the rename's source path follows
        if path.startswith(prefix):
            dirty.add(path[len(prefix):])
    return tuple(rel for rel in rels if rel in dirty)


def _git(root: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None
