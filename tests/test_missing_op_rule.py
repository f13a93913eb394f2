"""rules.MissingOpRule: which stated reasons say MPS lacks the op a change serves, and what
new-op/verify do with them on the miniature."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.views import Views, read_op
from mpsgen.read.opinfo import find_opinfos
from mpsgen.facts.rules import AMBIGUOUS, BACKEND_DTYPE, MISSING_OP, NO_REASON, OTHER, OTHER_OP, MissingOpRule, missing_op_rule, served_overloads
from support import copy_checkout, run_cli

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
CMI = "torch/testing/_internal/common_methods_invocations.py"
COMMON_MPS = "torch/testing/_internal/common_mps.py"

LERP_FILES = ["--kernel-file", "PointwiseOps.metal", "--host-file", "PointwiseOps.mm"]
HEAVISIDE = MissingOpRule(frozenset({"heaviside.out", "heaviside", "heaviside_"}), frozenset({"heaviside"}))


@pytest.mark.parametrize(
    ("comment", "message", "kind", "operator"),
    [
        ("# NotImplementedError: The operator 'aten::heaviside.out' is not currently implemented for the MPS device",
         "", MISSING_OP, "heaviside.out"),
        ("# Error: The operator 'aten::heaviside_' is not currently implemented for the MPS device", "", MISSING_OP, "heaviside_"),
        ("# The operator 'aten::heaviside' is not currently implemented for the MPS device", "", MISSING_OP, "heaviside"),
        # wrapped over three comment lines
        ("# NotImplementedError: The operator\n# 'aten::heaviside.out' is not currently implemented\n# for the MPS device",
         "", MISSING_OP, "heaviside.out"),
        ("# `aten::heaviside.out` is not supported on MPS", "", MISSING_OP, "heaviside.out"),
        ("", "aten::heaviside.out is not implemented for MPS", MISSING_OP, "heaviside.out"),
        ("# some comment", "aten::heaviside.out is not implemented for MPS", MISSING_OP, "heaviside.out"),
        # another operator, another overload
        ("# NotImplementedError: The operator 'aten::_linalg_svd.U' is not currently implemented for the MPS device",
         "", OTHER_OP, "_linalg_svd.U"),
        ("# The operator 'aten::heaviside.Scalar_out' is not currently implemented for the MPS device", "", OTHER_OP,
         "heaviside.Scalar_out"),
        ("# TODO: remove once downstream function 'aten::erfinv.out' has been implemented", "", OTHER_OP, "erfinv.out"),
        ("# Failures due to lack of implementation of downstream functions on MPS backend", "", OTHER_OP, ""),
        # the missing op and more
        ("# The operator 'aten::heaviside.out' is not currently implemented for the MPS device; "
         "with it, results mismatch on NaN", "", AMBIGUOUS, "heaviside.out"),
        # unnamed: ambiguous on a decorator
        ("# Skip due to NotImplementedError for MPS device.", "", AMBIGUOUS, ""),
        ("# NotImplementedError: log_softmax for complex is not supported for MPS", "", AMBIGUOUS, ""),
        # other behaviour
        ("# RuntimeError: heaviside is not yet implemented for tensors with different dtypes.", "", OTHER, ""),
        ("# AssertionError: RuntimeError not raised", "Skipped!", OTHER, ""),
        # the backend's dtype support: no kernel fixes it
        ("# TypeError: Trying to convert ComplexDouble to the MPS backend but it does not have support for that dtype.",
         "", BACKEND_DTYPE, ""),
        ("# Cannot convert a MPS Tensor to float64 dtype: MPS does not support float64", "", BACKEND_DTYPE, ""),
        ("", "float64 is not supported on MPS", BACKEND_DTYPE, ""),
        ("", "", NO_REASON, ""),
    ],
)
def test_reasons(comment, message, kind, operator):
    reason = HEAVISIDE.judge(comment, message)
    assert (reason.kind, reason.operator) == (kind, operator)
    assert reason.fixed == (kind == MISSING_OP)


def test_unnamed_reason_of_a_common_mps_entry_names_its_key():
    assert HEAVISIDE.judge("# Failures due to lack of op implementation on MPS backend", entry_is_op=True).kind == MISSING_OP
    assert HEAVISIDE.judge("# No MPS implementation at all", entry_is_op=True).kind == MISSING_OP
    assert HEAVISIDE.judge("# Convolution for integral types is not supported on MPS", entry_is_op=True).kind == AMBIGUOUS
    assert HEAVISIDE.judge("# No MPS implementation at all").kind == AMBIGUOUS


def test_the_quote_is_the_part_that_says_so():
    reason = HEAVISIDE.judge("# The operator 'aten::heaviside.out' is not currently implemented for the MPS device", "Skipped!")
    assert reason.quote == "The operator 'aten::heaviside.out' is not currently implemented for the MPS device"
    assert HEAVISIDE.judge("# unrelated", "aten::heaviside.out is not implemented for MPS").quote == (
        "aten::heaviside.out is not implemented for MPS")


def test_served_overloads_follow_the_yaml():
    views = Views(Workspace(Checkout(FIXTURE)))
    heaviside = read_op(views, "heaviside")
    assert served_overloads(heaviside, after_change=False) == frozenset()  # not on MPS yet
    assert served_overloads(heaviside, after_change=True) == {"heaviside.out", "heaviside", "heaviside_"}
    lerp = read_op(views, "lerp", overloads=("Tensor_out",))
    rule = missing_op_rule(lerp, after_change=True)
    assert "lerp.Scalar_out" not in rule.served and "lerp_.Tensor" in rule.served
    reason = rule.judge("# The operator\n# 'aten::lerp.Scalar_out' is not currently implemented\n# for the MPS device")
    assert (reason.kind, reason.overload) == (OTHER_OP, True)
    assert "an overload this change does not serve" in reason.why_kept()


def test_new_op_notes_say_why_each_mps_expectation_stays(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "nextafter", "--dry-run", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    assert ("removed-decorator  skips['nextafter']: skip for TestCommon.test_variant_consistency_eager: its reason is "
            "that MPS lacks the op ('aten::nextafter.out is not implemented for MPS'); the kernel adds it") in result.stderr
    assert ("kept skips['nextafter']: skip for TestCommon.test_noncontiguous_samples: its reason says MPS lacks an "
            "operator but may be about more") in result.stderr
    lerp = run_cli(["-C", str(root), "new-op", "lerp", "--overload", "Tensor_out", "--stub", "lerp_kernel_tensor_weight",
                    "--expr", "a + c * (b - a)", *LERP_FILES, "--dry-run", "--format", "plain"])
    assert lerp.exit_code == 0, lerp.stderr
    assert CMI not in lerp.stdout  # the decorator blames lerp.Scalar_out: this change does not serve it
    assert "MPS lacks aten::lerp.Scalar_out, an overload this change does not serve" in lerp.stderr


def _test_lists_findings(root: Path, op: str) -> list:
    from mpsgen.commands.verify.checks import check_op

    results = check_op(Views(Workspace(Checkout(root))), op)
    return [f for r in results if r.check == "test-lists" for f in r.findings]


def test_verify_reports_expectations_left_for_an_op_that_has_its_kernel(tmp_path):
    root = copy_checkout(tmp_path)
    before = {rel: (root / rel).read_bytes() for rel in (CMI, COMMON_MPS)}
    assert run_cli(["-C", str(root), "new-op", "heaviside"]).exit_code == 0
    assert _test_lists_findings(root, "heaviside") == []
    # the kernel in place, the test files as they were: what verify says of a change that forgot them
    for rel, data in before.items():
        (root / rel).write_bytes(data)
    findings = _test_lists_findings(root, "heaviside")
    text = before[CMI].decode()
    spans = [ref.span for ref in find_opinfos(text, CMI, "heaviside")]
    starts = [0, *[i + 1 for i, ch in enumerate(text) if ch == "\n"]]
    expected = [n + 1 for n, start in enumerate(starts)
                if any(a <= start < b for a, b in spans) and "'TestCommon'" in text[start:text.find("\n", start)]]
    missing_op = [f for f in findings if "expects MPS to lack the op; it no longer does" in f.message]
    assert [(f.location.path, f.location.line) for f in missing_op if f.location.path == CMI] == [(CMI, n) for n in expected]
    assert len(expected) == 5  # test_out, test_out_warning, test_dtypes; _refs: torch_fallback, python_ref
    assert any(f.location.path == COMMON_MPS and "UNIMPLEMENTED_XFAILLIST['heaviside']" in f.message for f in missing_op)
    # the TestConsistency failure goes by the older rule, with its own message
    assert any("still has an MPS expected failure/skip the kernel fixes" in f.message for f in findings)
    result = run_cli(["-C", str(root), "verify", "heaviside", "--static-only", "--format", "plain"])
    assert result.exit_code == 1
    assert f"{CMI}:{expected[0]}: OpInfo 'heaviside' expects MPS to lack the op; it no longer does" in result.stdout


def test_verify_keeps_silent_on_other_operators_and_unserved_overloads(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "special_ndtri"]).exit_code == 0
    assert _test_lists_findings(root, "special_ndtri") == []
    assert "aten::erfinv.out" in (root / COMMON_MPS).read_text()  # waits on another operator: kept
