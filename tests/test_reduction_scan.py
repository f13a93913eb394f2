"""scan's `reduce` tier on the reduction overlay: prod (a catalog reduction served by the MPSGraph
helper) is a `reduce` candidate whose migration was planned in memory; mean (no catalog body) is a
`port` with the reason; linalg__powsum (a scalar the kernels cannot take) is neither a migrate nor a
new-op candidate, and new-op says why."""

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
    assert "candidates: 19 ready, 1 reductions ready, 2 need --expr" in result.output


def test_powsum_is_refused_with_the_reason(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "scan", "--new-op", "--json"])
    assert "linalg__powsum" not in result.stdout
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 2
    assert ("linalg__powsum is a reduction whose stub powsum_stub passes a Scalar "
            "(void(*)(TensorIterator&, const Scalar&)), but the kernels of "
            "aten/src/ATen/native/mps/kernels/ReduceOps.metal hand an op's load the element alone") in result.stderr


def test_try_show_source_names_a_native_reduction_and_try_refuses_one_without_kernels(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "try", "sum", "--show-source"])
    assert result.exit_code == 2
    assert ("sum is a native Metal reduction (sum_stub -> sum_kernel_mps: 64 sum_reduction* kernels in "
            "aten/src/ATen/native/mps/kernels/ReduceOps.metal); --show-source shows elementwise try kernels; "
            "`mpsgen try` runs a reduction's op struct") in " ".join(result.stderr.split())
    result = run_cli(["-C", str(root), "try", "prod"])
    assert result.exit_code == 2 and "give it one with `mpsgen migrate prod`" in result.stderr
