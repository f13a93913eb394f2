"""An MPS expected failure on a dtype the CPU reference does not support stays, whatever the kernel
registers: MPS's consistency tests compare with the CPU op, so the test keeps failing (upstream 2.13
registers silu for integers and keeps their xfail). The same entry for a dtype the CPU supports is
a leftover the kernel fixes, and verify reports it."""

from __future__ import annotations

import json
from pathlib import Path

from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.views import Views
from mpsgen.commands.verify.checks import check_op

from support import copy_checkout, run_cli

CMI = "torch/testing/_internal/common_methods_invocations.py"
COMMON_MPS = "torch/testing/_internal/common_mps.py"

# the miniature's abs: its kernel registers int, long, short, char, uchar, the floats and complex
ABS_DTYPES = "dtypes=all_types_and_complex_and(torch.half, torch.bfloat16, torch.bool),"
CPU_FLOATS_ONLY = ("dtypes=floating_types_and(torch.half, torch.bfloat16),\n"
                   "                   dtypesIfMPS=all_types_and_complex_and(torch.half, torch.bfloat16, torch.bool),")
XFAIL_ANCHOR = '            # Integer inputs were never wired up in the graph path\n'
ABS_XFAIL = '            "abs": [torch.int16, torch.int32],\n'
DECORATOR_ANCHOR = "                   skips=(\n                       DecorateInfo(unittest.skip(\"In-place abs"
ABS_DECORATOR = ("                   skips=(\n"
                 "                       DecorateInfo(unittest.expectedFailure, 'TestConsistency', 'test_output_match',\n"
                 "                                    device_type='mps', dtypes=(torch.int16,)),\n"
                 "                       DecorateInfo(unittest.skip(\"In-place abs")


def _abs_with_integer_expectations(tmp_path: Path, *, cpu_supports_integers: bool) -> Path:
    root = copy_checkout(tmp_path)
    cmi = (root / CMI).read_text()
    assert cmi.count(ABS_DTYPES) == 1 and cmi.count(DECORATOR_ANCHOR) == 1
    cmi = cmi.replace(DECORATOR_ANCHOR, ABS_DECORATOR)
    if not cpu_supports_integers:
        cmi = cmi.replace(ABS_DTYPES, CPU_FLOATS_ONLY)
    (root / CMI).write_text(cmi)
    mps = (root / COMMON_MPS).read_text()
    assert mps.count(XFAIL_ANCHOR) == 1
    (root / COMMON_MPS).write_text(mps.replace(XFAIL_ANCHOR, XFAIL_ANCHOR + ABS_XFAIL))
    return root


def _test_lists(root: Path, op: str):
    results = check_op(Views(Workspace(Checkout(root))), op)
    return next(r for r in results if r.check == "test-lists")


def _line_of(root: Path, rel: str, needle: str) -> int:
    lines = (root / rel).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def test_expectations_on_dtypes_the_cpu_lacks_are_not_leftovers(tmp_path):
    root = _abs_with_integer_expectations(tmp_path, cpu_supports_integers=False)
    result = _test_lists(root, "abs")
    assert result.findings == ()
    report = json.loads(run_cli(["-C", str(root), "verify", "abs", "--static-only", "--json"]).stdout)
    assert [f for f in report["findings"] if f["check"] == "test-lists"] == []


def test_the_same_expectations_are_leftovers_when_the_cpu_supports_the_dtypes(tmp_path):
    root = _abs_with_integer_expectations(tmp_path, cpu_supports_integers=True)
    found = sorted((f.location.path, f.location.line, f.message) for f in _test_lists(root, "abs").findings)
    xfail_line = _line_of(root, COMMON_MPS, ABS_XFAIL.strip())
    decorator_line = _line_of(root, CMI, "device_type='mps', dtypes=(torch.int16,)") - 1
    assert found == [
        (CMI, decorator_line, "OpInfo 'abs' still has an MPS expected failure/skip the kernel fixes: expected "
                              "failure for TestConsistency.test_output_match on int16: now registered"),
        (COMMON_MPS, xfail_line, "UNIMPLEMENTED_XFAILLIST['abs'] still expects a failure the kernel fixes: "
                                 "every listed dtype is now covered: [torch.int16, torch.int32]"),
    ]
