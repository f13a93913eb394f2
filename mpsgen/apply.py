"""What a Plan becomes: a unified diff, a JSON document, or files changed on disk atomically."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.model import FileEdit, Plan, sha256_text

NO_NEWLINE = "\\ No newline at end of file\n"


def file_diff(edit: FileEdit, context: int = 3) -> str:
    """A `git apply`-able unified diff of one file, with `a/` and `b/` prefixes."""
    before = edit.before.splitlines(keepends=True)
    after = edit.after.splitlines(keepends=True)
    out = []
    old_name = f"a/{edit.path}" if edit.before or not edit.after else "/dev/null"
    for line in difflib.unified_diff(before, after, old_name, f"b/{edit.path}", n=context):
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\n") + "\n")
            continue
        if not line.endswith("\n"):
            out.append(line + "\n" + NO_NEWLINE)
        else:
            out.append(line)
    header = f"diff --git a/{edit.path} b/{edit.path}\n"
    return header + "".join(out)


def render_diff(plan: Plan) -> str:
    return "".join(file_diff(edit) for edit in plan.edits if edit.changed)


def plan_to_json(plan: Plan, *, command: str, applied: bool) -> dict:
    return {
        "command": command,
        "ops": list(plan.ops),
        "applied": applied,
        "files": [
            {"path": e.path, "diff": file_diff(e), "added": _count(e, "+"), "removed": _count(e, "-")}
            for e in plan.edits
        ],
        "changes": [{"kind": c.kind, "path": c.location.path, "line": c.location.line, "detail": c.detail} for c in plan.changes],
        "notes": list(plan.notes),
    }


def _count(edit: FileEdit, sign: str) -> int:
    other = "+++" if sign == "+" else "---"
    return sum(1 for line in file_diff(edit).splitlines() if line.startswith(sign) and not line.startswith(other))


def line_counts(plan: Plan) -> tuple[int, int]:
    return sum(_count(e, "+") for e in plan.edits), sum(_count(e, "-") for e in plan.edits)


def apply_plan(plan: Plan, *, _write_hook=None) -> list[str]:
    """Write every edited file atomically: each new text goes to a temp file in the same directory,
    is fsynced, then renamed over the original. Before anything is written, every file is checked
    to still hold the text the plan was made from. If any step fails, files already replaced get
    their original bytes back and the error names the file that failed."""
    root = Path(plan.root)
    targets = []
    for edit in plan.edits:
        path = root / edit.path
        current = path.read_bytes().decode("utf-8") if path.exists() else ""
        if sha256_text(current) != edit.before_sha256:
            raise MpsgenError(
                f"{edit.path} changed after mpsgen read it",
                hint="nothing was written; run the command again",
            )
        targets.append((edit, path))
    replaced: list[tuple[Path, bytes | None, int | None]] = []
    written = []
    try:
        for edit, path in targets:
            original = path.read_bytes() if path.exists() else None
            mode = path.stat().st_mode & 0o7777 if path.exists() else None
            if _write_hook:
                _write_hook(edit.path)
            _atomic_write(path, edit.after.encode("utf-8"), mode)
            replaced.append((path, original, mode))
            written.append(edit.path)
    except BaseException as exc:
        for path, original, mode in reversed(replaced):
            if original is None:
                path.unlink(missing_ok=True)
            else:
                _atomic_write(path, original, mode)
        failed = targets[len(replaced)][0].path if len(replaced) < len(targets) else "?"
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise MpsgenError(
            f"writing {failed} failed: {exc}",
            hint="every file was restored to its original content",
        ) from exc
    return written


def _atomic_write(path: Path, data: bytes, mode: int | None) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mpsgen-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
