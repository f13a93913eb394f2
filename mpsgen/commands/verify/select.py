"""Which ops `mpsgen verify` checks: named ones, those a git diff touches, or every native one."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.facts.perdevice import per_device_native_ops
from mpsgen.facts.views import Views, all_native_ops as shared_native_ops, unknown_op
from mpsgen.read.checkout import NATIVE_FUNCTIONS

__all__ = ["all_native_ops", "changed_ops", "check_op_names"]


def all_native_ops(views: Views) -> tuple[str, ...]:
    """`--all-native`: the ops served on MPS through a shared line's stub, and the per-device ops
    whose MPS functions call their stub for kMPS (`mpsgen.facts.perdevice`)."""
    found = set(shared_native_ops(views)) | set(per_device_native_ops(views))
    return tuple(op for op in views.native_functions.op_names if op in found)


def check_op_names(views: Views, ops: tuple[str, ...]) -> tuple[str, ...]:
    """The ops, validated against native_functions.yaml (an unknown name is bad input, exit 2)."""
    nf = views.native_functions
    for op in ops:
        if not nf.op_entries(op):
            raise unknown_op(nf, op)
    return tuple(dict.fromkeys(ops))


_IDENT_PATTERNS = (
    re.compile(r"\bstruct\s+(\w+)_functor\b"),
    re.compile(r"\bREGISTER_\w+\s*\(\s*(\w+)"),
    re.compile(r"\bREGISTER_DISPATCH\s*\(\s*(\w+)_stub\b"),
    re.compile(r"\bexec_\w+_kernel\w*\s*\(\s*\w+\s*,\s*\"(\w+)\""),
    re.compile(r"\bTORCH_IMPL_FUNC\s*\(\s*(\w+?)(?:_out)?_mps\b"),
)


def changed_ops(views: Views, base: str = "HEAD") -> tuple[str, ...]:
    """Ops touched by the working tree's diff against `base` (and by untracked files): yaml entries
    whose lines changed, and the op names that changed `.metal`/`.mm` lines mention (functors,
    REGISTER_* lines, REGISTER_DISPATCH stubs, exec_*_kernel names, TORCH_IMPL_FUNC names)."""
    root = views.checkout.root
    diff = _git(root, ["diff", "--relative", "--no-color", "--no-ext-diff", "-U0", base, "--", "."])
    untracked = _git(root, ["ls-files", "--others", "--exclude-standard", "--", "."]).splitlines()
    nf = views.native_functions
    names: list[str] = []
    yaml_lines: set[int] = set()
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("--- a/") and current is None:
            continue
        elif line.startswith("@@") and current == NATIVE_FUNCTIONS:
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                yaml_lines.update(range(start, start + max(count, 1)))
        elif line[:1] in "+-" and not line.startswith(("+++", "---")) and current and current.endswith((".metal", ".mm")):
            names.extend(_idents(line[1:]))
    for rel in untracked:
        if rel.endswith((".metal", ".mm")):
            names.extend(_idents((root / rel).read_text(encoding="utf-8", errors="replace")))
    ops: list[str] = []
    for entry in nf.entries:
        first, last = entry.location.line, entry.location.line + nf.text[entry.start : entry.end].count("\n")
        if any(first <= n <= last for n in yaml_lines):
            ops.append(entry.base)
    for name in names:
        for candidate in (name, f"special_{name}"):
            if nf.op_entries(candidate):
                ops.append(candidate)
                break
    return tuple(dict.fromkeys(ops))


def _idents(text: str) -> list[str]:
    return [m.group(1) for pattern in _IDENT_PATTERNS for m in pattern.finditer(text)]


def _git(root: Path, args: list[str]) -> str:
    try:
        result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise MpsgenError("--changed needs git, which is not installed", hint="install git or name the ops") from None
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["git failed"])[-1]
        raise MpsgenError(f"git {args[0]} failed: {message}", hint="run inside a git checkout, or check --base REF")
    return result.stdout
