"""The reduction overlay of the miniature checkout (`fixtures/reduce/`): the reduction family's files
in the real files' shapes (our own text), laid over a copy of `fixtures/pytorch`, its yaml entries
appended to the copy's native_functions.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import FIXTURE_CHECKOUT, REPO

REDUCE_OVERLAY = REPO / "fixtures" / "reduce"
YAML = "aten/src/ATen/native/native_functions.yaml"
REDUCE_METAL = "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
REDUCE_MM = "aten/src/ATen/native/mps/operations/ReduceOps.mm"


def reduction_checkout(tmp_path: Path) -> Path:
    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_CHECKOUT, dest)
    for path in REDUCE_OVERLAY.rglob("*"):
        rel = path.relative_to(REDUCE_OVERLAY)
        if path.is_dir() or rel.name == "native_functions.append.yaml":
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
    with open(dest / YAML, "a", encoding="utf-8", newline="") as handle:
        handle.write((REDUCE_OVERLAY / "native_functions.append.yaml").read_text(encoding="utf-8"))
    return dest
