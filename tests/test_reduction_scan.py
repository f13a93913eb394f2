"""scan's `reduce` tier on the reduction overlay: prod (a catalog reduction served by the MPSGraph
helper) is a `reduce` candidate whose migration was planned in memory; mean (no catalog body) is a
`port` with the reason; linalg__powsum (ord picks the sum op's load mode) is a new-op `reduce`
candidate, and is not when the kernel file's sum op takes no load mode, new-op saying why."""

from __future__ import annotations

import json

from reduction_support import reduction_checkout
from support import run_cli


def candidates(root, *args):
    result = run_cli(["-C", str(root), "scan", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    listed = set(doc["candidates"])
    return {r["op"]: r["candidate"] for r in doc["ops"] if r["op"] in listed}


def test_reduce_tier(tmp_path):
    root = reduction_checkout(tmp_path)
    found = candidates(root, "--candidates")
    assert (found["prod"]["tier"], found["prod"]["reason"]) == ("reduce", "reduction (prod_stub), reduction catalog body")
    assert found["mean"]["tier"] == "port"
    assert found["mean"]["reason"] == "mean is a reduction (mean_stub) with no functor in mpsgen's reduction catalog"
    assert set(candidates(root, "--tier", "reduce")) == {"prod"}
    result = run_cli(["-C", str(root), "scan", "--candidates", "--format", "plain"])
    # threshold_backward is ready (its migration registers threshold_stub's kernel), gelu(_backward) from cpu,
    # mse_loss and smooth_l1_loss from their graphs (their bodies at opmath, nearer float64 than CPU)
    assert "candidates: 28 ready, 1 reductions ready, 4 need --expr, 7 need a hand-written port" in result.output


def test_powsum_is_a_new_op_reduction_and_refused_without_load_modes(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "scan", "--new-op", "--json"])
    assert '"linalg__powsum"' in result.stdout
    result = run_cli(["-C", str(root), "scan", "--new-op", "--format", "plain"])
    assert any(line.split()[1:3] == ["linalg__powsum", "reduce"] for line in result.output.splitlines() if line.strip())
    # a kernel file whose summing op takes no load mode (the op's load sees the element alone)
    path = root / "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
    text = path.read_text()
    path.write_text(text.replace("template <typename T, LoadMode MODE = LOAD_IDENTITY>\nstruct SumOp {",
                                 "template <typename T>\nstruct SumOp {\n  static constexpr LoadMode MODE = LOAD_IDENTITY;"))
    result = run_cli(["-C", str(root), "scan", "--new-op", "--json"])
    assert '"linalg__powsum"' not in result.stdout
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 2
    assert "SumOp takes no LoadMode template argument" in result.stderr


def test_try_show_source_names_a_native_reduction_and_try_refuses_one_without_kernels(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "try", "sum", "--show-source"])
    assert result.exit_code == 2
    assert ("sum is a native Metal reduction (sum_stub -> sum_kernel_mps: 64 sum_reduction* kernels in "
            "aten/src/ATen/native/mps/kernels/ReduceOps.metal); --show-source shows elementwise try kernels; "
            "`mpsgen try` runs a reduction's op struct") in " ".join(result.stderr.split())
    result = run_cli(["-C", str(root), "try", "prod"])
    assert result.exit_code == 2 and "give it one with `mpsgen migrate prod`" in result.stderr
