"""What a Plan becomes: a unified diff, a JSON document, or files changed on disk atomically."""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.model import FileEdit, Plan
from mpsgen.read.checkout import path_inside

NO_NEWLINE = "\\ No newline at end of file\n"


def file_diff(edit: FileEdit, context: int = 3) -> str:
    """A `git apply`-able unified diff of one file, with `a/` and `b/` prefixes.

    Only the region between the first and last differing line is handed to difflib (with its
    context), so a two-line edit of a 27,000-line file costs what a two-line file would."""
    return _file_diff_cached(edit.path, edit.before, edit.after, context, edit.created)


@functools.lru_cache(maxsize=64)
def _file_diff_cached(path: str, before_text: str, after_text: str, context: int, created: bool = False) -> str:
    before = before_text.splitlines(keepends=True)
    after = after_text.splitlines(keepends=True)
    out = [f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
    if created:  # git apply creates the file only from a /dev/null side
        out[1:2] = ["new file mode 100644\n", "--- /dev/null\n"]
    for group in _grouped(text_opcodes(before_text, after_text), context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_lines(" ", before[i1:i2]))
                continue
            out.extend(_lines("-", before[i1:i2]))
            out.extend(_lines("+", after[j1:j2]))
    return "".join(out)


@functools.lru_cache(maxsize=64)
def text_opcodes(before: str, after: str) -> tuple[tuple[str, int, int, int, int], ...]:
    """`line_opcodes` of two texts' lines (keepends), once per pair of texts: the Workspace's report
    lines, the added-line formatting and the rendered diff all ask about the same edits."""
    return tuple(line_opcodes(before.splitlines(keepends=True), after.splitlines(keepends=True)))


def line_opcodes(before: list[str], after: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes for the whole files, computed on the region between the common prefix
    and suffix only: an edit near the top of a 27,000-line file costs what a small file does."""
    limit = min(len(before), len(after))
    prefix = 0
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    middle = difflib.SequenceMatcher(
        None, before[prefix : len(before) - suffix], after[prefix : len(after) - suffix], autojunk=False
    ).get_opcodes()
    codes = [("equal", 0, prefix, 0, prefix)] if prefix else []
    codes += [(tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix) for tag, i1, i2, j1, j2 in middle]
    if suffix:
        codes.append(("equal", len(before) - suffix, len(before), len(after) - suffix, len(after)))
    return _slide_to_blank_lines(codes, before, after)


def _slide_to_blank_lines(codes, before, after):
    """A block inserted or deleted between equal lines can often be shown at several positions
    (`}` and a blank line repeat). Show it where it ends with a blank line, as a person would:
    the whole function removed, not the previous one's closing brace."""
    codes = [list(code) for code in codes]
    for k in range(1, len(codes) - 1):
        tag = codes[k][0]
        prev, code, nxt = codes[k - 1], codes[k], codes[k + 1]
        if tag not in ("insert", "delete") or prev[0] != "equal" or nxt[0] != "equal":
            continue
        seq, lo, hi = (before, code[1], code[2]) if tag == "delete" else (after, code[3], code[4])
        up = 0
        while up < prev[2] - prev[1] and seq[lo - 1 - up] == seq[hi - 1 - up]:
            up += 1
        down = 0
        while down < nxt[2] - nxt[1] and seq[lo + down] == seq[hi + down]:
            down += 1
        shift = next((s for s in range(down, -up - 1, -1) if not seq[hi - 1 + s].strip()), 0)
        if shift:
            prev[2] += shift
            prev[4] += shift
            code[1:5] = [code[1] + shift, code[2] + shift, code[3] + shift, code[4] + shift]
            nxt[1] += shift
            nxt[3] += shift
    return [tuple(code) for code in codes if code[0] != "equal" or code[2] > code[1]]


def _grouped(codes, context: int):
    """Hunks: changes with `context` equal lines around them; equal runs longer than twice the
    context split hunks (the grouping unified diffs use)."""
    if not codes:
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _lines(sign: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        out.append(sign + line if line.endswith("\n") else f"{sign}{line}\n{NO_NEWLINE}")
    return out


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
        "notes": [
            {"kind": n.kind, "message": n.message, "path": n.location.path if n.location else None,
             "line": n.location.line if n.location else None}
            for n in plan.notes
        ],
        "steps": list(plan.steps),
    }


def _count(edit: FileEdit, sign: str) -> int:
    other = "+++" if sign == "+" else "---"
    return sum(1 for line in file_diff(edit).split("\n") if line.startswith(sign) and not line.startswith(other))


def line_counts(plan: Plan) -> tuple[int, int]:
    return sum(_count(e, "+") for e in plan.edits), sum(_count(e, "-") for e in plan.edits)


@dataclass
class _Target:
    """One file about to be replaced: where it really is, and what to put back if the run fails."""

    edit: FileEdit
    path: Path
    original: bytes | None
    stat: os.stat_result | None


def apply_plan(plan: Plan, *, _write_hook=None) -> list[str]:
    """Write every edited file atomically: each new text goes to a temp file in the same directory,
    is fsynced, then renamed over the original (mode and owner kept; the text already carries the
    file's own line endings). Before anything is written, every file is checked to still hold the
    bytes the plan was made from, and to lie inside the checkout. If any step fails (an exception,
    a full disk, Ctrl-C), files already replaced get their original bytes back and the error names
    the file that failed; KeyboardInterrupt is re-raised after the restore. `_write_hook(path)` is
    called before each file is written (tests inject failures with it)."""
    root = Path(plan.root)
    targets = [_prepare(root, edit) for edit in plan.edits]
    replaced: list[_Target] = []
    current: _Target | None = None
    try:
        for target in targets:
            current = target
            if _write_hook:
                _write_hook(target.edit.path)
            _check_unchanged(target, _current_bytes(target.path))
            _atomic_write(target.path, target.edit.after.encode("utf-8"), target.stat)
            replaced.append(target)
        current = None
    except BaseException as exc:
        failed = current.edit.path if current is not None else "?"
        if current is not None and _landed(current):
            replaced.append(current)  # the failure came after its rename (Ctrl-C, the directory fsync)
        unrestored = _restore(replaced)
        if unrestored:
            raise MpsgenError(
                f"writing {failed} failed ({_reason(exc)}) and {', '.join(unrestored)} could not be restored",
                hint="restore those files from git (git checkout -- FILE) or your editor",
            ) from exc
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        if isinstance(exc, MpsgenError):
            raise
        raise MpsgenError(
            f"writing {failed} failed: {_reason(exc)}",
            hint="every file was restored to its original content",
        ) from exc
    return [target.edit.path for target in replaced]


def _prepare(root: Path, edit: FileEdit) -> _Target:
    path = path_inside(root, edit.path)
    try:
        original = _current_bytes(path)
        stat = path.stat() if original is not None else None
    except OSError as exc:
        raise MpsgenError(f"{edit.path}: cannot read it before writing: {_reason(exc)}", hint="nothing was written") from None
    target = _Target(edit, path, original, stat)
    _check_unchanged(target, original)
    return target


def _current_bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def _check_unchanged(target: _Target, current: bytes | None) -> None:
    """The file must still hold the bytes the plan was computed from (compared by sha256), and
    the bytes read just before writing must be those read when the apply started."""
    if hashlib.sha256(current or b"").hexdigest() != target.edit.before_sha256 or current != target.original:
        raise MpsgenError(
            f"{target.edit.path} changed after mpsgen read it",
            hint="no file was left modified; run the command again",
        )


def _landed(target: _Target) -> bool:
    """Whether the target already holds the new bytes: then it was replaced and needs restoring."""
    try:
        return _current_bytes(target.path) == target.edit.after.encode("utf-8") != target.original
    except OSError:
        return False


def _restore(replaced: list[_Target]) -> list[str]:
    """Put back the original bytes of every replaced file, newest first; returns those that failed."""
    failed = []
    for target in reversed(replaced):
        try:
            if target.original is None:
                target.path.unlink(missing_ok=True)
            else:
                _atomic_write(target.path, target.original, target.stat)
        except BaseException:  # keep restoring the others, even on a second Ctrl-C
            failed.append(target.edit.path)
    return failed


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return str(exc) or type(exc).__name__


def _atomic_write(path: Path, data: bytes, stat: os.stat_result | None) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mpsgen-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if stat is None:  # a new file: the mode any editor's save would give it, not mkstemp's 0600
            os.chmod(tmp, 0o666 & ~_umask())
        else:
            os.chmod(tmp, stat.st_mode & 0o7777)
            if (stat.st_uid, stat.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, stat.st_uid, stat.st_gid)
                except OSError:
                    pass  # not permitted: the file becomes ours, as with any editor's save
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; some file systems cannot open a directory, which is fine."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
