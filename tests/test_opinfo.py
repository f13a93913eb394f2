"""common_methods_invocations.py: find an op's OpInfos fast, drop the MPS failures its kernel fixes."""

from __future__ import annotations

import ast

from pathlib import Path

import libcst as cst
import pytest

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.read.opinfo import evaluate_dtypes, find_opinfos
from mpsgen.edit.opinfo import plan_opinfo_edits
from mpsgen.read.opinfo import tested_dtypes as dtypes_tested
from support import sampled

CMI = "torch/testing/_internal/common_methods_invocations.py"
FIXTURE_ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
FIXTURE = (FIXTURE_ROOT / CMI).read_text()


def reasons_for(op):
    """The rule new-op/migrate apply to `op` of the miniature (every shared line names MPS after the
    change); None for OpInfo names that are no yaml op of the miniature."""
    from mpsgen.read.checkout import Checkout
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.views import Views, read_op
    from mpsgen.facts.rules import missing_op_rule

    views = Views(Workspace(Checkout(FIXTURE_ROOT)))
    if not views.native_functions.op_entries(op):
        return None
    return missing_op_rule(read_op(views, op), after_change=True)


def edit(op, groups, text=FIXTURE):
    refs = find_opinfos(text, CMI, op)
    tested = {r.name: dtypes_tested(r) for r in refs if r.kind != "python-ref"}

    def tested_of(ref):
        return tested.get(ref.torch_opinfo_name) if ref.kind == "python-ref" else dtypes_tested(ref)

    return refs, *plan_opinfo_edits(text, CMI, refs, torch_dtypes_for(groups), reasons=reasons_for(op), tested=tested_of)


GOLDEN_CASES = {
    "opinfo_asinh_consistency_xfail_with_comment": ("asinh", ("float", "int2float", "complex")),
    "opinfo_mish_dtypesIfMPS_and_ref_skips": ("mish", ("float", "int2float")),
    "opinfo_xlogy_inline_tuple": ("xlogy", ("float", "int2float")),
    "opinfo_heaviside_keeps_behaviour_failures": ("heaviside", ("float", "integer")),
    "opinfo_logit_helper_dtypes": ("logit", ("float", "int2float")),
    "opinfo_frac_one_line_skips": ("frac", ("float",)),
    "opinfo_sgn_expectedFailureMPS": ("sgn", ("float", "integer", "complex")),
    "opinfo_sign_skipMPS_kept_for_float_only": ("sign", ("float",)),
    "opinfo_laguerre_whole_skips_kept_partially": ("special_laguerre_polynomial_l", ("float", "int2float")),
    "opinfo_div_variants": ("div", ("float", "integer")),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_diff(case, golden_testlists):
    op, groups = GOLDEN_CASES[case]
    refs, after, changes = edit(op, groups)
    report = "".join(f"# {c}\n" for c in changes)
    golden_testlists.check(case, report + golden_testlists.unified(CMI, FIXTURE, after))
    compile(after, CMI, "exec")
    again = edit(op, groups, after)[1]
    assert again == after, "a second run must change nothing"


@pytest.mark.parametrize(
    ("op", "keys"),
    [
        ("asinh", ["asinh", "_refs.asinh"]),
        ("mish", ["nn.functional.mish", "_refs.nn.functional.mish"]),
        ("mish_backward", ["nn.functional.mish", "_refs.nn.functional.mish"]),  # aten_backward_name
        ("sigmoid_backward", ["sigmoid", "_refs.sigmoid"]),
        ("tanh_backward", ["tanh"]),
        ("glu", ["nn.functional.glu"]),  # aten_name
        ("hardswish", ["nn.functional.hardswish"]),
        ("special_ndtri", ["special.ndtri"]),
        ("special_laguerre_polynomial_l", ["special.laguerre_polynomial_l"]),
        ("div", ["divno_rounding_mode", "divtrunc_rounding", "_refs.div"]),
    ],
)
def test_op_maps_to_its_opinfos(op, keys):
    assert [r.key for r in find_opinfos(FIXTURE, CMI, op)] == keys


def test_ref_fields():
    asinh, ref = find_opinfos(FIXTURE, CMI, "asinh")
    assert (asinh.kind, asinh.aliases, asinh.variant_test_name) == ("UnaryUfuncInfo", ("arcsinh",), "")
    assert asinh.dtypes == "all_types_and_complex_and(torch.bool, torch.half, torch.bfloat16)"
    assert FIXTURE.splitlines()[asinh.location.line - 1].strip().startswith("UnaryUfuncInfo('asinh'")
    assert FIXTURE[asinh.span[0] : asinh.span[1]].endswith("))")
    assert (ref.kind, ref.torch_opinfo_name, ref.call) == ("python-ref", "asinh", "ElementwiseUnaryPythonRefInfo")
    glu = find_opinfos(FIXTURE, CMI, "glu")[0]
    assert glu.aten_name == "glu" and glu.kind == "OpInfo"


def test_names_in_strings_and_comments_do_not_confuse_the_scanner():
    # the fixture mentions "mish" and 'OpInfo(' inside a comment and a string before op_db
    assert find_opinfos(FIXTURE, CMI, "addcmul")[0].location.line > 20


def test_unknown_op_names_close_matches():
    with pytest.raises(MpsgenError) as info:
        find_opinfos(FIXTURE, CMI, "asinhh")
    assert "asinh" in (info.value.hint or "")
    assert str(info.value.location).startswith(CMI)


def test_unbalanced_call_reports_its_line():
    broken = FIXTURE.replace("BinaryUfuncInfo('hypot',", "BinaryUfuncInfo('hypot', [", 1)
    with pytest.raises(MpsgenError) as info:
        find_opinfos(broken[: broken.index("BinaryUfuncInfo('nextafter'")], CMI, "hypot")
    line = FIXTURE[: FIXTURE.index("BinaryUfuncInfo('hypot',")].count("\n") + 1
    assert info.value.location.line == line


def test_tolerance_overrides_and_other_devices_stay():
    _, after, changes = edit("asinh", ("float", "int2float", "complex"))
    assert "toleranceOverride({torch.float32: tol(atol=1e-4" in after
    assert "device_type='cpu', dtypes=[torch.cfloat, torch.cdouble]" in after
    assert any(c.action == "kept" and "tolerance" in c.detail for c in changes)


def test_partial_dtype_coverage_keeps_the_decorator():
    _, after, changes = edit("copysign", ("float",))
    assert after == FIXTURE
    assert [c.action for c in changes] == ["kept", "kept", "kept"]
    assert "the kernel does not register bool, int8, uint8" in changes[0].detail
    assert "its reason is other behaviour, not a missing operator" in changes[1].detail
    # the reason is that MPS lacks copysign_: fixed by the kernel only for the dtypes it registers
    assert "but the kernel does not register bool, int16, int32, int64, int8, uint8" in changes[2].detail
    assert "narrow it with dtypes=" in changes[2].detail and not changes[2].missing_op


def test_dtype_evaluation():
    def evaluate(source: str):
        return evaluate_dtypes(ast.parse(source, mode="eval").body)

    assert evaluate("integral_types()") == {"uint8", "int8", "int16", "int32", "int64"}
    assert evaluate("(torch.half, torch.long)") == {"float16", "int64"}
    assert evaluate("all_types_and(torch.bool, torch.half)") == {"float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool", "float16"}
    assert evaluate("get_all_dtypes()") is None
    assert dtypes_tested(find_opinfos(FIXTURE, CMI, "frac")[0]) == {"float32", "float16"}


# --- the real file from the PyTorch 2.13.0 wheel ---------------------------------------------------

REAL_OPS = {
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
    "atan2": ("float", "int2float"),
    "xlogy": ("float", "int2float"),
}
EXPECTED_KEYS = {
    "mish": "nn.functional.mish",
    "softplus": "nn.functional.softplus",
    "sigmoid_backward": "sigmoid",
    "tanh_backward": "tanh",
    "glu": "nn.functional.glu",
    "logit": "logit",
}


# Run in every run (each plans, compiles and diffs the 1 MB real file: CI runs all fourteen): a
# complex-capable unary op, an nn.functional key, a backward op tested under its forward's key.
LOCAL_REAL_OPS = ("asinh", "mish", "sigmoid_backward")


@pytest.mark.realfiles
@pytest.mark.parametrize("op", sampled(sorted(REAL_OPS), LOCAL_REAL_OPS))
def test_real_opinfo_edit(real_torch_files, golden_testlists, op):
    text = (real_torch_files / CMI).read_text()
    refs = find_opinfos(text, CMI, op)
    after, changes = plan_opinfo_edits(text, CMI, refs, torch_dtypes_for(REAL_OPS[op]))
    keys = [r.key for r in refs if r.kind != "python-ref"]
    assert EXPECTED_KEYS.get(op, op) in keys
    compile(after, CMI, "exec")
    # every changed line lies inside one of the op's calls
    diff = golden_testlists.unified(CMI, text, after).splitlines()
    spans = [(text[: r.span[0]].count("\n") + 1, text[: r.span[1]].count("\n") + 1) for r in refs]
    line = 0
    for row in diff:
        if row.startswith("@@"):
            line = int(row.split()[1].split(",")[0][1:]) - 1
        elif row.startswith("-") and not row.startswith("---"):
            line += 1
            assert any(a <= line <= b for a, b in spans), (op, line, row)
        elif row.startswith(" "):
            line += 1
    # the edited calls still parse on their own, and decorators outside MPS are all still there
    for ref in find_opinfos(after, CMI, op):
        cst.parse_expression(after[ref.span[0] : ref.span[1]])
    assert after.count("device_type='cpu'") == text.count("device_type='cpu'")
    assert after.count("toleranceOverride") == text.count("toleranceOverride")
    removed = [c for c in changes if c.action == "removed-decorator"]
    assert text.count("DecorateInfo(") - after.count("DecorateInfo(") == len(removed)
    # what MPS tests is never narrowed: every dtypesIfMPS= argument is still there, unchanged
    assert [r.dtypes_if_mps for r in find_opinfos(after, CMI, op)] == [r.dtypes_if_mps for r in refs]


@pytest.mark.realfiles
def test_real_definitions_file(real_torch_files):
    special = (real_torch_files / "torch/testing/_internal/opinfo/definitions/special.py").read_text()
    refs = find_opinfos(special, "torch/testing/_internal/opinfo/definitions/special.py", "special_ndtri")
    assert "special.ndtri" in [r.key for r in refs]
    after, _ = plan_opinfo_edits(special, "special.py", refs, torch_dtypes_for(("float", "int2float")))
    compile(after, "special.py", "exec")


def test_try_reads_an_ops_opinfo_once_for_its_domain_samples_and_tolerances(monkeypatch):
    """try's three readings of the OpInfo (domain=, sample_inputs_func=, the MPS toleranceOverride)
    take one reading of the file (read.opinfo.opinfo_calls): one find_opinfos, whatever the order."""
    from mpsgen.commands.tryop.branchvalues import opinfo_domain, samples_finite_parts
    from mpsgen.commands.tryop.tolerances import opinfo_tolerances
    from mpsgen.read import opinfo as opinfo_module
    from mpsgen.read.checkout import Checkout
    from support import FIXTURE_CHECKOUT

    calls = []
    real = opinfo_module.find_opinfos
    monkeypatch.setattr(opinfo_module, "find_opinfos", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    opinfo_module._calls_of.cache_clear()
    checkout = Checkout(FIXTURE_CHECKOUT)
    assert opinfo_domain(checkout, "atanh") == (-1.0, 1.0)
    tolerances = opinfo_tolerances(checkout, "atanh")
    assert {dtype: (t.rtol, t.atol) for dtype, t in tolerances.items()} == {"float16": (1e-3, 1e-3)}
    assert samples_finite_parts(checkout, "atanh") is True  # a UnaryUfuncInfo's default samples
    assert opinfo_domain(Checkout(FIXTURE_CHECKOUT), "atanh") == (-1.0, 1.0)  # another Checkout, the same text
    assert calls == ["atanh"]
    assert opinfo_module.opinfo_calls(checkout, "no_such_op") == ()
