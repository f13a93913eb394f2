"""`migrate prod` on the reduction overlay (prod served by the MPSGraph helper `reduction_out_mps`,
which mean still uses): the exact edits (goldens), the kernels the edited file instantiates (every
routing variant for each of sum's pairs but bool), verify passes, a second run changes nothing, and
everything else is byte-identical."""

from __future__ import annotations

import json

from mpsgen.read.metalread import read_kernel
from reduction_support import (COMMON_MPS, REDUCE_METAL, REDUCE_MM, REDUCE_OPINFOS, YAML, assert_edit_goldens, header_reader,
                               reduction_checkout)
from support import changed_files, pytorch_clang_format, run_cli, snapshot

VARIANTS = ("", "_flat", "_flat_strided", "_outer", "_outer_small_dim", "_narrow", "_innermost", "_innermost_chunk")
PROD_PAIRS = (("float", "float"), ("half", "half"), ("half", "float"), ("bfloat", "bfloat"), ("bfloat", "float"),
              ("int", "long"), ("long", "long"))


def test_migrate_prod(tmp_path):
    root = reduction_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "prod"])
    assert result.exit_code == 0, result.output
    after = snapshot(root)
    assert changed_files(before, after) == {YAML, REDUCE_METAL, REDUCE_MM, COMMON_MPS, REDUCE_OPINFOS}
    assert_edit_goldens(before, after, (YAML, REDUCE_METAL, REDUCE_MM, COMMON_MPS, REDUCE_OPINFOS), "migrate_prod_")
    reading = read_kernel((root / REDUCE_METAL).read_text(), REDUCE_METAL, header_reader(root), every_kernel=True)
    prod = {name for name in reading.host_names if name.startswith("prod_")}
    assert prod == {f"prod_reduction{v}_{i}_{o}" for v in VARIANTS for i, o in PROD_PAIRS}

    # the helper stays for mean, without prod's case
    mm = (root / REDUCE_MM).read_text()
    assert "static void reduction_out_mps(" in mm and "MPSReductionType::MEAN" in mm
    assert "PROD" not in mm

    # clang-format leaves both edited files as they are (the overlay's files are formatted)
    import subprocess

    executable, style = pytorch_clang_format()
    for rel in (REDUCE_METAL, REDUCE_MM):
        formatted = subprocess.run([executable, f"--style=file:{style}", f"--assume-filename={rel}"],
                                   input=(root / rel).read_text(), capture_output=True, text=True, check=True).stdout
        assert formatted == (root / rel).read_text(), rel

    # bool: no prod kernel takes it (sum's do), so the host function converts it to the output's
    # type first (2.15 compiles no prod_reduction*_bool_* kernel, and no 2.15 list expects prod to
    # fail on bool); the summary says so at sum's bool registration
    assert ("ReduceOps.metal:309: prod registers no bool kernel (sum's bool kernels are registered here); its host "
            "function converts a bool input to the output's type and reduces it with prod's kernels for that type"
            ) in result.output
    # the tests step, by the elementwise rules with the input dtypes prod serves: the int64 and bool
    # expected failures go, the dtypes no pair takes stay; the float16 TestConsistency decorator
    # goes, TestCommon.test_out's (a behaviour of its own) stays, saying why
    assert ("UNIMPLEMENTED_XFAILLIST['prod']: removed [torch.int64, torch.bool], kept [torch.int16, torch.uint8, "
            "torch.int8] (not registered by the kernel)") in result.output
    assert "kept skips['prod']: expected failure for TestCommon.test_out on float32 is about behaviour" in result.output
    assert "test lists are not edited" not in result.output
    verify = run_cli(["-C", str(root), "verify", "prod", "--static-only", "--json"])
    assert verify.exit_code == 0, verify.output
    checks = {c["check"]: c["status"] for c in json.loads(verify.stdout)["stages"][0]["checks"]}
    assert checks["dtype-coverage"] == checks["test-lists"] == "passed"
    again = run_cli(["-C", str(root), "migrate", "prod"])
    assert again.exit_code == 0 and snapshot(root) == after
    assert "already native Metal" in again.output


def test_new_op_refuses_prod_and_migrate_refuses_a_reduction_without_a_catalog_body(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "prod"])
    assert result.exit_code == 2 and "mpsgen migrate prod" in result.output
    result = run_cli(["-C", str(root), "migrate", "mean"])
    assert result.exit_code == 2
    assert "mean is a reduction (mean_stub) with no functor in mpsgen's reduction catalog" in result.output
