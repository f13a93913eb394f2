"""common_mps.py: xfail dicts found by shape, one op's keys edited, everything else untouched."""

from __future__ import annotations


import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.read.opinfo import find_opinfos
from mpsgen.read.opinfo import tested_dtypes as dtypes_tested
from mpsgen.read.testlists import canonical_dtype, find_xfail_dicts
from mpsgen.edit.testlists import plan_testlist_edits

from pathlib import Path

FIXTURE_CHECKOUT = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"

REL = "torch/testing/_internal/common_mps.py"
CMI = "torch/testing/_internal/common_methods_invocations.py"
FIXTURE = (FIXTURE_CHECKOUT / REL).read_text()
FIXTURE_CMI = (FIXTURE_CHECKOUT / CMI).read_text()


def opinfo_dtypes_for(op: str, text: str = FIXTURE_CMI) -> dict[str, frozenset[str]]:
    return {r.key: dtypes_tested(r) for r in find_opinfos(text, CMI, op) if r.kind != "python-ref" and dtypes_tested(r)}


def plan(keys, groups, complex_supported=False, **kwargs):
    return plan_testlist_edits(FIXTURE, REL, tuple(keys), torch_dtypes_for(groups), complex_supported, **kwargs)


GOLDEN_CASES = {
    # case: (keys, groups, complex_supported, kwargs)
    "asinh_int2float": (("asinh",), ("float", "int2float"), True, {}),
    "mish_complex_sorted_insert": (("nn.functional.mish",), ("float", "int2float", "complex"), True, {}),
    "heaviside_none_with_opinfo_dtypes": (("heaviside",), ("float", "integer"), False, {"op": "heaviside"}),
    "atan2_float_partial_lists": (("atan2",), ("float",), False, {}),
    "ndtri_group_comment_stays": (("special.ndtri",), ("float", "int2float"), False, {"op": "special_ndtri"}),
    "whole_group_goes_with_comment": (
        ("heaviside", "nextafter", "special.ndtri", "special.laguerre_polynomial_l"),
        ("float", "integer"),
        False,
        {"tested": {k: frozenset(torch_dtypes_for(("float", "integer"))) for k in ("heaviside", "nextafter", "special.ndtri", "special.laguerre_polynomial_l")}},
    ),
    "addcmul_aliases": (("addcmul",), ("float", "integer"), False, {}),
    "atanh_drop_undefined": (("atanh",), ("float", "int2float", "complex"), True, {"drop_undefined": True}),
    "sigmoid_backward_grad_lists": (("sigmoid",), ("float", "int2float", "complex"), True, {"backward": True}),
    "hardswish_duplicate_keys": (("nn.functional.hardswish",), ("float",), False, {}),
    "remainder_keeps_float64_and_precision": (("remainder",), ("float", "integer"), False, {}),
}


# The miniature's ops behind each case's keys: their served overloads judge the entries' comments.
CASE_OPS = {
    "asinh_int2float": ("asinh",),
    "mish_complex_sorted_insert": ("mish",),
    "heaviside_none_with_opinfo_dtypes": ("heaviside",),
    "atan2_float_partial_lists": ("atan2",),
    "ndtri_group_comment_stays": ("special_ndtri",),
    "whole_group_goes_with_comment": ("heaviside", "nextafter", "special_ndtri", "special_laguerre_polynomial_l"),
    "addcmul_aliases": ("addcmul",),
    "atanh_drop_undefined": ("atanh",),
    "sigmoid_backward_grad_lists": ("sigmoid_backward",),
    "hardswish_duplicate_keys": ("hardswish",),
    "remainder_keeps_float64_and_precision": ("remainder",),
}


def reasons_for(ops):
    """The rule new-op/migrate judge the ops' entries by (after the change)."""
    from mpsgen.read.checkout import Checkout
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.views import Views, read_op
    from mpsgen.facts.rules import MissingOpRule, missing_op_rule

    views = Views(Workspace(Checkout(FIXTURE_CHECKOUT)))
    rules = [missing_op_rule(read_op(views, op), after_change=True) for op in ops]
    return MissingOpRule(frozenset().union(*(r.served for r in rules)), frozenset().union(*(r.bases for r in rules)))


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_diff(case, golden_testlists):
    keys, groups, complex_supported, extra = GOLDEN_CASES[case]
    kwargs = {"reasons": reasons_for(CASE_OPS[case])}
    if "op" in extra:
        kwargs["tested_dtypes"] = opinfo_dtypes_for(extra["op"])
    if "tested" in extra:
        kwargs["tested_dtypes"] = extra["tested"]
    for name in ("drop_undefined", "backward"):
        if name in extra:
            kwargs[name] = extra[name]
    after, changes = plan(keys, groups, complex_supported, **kwargs)
    report = "".join(f"# {c}\n" for c in changes)
    golden_testlists.check(case, report + golden_testlists.unified(REL, FIXTURE, after))
    compile(after, REL, "exec")
    again, _ = plan_testlist_edits(after, REL, keys, torch_dtypes_for(groups), complex_supported, **kwargs)
    assert again == after, "a second run must change nothing"


def test_dicts_are_found_by_shape_in_functions_and_if_branches():
    names = [(d.name, d.section) for d in find_xfail_dicts(FIXTURE, REL)]
    assert ("BEFORE_15_XFAILLIST", "forward") in names  # inside `if MACOS_VERSION < 15.0:`
    assert ("XFAILLIST_GRAD", "grad") in names
    assert ("SKIPLIST_GRAD", "grad") in names
    assert all(name != "SUPPORTED_COMPLEX_OPS" for name, _ in names)
    assert all(name != "XFAILLIST" for name, _ in names)  # a set, not a dtype dict


def test_dict_entries_carry_locations_and_values():
    table = next(d for d in find_xfail_dicts(FIXTURE, REL) if d.name == "UNIMPLEMENTED_XFAILLIST")
    entry = next(e for e in table.entries if e.key == "addcmul")
    assert entry.dtypes == ("int64", "long")
    assert FIXTURE.splitlines()[entry.location.line - 1].strip().startswith('"addcmul"')


def test_none_entry_kept_when_opinfo_dtypes_unknown_and_kernel_lacks_complex():
    after, changes = plan(("heaviside",), ("float", "integer"))
    assert after == FIXTURE
    assert {c.action for c in changes} == {"kept"}
    assert "complex64" in changes[0].detail


def test_float_only_kernel_keeps_integer_entries():
    after, changes = plan(("acosh",), ("float",))
    assert after == FIXTURE
    assert [c.action for c in changes] == ["kept"]


def test_undefined_entries_reported_not_removed():
    _, changes = plan(("atanh",), ("float", "int2float", "complex"), True)
    kept = [c for c in changes if c.action == "kept"]
    assert [c.dict_name for c in kept] == ["UNDEFINED_XFAILLIST"]


def test_complex_key_added_once():
    after, changes = plan(("nn.functional.mish",), ("float", "complex"), True)
    assert [c.action for c in changes].count("added-complex") == 1
    assert after.count('"nn.functional.mish",\n') == 1


def test_other_keys_unchanged_on_fixture():
    after, _ = plan(("nn.functional.mish", "asinh"), ("float", "int2float", "complex"), True)
    before_d = {(d.name, e.key, e.dtypes) for d in find_xfail_dicts(FIXTURE, REL) for e in d.entries}
    after_d = {(d.name, e.key, e.dtypes) for d in find_xfail_dicts(after, REL) for e in d.entries}
    gone = before_d - after_d
    assert {k for _, k, _ in gone} == {"nn.functional.mish", "asinh"} and after_d < before_d


def test_syntax_error_reports_line():
    broken = FIXTURE.replace('"frac": [torch.int64],', '"frac": [torch.int64,,', 1)
    with pytest.raises(MpsgenError) as info:
        plan_testlist_edits(broken, REL, ("frac",), frozenset({"int64"}), False)
    assert info.value.location is not None and info.value.location.path == REL
    assert info.value.location.line > 1


# --- property: lines outside the op's entries are byte-identical -----------------------------------

DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "int16", "uint8", "int8", "bool", "complex64", "half", "long", "float64")
KEYS = ("op", "other", "nn.functional.op", "op2")


@st.composite
def xfail_module(draw):
    lines = ["import torch", "", "", "def modifier(ops):", "    if True:", "        LIST = {"]
    owners: list[str | None] = [None] * len(lines)
    entries = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.lists(st.sampled_from(DTYPES), min_size=1, max_size=5)), st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=8))
    for key, dtypes, comment, multiline, blank in entries:
        if blank:
            lines.append("")
            owners.append(None)
        if comment:
            lines.append(f"            # about {key}")
            owners.append(key)
        if dtypes is None:
            lines.append(f'            "{key}": None,')
            owners.append(key)
        elif multiline:
            lines.append(f'            "{key}": [')
            lines.extend(f"                torch.{d}," for d in dtypes)
            lines.append("            ],")
            owners.extend([key] * (len(dtypes) + 2))
        else:
            lines.append(f'            "{key}": [{", ".join("torch." + d for d in dtypes)}],  # {key}')
            owners.append(key)
    lines += ["        }", "    return ops", ""]
    owners += [None, None, None]
    groups = draw(st.lists(st.sampled_from(("float", "int2float", "complex")), unique=True))
    return "\n".join(lines), owners, tuple(groups)


def _same_entry_line(new: str, old: str) -> bool:
    """An owned line whose dtype list was shortened: same text up to the list."""
    return new.split("[", 1)[0] == old.split("[", 1)[0]


@settings(max_examples=60, deadline=None)
@given(xfail_module(), st.sampled_from(KEYS))
def test_property_only_the_ops_lines_change(module, key):
    text, owners, groups = module
    after, _ = plan_testlist_edits(text, "m.py", (key,), torch_dtypes_for(groups), False)
    before_lines, after_lines = text.split("\n"), after.split("\n")
    # Independent of how a diff would align repeated lines such as `],`: every line the op does
    # not own survives, in order, and nothing is added (edited lines replace owned ones).
    kept = [line for line, owner in zip(before_lines, owners) if owner != key]
    remaining = iter(after_lines)
    assert all(any(line == candidate for candidate in remaining) for line in kept), "a line outside the op's entries changed"
    assert len(after_lines) <= len(before_lines), "lines were inserted"
    owned_text = [line for line, owner in zip(before_lines, owners) if owner == key]
    for line in after_lines:
        assert line in before_lines or any(_same_entry_line(line, old) for old in owned_text), line
    compile(after, "m.py", "exec")
    again, _ = plan_testlist_edits(after, "m.py", (key,), torch_dtypes_for(groups), False)
    assert again == after
    remaining = [e for d in find_xfail_dicts(after, "m.py") for e in d.entries if e.key == key] if after.count("torch.") or "None" in after else []
    covered = torch_dtypes_for(groups)
    for entry in remaining:
        assert entry.dtypes is None or not any(canonical_dtype(d) in covered for d in entry.dtypes)


# --- the real file from the PyTorch 2.13.0 wheel ---------------------------------------------------

REAL_OPS = {
    # aten op: dtype groups the new kernel registers
    "asinh": ("float", "int2float", "complex"),
    "acosh": ("float", "int2float", "complex"),
    "atanh": ("float", "int2float", "complex"),
    "frac": ("float",),
    "sgn": ("float", "integer", "complex"),
    "sign": ("float", "integer"),
    "mish": ("float", "int2float"),
    "softplus": ("float", "int2float"),
    "sigmoid_backward": ("float", "complex"),
    "tanh_backward": ("float", "complex"),
    "glu": ("float", "int2float"),
    "logit": ("float", "int2float"),
    "special_ndtri": ("float", "int2float"),
    "heaviside": ("float", "integer"),
}


def _entries(text):
    return {(d.name, d.location.line if False else d.name, e.key): e.dtypes for d in find_xfail_dicts(text, REL) for e in d.entries}


@pytest.mark.realfiles
@pytest.mark.parametrize("op", sorted(REAL_OPS))
def test_real_common_mps(real_torch_files, golden_testlists, op):
    unified = golden_testlists.unified
    text = (real_torch_files / REL).read_text()
    cmi = (real_torch_files / CMI).read_text()
    special = (real_torch_files / "torch/testing/_internal/opinfo/definitions/special.py").read_text()
    try:
        refs = find_opinfos(cmi, CMI, op)
    except MpsgenError:
        refs = find_opinfos(special, "special.py", op)
    refs = [r for r in refs if r.kind != "python-ref"]
    keys = tuple(r.key for r in refs)
    covered = torch_dtypes_for(REAL_OPS[op])
    backward = op.endswith("_backward")
    tested = {r.key: dtypes_tested(r) for r in refs if dtypes_tested(r)}
    after, changes = plan_testlist_edits(text, REL, keys, covered, "complex" in REAL_OPS[op], tested_dtypes=tested, backward=backward)
    compile(after, REL, "exec")
    cst.parse_module(after)
    before_entries = [(d.name, e.key, e.dtypes) for d in find_xfail_dicts(text, REL) for e in d.entries]
    after_entries = [(d.name, e.key, e.dtypes) for d in find_xfail_dicts(after, REL) for e in d.entries]
    assert [e for e in before_entries if e[1] not in keys] == [e for e in after_entries if e[1] not in keys]
    for name, key, dtypes in after_entries:
        if key in keys and dtypes and (name, key) in {(c.dict_name, c.key) for c in changes if c.action == "removed-dtypes"}:
            assert not any(canonical_dtype(d) in covered for d in dtypes)
    removed_lines = [ln[1:] for ln in unified(REL, text, after).splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added_lines = [ln[1:].strip() for ln in unified(REL, text, after).splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert all(a.strip('",') in keys for a in added_lines), added_lines
    if op == "mish":
        assert ("UNIMPLEMENTED_XFAILLIST", "nn.functional.mish") in {(c.dict_name, c.key) for c in changes if c.action == "removed-entry"}
        assert '"nn.functional.mish": [' not in after
    if op == "heaviside":
        assert '"heaviside": None' not in after and removed_lines
    if op in ("sigmoid_backward", "tanh_backward", "asinh"):
        assert after == text or all(c.action == "added-complex" for c in changes if c.action != "kept")
    again, _ = plan_testlist_edits(after, REL, keys, covered, "complex" in REAL_OPS[op], tested_dtypes=tested, backward=backward)
    assert again == after
