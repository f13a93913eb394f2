"""What differs by release, on the real-size checkouts of 2.15.0 (newest) and 2.13.0 (older): the test
lists' complex vocabulary and the expectations no kernel fixes."""

from __future__ import annotations

import pytest

from mpsgen.read.testlists import complex_list, parse_testlists

from conftest import Golden
from support import run_cli, sampled, snapshot

pytestmark = pytest.mark.realfiles

COMMON_MPS = "torch/testing/_internal/common_mps.py"
CMI = "torch/testing/_internal/common_methods_invocations.py"
CONVERSION = "Trying to convert ComplexDouble to the MPS backend"


def _read(root, rel):
    return (root / rel).read_text(encoding="utf-8")


def test_each_release_says_what_its_complex_list_means(real_torch_files, real_torch_files_older):
    newer = complex_list(parse_testlists(_read(real_torch_files, COMMON_MPS), COMMON_MPS))
    older = complex_list(parse_testlists(_read(real_torch_files_older, COMMON_MPS), COMMON_MPS))
    assert (newer.name, newer.supported) == ("UNSUPPORTED_COMPLEX_OPS", False)
    assert (older.name, older.supported) == ("SUPPORTED_COMPLEX_OPS", True)
    assert "linalg.eig" in newer.keys and "sgn" in older.keys


def test_migrate_sgn_on_2_15_leaves_the_unsupported_complex_list_and_keeps_conversion_failures(real_checkout):
    """sgn gains complex kernels: on 2.15 its key leaves UNSUPPORTED_COMPLEX_OPS (put there first, as it
    stood while its complex tests failed); the `_refs.sgn` complex32 expected failures, whose reason is
    that the backend cannot convert ComplexDouble, stay."""
    path = real_checkout / COMMON_MPS
    text = _read(real_checkout, COMMON_MPS)
    path.write_text(text.replace('            "renorm",\n', '            "renorm",\n            "sgn",\n', 1), encoding="utf-8")
    before = _read(real_checkout, COMMON_MPS)
    cmi = _read(real_checkout, CMI)
    assert cmi.count(CONVERSION) >= 1
    result = run_cli(["-C", str(real_checkout), "migrate", "sgn", "--format", "plain"])
    assert result.exit_code == 0, result.output
    Golden("testlists").check("real_2_15_sgn_unsupported_complex", Golden.unified(COMMON_MPS, before, _read(real_checkout, COMMON_MPS)))
    assert _read(real_checkout, CMI) == cmi
    assert "kept skips['_refs.sgn']" in result.output and "MPS backend's dtype support" in result.output
    after = snapshot(real_checkout)
    again = run_cli(["-C", str(real_checkout), "migrate", "sgn"])
    assert again.exit_code == 0 and snapshot(real_checkout) == after


def test_migrate_sgn_on_2_13_keeps_conversion_failures_and_its_supported_key(real_checkout_older):
    before = snapshot(real_checkout_older)
    result = run_cli(["-C", str(real_checkout_older), "migrate", "sgn", "--format", "plain"])
    assert result.exit_code == 0, result.output
    after = snapshot(real_checkout_older)
    assert after[CMI] == before[CMI]
    assert after[COMMON_MPS].decode().count('"sgn",') == before[COMMON_MPS].decode().count('"sgn",')
    assert "kept skips['_refs.sgn']" in result.output


@pytest.mark.parametrize("checkout", ["real_checkout", "real_checkout_older"])
def test_round_decimals_variants_are_not_the_round_kernels(checkout, request):
    """`rounddecimals_0` passes `decimals=0`: it calls `round.decimals`, whose stub is not `round_stub`;
    its integer expected failure (kept by upstream in 2.13 and 2.15) is not round's to judge."""
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.rules import test_keys
    from mpsgen.facts.views import Views, read_op
    from mpsgen.read.checkout import Checkout

    root = request.getfixturevalue(checkout)
    assert '"rounddecimals_0"' in _read(root, COMMON_MPS)
    facts = read_op(Views(Workspace(Checkout(root))), "round")
    assert facts.stub.name == "round_stub"
    assert test_keys(facts) == ("round",)


# what scan finds ready on the 2.15 real-size checkout (the wheel's files + the miniature's host and
# kernel files): the miniature's ops that 2.15 still serves with MPSGraph; threshold_backward through
# the recorded call of threshold_stub (a wheel has no Activation.cpp: mpsgen/facts/recorded.py);
# huber_loss's body from its MPSGraph graph gives NaN where a difference is infinite (CPU: inf), as
# the graph does: beyond what upstream's test samples (finite values), named in the check's note
READY_2_15 = ("smooth_l1_loss", "frac", "signbit", "sign", "huber_loss", "sgn", "mse_loss", "threshold", "_prelu_kernel",
              "threshold_backward", "hardtanh_backward")


def test_scan_ready_candidates_of_2_15(real_checkout):
    import json

    result = run_cli(["-C", str(real_checkout), "scan", "--tier", "ready", "--json"])
    assert result.exit_code == 0, result.output
    assert tuple(json.loads(result.stdout)["candidates"]) == READY_2_15


# Run in every run (each migrates, verifies and formats a real-size checkout: CI runs all five): a
# unary float op and a params op with its scalars.
LOCAL_READY = ("frac", "threshold")


@pytest.mark.parametrize("op", sampled(READY_2_15, LOCAL_READY))
def test_each_ready_candidate_of_2_15_migrates_verifies_and_adds_clean_lines(real_checkout, op):
    import shutil

    from support import PYTORCH_CLANG_FORMAT
    from test_commands_agree import run_and_verify
    from test_format import added_lines_to_rewrite

    shutil.copy(PYTORCH_CLANG_FORMAT, real_checkout / ".clang-format")
    before = snapshot(real_checkout)
    run_and_verify(real_checkout, "migrate", [op])
    added, bad = added_lines_to_rewrite(before, snapshot(real_checkout))
    assert added > 0 and bad == []
