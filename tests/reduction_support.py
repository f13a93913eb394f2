"""The reduction overlay of the miniature checkout (`fixtures/reduce/`): the reduction family's files
in the real files' shapes (our own text), laid over a copy of `fixtures/pytorch`, its yaml entries
appended to the copy's native_functions.yaml and its common_mps.py entries (`common_mps.inserts`)
inserted into the copy's lists."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from support import FIXTURE_CHECKOUT, REPO

REDUCE_OVERLAY = REPO / "fixtures" / "reduce"
YAML = "aten/src/ATen/native/native_functions.yaml"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
REDUCE_OPINFOS = "torch/testing/_internal/opinfo/definitions/reductions.py"
_NOT_COPIED = frozenset({"native_functions.append.yaml", "common_mps.inserts"})
REDUCE_METAL = "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
REDUCE_MM = "aten/src/ATen/native/mps/operations/ReduceOps.mm"


def reduction_checkout(tmp_path: Path) -> Path:
    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_CHECKOUT, dest)
    for path in REDUCE_OVERLAY.rglob("*"):
        rel = path.relative_to(REDUCE_OVERLAY)
        if path.is_dir() or rel.name in _NOT_COPIED:
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
    with open(dest / YAML, "a", encoding="utf-8", newline="") as handle:
        handle.write((REDUCE_OVERLAY / "native_functions.append.yaml").read_text(encoding="utf-8"))
    insert_lines(dest / COMMON_MPS, (REDUCE_OVERLAY / "common_mps.inserts").read_text(encoding="utf-8"))
    return dest


def insert_lines(path: Path, inserts: str) -> None:
    """Each `@@ after ANCHOR` block's lines go after the one line whose stripped text is ANCHOR."""
    lines = path.read_text(encoding="utf-8").splitlines(True)
    for block in re.split(r"^@@ after ", inserts, flags=re.M)[1:]:
        anchor, _, body = block.partition("\n")
        found = [i for i, line in enumerate(lines) if line.strip() == anchor.strip()]
        assert len(found) == 1, (path, anchor)
        lines[found[0] + 1:found[0] + 1] = body.splitlines(True)
    path.write_text("".join(lines), encoding="utf-8")


def header_reader(root: Path):
    """`read(rel)` of a header as the kernel reader takes it (the checkout's root, then aten/src)."""
    def read(rel):
        path = root / rel if (root / rel).exists() else root / "aten/src" / rel
        return path.read_text() if path.exists() else None

    return read


def assert_edit_goldens(before: dict[str, bytes], after: dict[str, bytes], rels, golden_prefix: str) -> None:
    """Each file's unified diff equals tests/golden/reduction/<golden_prefix><file name>.diff."""
    import difflib
    import os

    from support import assert_golden

    for rel in rels:
        diff = "".join(difflib.unified_diff(before[rel].decode().splitlines(True), after[rel].decode().splitlines(True),
                                            f"a/{rel}", f"b/{rel}"))
        assert_golden(diff, f"reduction/{golden_prefix}{os.path.basename(rel)}.diff")
