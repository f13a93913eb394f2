"""The complex list is edited only for keys whose OpInfo tests a complex dtype on MPS. 2.14.0 compiles
nan_to_num for float2/half2 and still leaves it out of 2.13's `SUPPORTED_COMPLEX_OPS`: its OpInfo
tests integers, bool and floats only, so an entry would change none of its tests
(`mpsgen.facts.rules.complex_untested`). mpsgen registers the complex kernels all the same, leaves
the list as it is and says why in the summary (a `kept` note at the list)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.edit.testlists import plan_testlist_edits
from mpsgen.read.testlists import complex_list, parse_testlists

from conftest import Golden
from support import changed_files, copy_checkout, run_cli, snapshot

HERE = Path(__file__).resolve().parent
REL = "torch/testing/_internal/common_mps.py"
KERNEL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
SUPPORTED = HERE / "data" / "testlists" / "common_mps_supported_complex.py"
UNSUPPORTED = (HERE / "data" / "testlists" / "common_mps_unsupported_complex.py").read_text(encoding="utf-8")
COMPLEX_KERNEL = torch_dtypes_for(("float", "integer", "complex", "bool"))
def _listed(text: str) -> frozenset[str]:
    return complex_list(parse_testlists(text, REL)).keys


WHY = "its OpInfo (m.py:1) tests no complex dtype on MPS, so the complex list changes none of its tests"


def test_migrate_nan_to_num_leaves_the_supported_list_as_2_14_did(tmp_path):
    root = copy_checkout(tmp_path)
    shutil.copyfile(SUPPORTED, root / REL)  # the 2.13 shape of the list
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "nan_to_num"])
    assert result.exit_code == 0, result.output
    after = snapshot(root)
    # the kernel registers complex (2.14.0's pairs), the list is byte-identical
    assert REL not in changed_files(before, after)
    kernel = after[KERNEL].decode()
    assert "REGISTER_UNARY_ALPHA_OP(nan_to_num, float2, NanToNumParams_float, float2);" in kernel
    assert "REGISTER_UNARY_ALPHA_OP(nan_to_num, half2, NanToNumParams_float, half2);" in kernel
    assert (f"note: {REL}:11: kept SUPPORTED_COMPLEX_OPS['nan_to_num']: not added: its OpInfo "
            "(torch/testing/_internal/common_methods_invocations.py:341) tests no complex dtype on MPS, so the "
            "complex list changes none of its tests whatever the kernel registers") in result.output
    assert "added-complex" not in result.output
    # verify's test-lists rule is the same rule: no finding for the missing entry
    check = run_cli(["-C", str(root), "verify", "nan_to_num", "--static-only"])
    assert check.exit_code == 0, check.output
    again = run_cli(["-C", str(root), "migrate", "nan_to_num"])
    assert again.exit_code == 0 and snapshot(root) == after


def test_an_untested_key_is_not_added():
    text = SUPPORTED.read_text(encoding="utf-8")
    after, changes = plan_testlist_edits(text, REL, ("sgn",), COMPLEX_KERNEL, True, complex_untested={"sgn": WHY})
    assert after == text
    assert [(c.action, c.dict_name, c.key, c.location.line, c.detail) for c in changes] == [
        ("kept", "SUPPORTED_COMPLEX_OPS", "sgn", 11, f"not added: {WHY}")]
    # 2.15's shape: a listed key leaves the list of failing ones all the same (its claim is untrue)
    after, changes = plan_testlist_edits(UNSUPPORTED, REL, ("sgn",), COMPLEX_KERNEL, True, complex_untested={"sgn": WHY})
    assert "sgn" not in _listed(after)
    assert [(c.action, c.key) for c in changes if c.dict_name == "UNSUPPORTED_COMPLEX_OPS"] == [("removed-complex", "sgn")]


def test_a_tested_key_still_joins_the_list():
    """The other key of the same call, tested with complex, is added as before (golden)."""
    text = SUPPORTED.read_text(encoding="utf-8")
    after, changes = plan_testlist_edits(text, REL, ("sgn", "nan_to_num"), COMPLEX_KERNEL, True,
                                         complex_untested={"nan_to_num": WHY})
    Golden("testlists").check("complex_untested_sgn_added", Golden.unified(REL, text, after))
    assert [(c.action, c.key) for c in changes] == [("kept", "nan_to_num"), ("added-complex", "sgn")]
    again, _ = plan_testlist_edits(after, REL, ("sgn", "nan_to_num"), COMPLEX_KERNEL, True,
                                   complex_untested={"nan_to_num": WHY})
    assert again == after
