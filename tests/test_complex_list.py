"""common_mps.py's complex list, read with its meaning from the file: 2.13 lists the ops whose complex
tests pass (`SUPPORTED_COMPLEX_OPS`, tested with `not in`), 2.15 those whose complex tests fail
(`UNSUPPORTED_COMPLEX_OPS`, tested with `in`). A kernel registering complex joins the first and leaves
the second."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.edit.testlists import plan_testlist_edits
from mpsgen.read.testlists import ComplexList, complex_list, parse_testlists

from conftest import Golden

HERE = Path(__file__).resolve().parent
REL = "torch/testing/_internal/common_mps.py"
UNSUPPORTED = (HERE / "data" / "testlists" / "common_mps_unsupported_complex.py").read_text(encoding="utf-8")
SUPPORTED = (HERE / "data" / "testlists" / "common_mps_supported_complex.py").read_text(encoding="utf-8")
MINIATURE = (HERE.parent / "fixtures" / "pytorch" / REL).read_text(encoding="utf-8")
COMPLEX_KERNEL = torch_dtypes_for(("float", "integer", "complex", "bool"))


def _list(text: str) -> ComplexList | None:
    return complex_list(parse_testlists(text, REL))


def test_the_two_shapes_are_read_with_their_meaning():
    older, newer = _list(SUPPORTED), _list(UNSUPPORTED)
    assert (older.name, older.supported) == ("SUPPORTED_COMPLEX_OPS", True)
    assert (newer.name, newer.supported) == ("UNSUPPORTED_COMPLEX_OPS", False)
    assert newer.keys == {"cumulative_trapezoid", "nn.functional.mish", "sgn", "special.erfcx"}
    # listed: expected to fail on 2.15; absent: expected to pass
    assert not newer.complex_expected(["sgn"]) and newer.complex_expected(["frac"])
    assert older.complex_expected(["abs"]) and not older.complex_expected(["sgn"])
    # the miniature checkout has the 2.15 shape
    assert _list(MINIATURE).name == "UNSUPPORTED_COMPLEX_OPS" and not _list(MINIATURE).supported


def test_a_complex_kernel_joins_the_supported_list():
    after, changes = plan_testlist_edits(SUPPORTED, REL, ("sgn",), COMPLEX_KERNEL, True)
    assert [(c.action, c.dict_name, c.key) for c in changes] == [("added-complex", "SUPPORTED_COMPLEX_OPS", "sgn")]
    assert after == SUPPORTED.replace('        "randn",\n', '        "randn",\n        "sgn",\n')


@pytest.mark.parametrize(("test", "supported"), [("key not in LISTED_COMPLEX_OPS", True), ("key in LISTED_COMPLEX_OPS", False)])
def test_the_meaning_is_how_the_file_tests_the_set_not_its_name(test, supported):
    text = f'def modifier(ops):\n    LISTED_COMPLEX_OPS = {{"a", "b"}}\n    for key in ops:\n        if {test}:\n            pass\n'
    assert _list(text) == ComplexList("LISTED_COMPLEX_OPS", supported, frozenset({"a", "b"}))


def test_without_a_membership_test_the_name_decides():
    assert not _list('UNSUPPORTED_COMPLEX_OPS = {"a"}\n').supported
    assert _list('SUPPORTED_COMPLEX_OPS = {"a"}\n').supported
    assert _list('X = {"a"}\n') is None


def test_a_complex_kernel_takes_its_key_out_of_the_unsupported_list():
    after, changes = plan_testlist_edits(UNSUPPORTED, REL, ("sgn",), COMPLEX_KERNEL, True)
    Golden("testlists").check("sgn_unsupported_complex_removed", Golden.unified(REL, UNSUPPORTED, after))
    assert [(c.action, c.dict_name, c.key, c.location.line) for c in changes if c.action.endswith("complex")] == [
        ("removed-complex", "UNSUPPORTED_COMPLEX_OPS", "sgn", 14)]
    again, changes = plan_testlist_edits(after, REL, ("sgn",), COMPLEX_KERNEL, True)
    assert again == after and not [c for c in changes if c.action.endswith("complex")]


def test_no_complex_kernel_no_complex_change():
    after, changes = plan_testlist_edits(UNSUPPORTED, REL, ("sgn",), torch_dtypes_for(("float",)), False)
    assert '"sgn",\n' in after and not [c for c in changes if c.action.endswith("complex")]


def test_a_key_absent_from_the_unsupported_list_is_not_added():
    after, changes = plan_testlist_edits(UNSUPPORTED, REL, ("frac",), COMPLEX_KERNEL, True)
    assert after == UNSUPPORTED and changes == ()
