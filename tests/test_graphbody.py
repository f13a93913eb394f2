"""The legacy MPSGraph graph as a body source (mpsgen/read/graphread.py, mpsgen/facts/graphbody.py):
each translation row, the graphs of the miniature's legacy kernels read at their lines, refusals that
name what they cannot translate, and derived bodies checked by `try` against torch's CPU op."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpsgen.commands.migrate import plan_migrate
from mpsgen.commands.tryop.api import TryOptions, try_op
from mpsgen.errors import MpsgenError
from mpsgen.edit.workspace import Workspace
from mpsgen.facts import graphbody
from mpsgen.facts.bodyoffer import BodyOffer, NoBody
from mpsgen.facts.graphbody import TRANSLATIONS, graph_body, translate
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views, read_op
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.cpp import find_definitions
from mpsgen.read.graphread import GraphNode, read_graph
from mpsgen.read.metalhost.compiler import find_compiler
from support import FIXTURE_CHECKOUT, copy_checkout, run_cli
from test_bodies import needs_try

DATA = Path(__file__).parent / "data" / "graph"

# every row of the table, with the Metal it must give for operands x (or a, b, c)
ROWS = {
    "additionWithPrimaryTensor:secondaryTensor:name:": "(a + b)",
    "subtractionWithPrimaryTensor:secondaryTensor:name:": "(a - b)",
    "multiplicationWithPrimaryTensor:secondaryTensor:name:": "(a * b)",
    "divisionWithPrimaryTensor:secondaryTensor:name:": "(a / b)",
    "negativeWithTensor:name:": "(-x)",
    "squareWithTensor:name:": "(x * x)",
    "reciprocalWithTensor:name:": "(1.0f / x)",
    "powerWithPrimaryTensor:secondaryTensor:name:": "pow(a, b)",
    "maximumWithPrimaryTensor:secondaryTensor:name:": "c10::metal::max(a, b)",
    "minimumWithPrimaryTensor:secondaryTensor:name:": "c10::metal::min(a, b)",
    "equalWithPrimaryTensor:secondaryTensor:name:": "(a == b)",
    "notEqualWithPrimaryTensor:secondaryTensor:name:": "(a != b)",
    "lessThanWithPrimaryTensor:secondaryTensor:name:": "(a < b)",
    "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:": "(a <= b)",
    "greaterThanWithPrimaryTensor:secondaryTensor:name:": "(a > b)",
    "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:": "(a >= b)",
    "isNaNWithTensor:name:": "isnan(x)",
    "isInfiniteWithTensor:name:": "isinf(x)",
    "isFiniteWithTensor:name:": "isfinite(x)",
    "signbitWithTensor:name:": "signbit(static_cast<float>(x))",
    "notWithTensor:name:": "(!x)",
    "logicalANDWithPrimaryTensor:secondaryTensor:name:": "(a && b)",
    "logicalORWithPrimaryTensor:secondaryTensor:name:": "(a || b)",
    "logicalXORWithPrimaryTensor:secondaryTensor:name:": "(a != b)",
    "logicalNANDWithPrimaryTensor:secondaryTensor:name:": "(!(a && b))",
    "logicalNORWithPrimaryTensor:secondaryTensor:name:": "(!(a || b))",
    "selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:": "(a ? b : c)",
    "clampWithTensor:minValueTensor:maxValueTensor:name:": "(a < b ? b : (a > c ? c : a))",
    "reLUWithTensor:name:": "max(x, 0.0f)",
    "absoluteWithTensor:name:": "abs(x)",
    "signWithTensor:name:": "((x > 0) - (x < 0))",
    "floorWithTensor:name:": "floor(x)",
    "ceilWithTensor:name:": "ceil(x)",
    "truncateWithTensor:name:": "trunc(x)",
    "roundWithTensor:name:": "rint(x)",
    "squareRootWithTensor:name:": "sqrt(x)",
    "reverseSquareRootWithTensor:name:": "rsqrt(x)",
    "exponentWithTensor:name:": "exp(x)",
    "exponentBase2WithTensor:name:": "exp2(x)",
    "exponentBase10WithTensor:name:": "exp10(x)",
    "logarithmWithTensor:name:": "log(x)",
    "logarithmBase2WithTensor:name:": "log2(x)",
    "logarithmBase10WithTensor:name:": "log10(x)",
    "sinWithTensor:name:": "sin(x)",
    "cosWithTensor:name:": "cos(x)",
    "tanWithTensor:name:": "tan(x)",
    "asinWithTensor:name:": "asin(x)",
    "acosWithTensor:name:": "acos(x)",
    "atanWithTensor:name:": "atan(x)",
    "sinhWithTensor:name:": "sinh(x)",
    "coshWithTensor:name:": "cosh(x)",
    "tanhWithTensor:name:": "tanh(x)",
    "asinhWithTensor:name:": "precise::asinh(x)",
    "acoshWithTensor:name:": "precise::acosh(x)",
    "atanhWithTensor:name:": "precise::atanh(x)",
    "atan2WithPrimaryTensor:secondaryTensor:name:": "precise::atan2(a, b)",
    "sigmoidWithTensor:name:": "(1.0f / (1.0f + exp(-x)))",
    "softPlusWithTensor:name:": "log(1.0f + exp(x))",
    "erfWithTensor:name:": "c10::metal::erf(x)",
}
BOOLEAN = {s for s in ROWS if any(w in s for w in ("equal", "Equal", "less", "greater", "isNaN", "isInfinite",
                                                   "isFinite", "signbit", "not", "logical"))}


def test_every_row_has_its_expected_metal_here():
    assert set(TRANSLATIONS) == set(ROWS)


@pytest.mark.parametrize("selector", sorted(ROWS))
def test_translation_row(selector):
    arity = selector.count(":") - 1  # every tensor keyword but name:
    operands = ("x",) if arity == 1 else ("a", "b", "c")[:arity]
    node = GraphNode("send", selector, tuple(GraphNode("input", str(i)) for i in range(arity)))
    out = translate(node, operands)
    assert out.expr == ROWS[selector]
    assert out.boolean == (selector in BOOLEAN)


@pytest.mark.parametrize(("node", "metal"), [
    (GraphNode("send", "constantWithScalar:dataType:", (GraphNode("number", "1.0"), GraphNode("dtype", "t"))), "1.0f"),
    (GraphNode("send", "constantWithScalar:shape:dataType:", (GraphNode("number", "3"), GraphNode("other", "@[ @1 ]"),
                                                                GraphNode("dtype", "t"))), "3.0f"),
    (GraphNode("send", "constantWithScalar:shape:dataType:", (GraphNode("scalar", "beta"), GraphNode("other", "@[ @1 ]"),
                                                                GraphNode("dtype", "t"))), "beta"),
    (GraphNode("cast", "ScalarType::Bool", (GraphNode("input", "0"),)), "static_cast<bool>(x)"),
    (GraphNode("cast", "MPSDataTypeFloat32", (GraphNode("input", "0"),)), "static_cast<float>(x)"),
], ids=["constant", "constant-shape-int", "constant-scalar", "cast-bool", "cast-float"])
def test_constants_and_casts(node, metal):
    assert translate(node, ("x",)).expr == metal


def _views(root: Path = FIXTURE_CHECKOUT) -> Views:
    return Views(Workspace(Checkout(root.resolve())))


MINIATURE = {
    # op: (derived Metal, output)
    "atan2": "precise::atan2(a, b)",
    "xlogy": "(((a == 0.0f) && (!isnan(b))) ? 0.0f : (a * log(b)))",
    "remainder": "(a - (floor((a / b)) * b))",
    "sigmoid_backward": "(a * ((1.0f - b) * b))",
    "tanh_backward": "(a * (1.0f - (b * b)))",
    "asinh": "precise::asinh(x)",
    "frac": "(x - ((x < 0.0f) ? ceil(x) : floor(x)))",
    "mish": "(x * tanh(log((exp(x) + 1.0f))))",
    "hardswish": "(x * (((x + 3.0f) < 0.0f ? 0.0f : ((x + 3.0f) > 6.0f ? 6.0f : (x + 3.0f))) / 6.0f))",
    "softplus": "(((x * beta) > threshold) ? x : (log(1.0f + exp((x * beta))) / beta))",
    "softplus_backward": "(((b * beta) > threshold) ? a : (a * (1.0f / (1.0f + exp(-(b * beta))))))",
    "threshold": "((x > threshold) ? x : value)",
    "nan_to_num": "(isnan(x) ? nan : x)",
}


@pytest.mark.parametrize("op", sorted(MINIATURE))
def test_the_miniatures_graphs_give_these_bodies(op):
    views = _views()
    offer = graph_body(views, read_op(views, op))
    assert isinstance(offer, BodyOffer), offer
    assert (offer.source, offer.expr, offer.output) == ("graph", MINIATURE[op], "")
    assert offer.location.path.startswith("aten/src/ATen/native/mps/operations/")


def test_a_macro_instance_is_read_with_its_pasted_selector_at_its_line():
    views = _views()
    offer = graph_body(views, read_op(views, "acosh"))
    assert offer.expr == "precise::acosh(x)"
    text = (FIXTURE_CHECKOUT / offer.location.path).read_text()
    assert "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)" in text.splitlines()[offer.location.line - 1]


@pytest.mark.parametrize(("op", "says"), [
    ("fmod", "trunc_tensor(mpsGraph, quotientTensor)"),  # a helper of another file
    ("sgn", "no MPSGraph graph is built here"),
    # its graph branches on eps_ (eps.value_or(-1.0)): what the stub receives for eps is read from the
    # shared function calling it, which the miniature does not define for logit_backward
    ("logit_backward", "logit_backward_out_mps's graph reads eps: what logit_backward_stub receives for it is read "
                       "from the shared .cpp function calling the stub, which this checkout lacks"),
    ("atan2", None),
])
def test_what_the_source_cannot_read_is_named_with_its_line(op, says):
    views = _views()
    offer = graph_body(views, read_op(views, op))
    if says is None:
        assert isinstance(offer, BodyOffer)
        return
    assert isinstance(offer, NoBody) and offer.source == "graph"
    assert says in offer.reason
    assert offer.location is not None and offer.location.line > 1


def test_an_op_without_a_legacy_kernel_has_no_graph():
    views = _views()
    offer = graph_body(views, read_op(views, "hypot"))
    assert isinstance(offer, NoBody) and "no legacy MPS kernel" in offer.reason


# ---- our own Objective-C++ in the real files' shapes (tests/data/graph/) ---------------------------------


def _graph(name: str, file: str = "Shapes.mm"):
    path = DATA / file
    text = path.read_text()
    return read_graph(text, f"graph/{file}", name, find_definitions(text, f"graph/{file}"))


def test_a_comparison_macro_pastes_the_selector_and_casts_to_bool():
    graph = _graph("logical_and_out_mps")
    out = translate(graph.output, ("a", "b"))
    assert out.expr == "(static_cast<bool>(a) && static_cast<bool>(b))"
    assert out.boolean and out.casts == ("bool",)
    assert graph.location == Location("graph/Shapes.mm", 47)


def test_a_dtype_branch_is_passed_over_and_said():
    graph = _graph("sign_out_mps")
    assert translate(graph.output, ("x",)).expr == "((x > 0) - (x < 0))"
    assert graph.notes == ("([inputTensor dataType] == MPSDataTypeInt64) has its own path at graph/Shapes.mm:52 (passed over)",)


def test_a_run_time_branch_on_the_ops_scalars_keeps_both_branches_as_a_select():
    graph = _graph("logit_out_mps")
    assert graph.notes == ("`(eps.has_value())` at graph/Shapes.mm:66 is read per element on the op's scalars "
                           "(both branches kept)",)
    # what the stub receives for an unset eps (the shared function's `eps ? eps.value() : -1.0`) says
    # what has_value() is; without it the body is refused, naming it
    assert translate(graph.output, ("x",), {"eps": "-1.0"}).expr == (
        "log((((eps != -1.0f) ? (x < eps ? eps : (x > 1.0f ? 1.0f : x)) : x) / "
        "(1.0f - ((eps != -1.0f) ? (x < eps ? eps : (x > 1.0f ? 1.0f : x)) : x))))")
    with pytest.raises(graphbody.Untranslatable) as caught:
        translate(graph.output, ("x",))
    assert caught.value.what == "`eps.has_value()`, whose unset value the stub call does not show"


def test_a_branch_on_a_tensor_still_refuses():
    graph = _graph("logit_out_mps")
    assert graph.output is not None
    text = (DATA / "Shapes.mm").read_text().replace("if (eps.has_value())", "if ([inputTensor isEmpty])")
    other = read_graph(text, "graph/Shapes.mm", "logit_out_mps", find_definitions(text, "graph/Shapes.mm"))
    assert other.output is None and other.why.startswith("the graph depends on `")


def test_a_split_is_not_translated():
    graph = _graph("glu_out_mps")
    with pytest.raises(graphbody.Untranslatable, match=r"outputTensorsArray\[0\]"):
        translate(graph.output, ("x",))


def test_a_lambda_graph_with_a_helper_and_an_os_branch():
    graph = _graph("expm1_out_mps")
    assert translate(graph.output, ("x",)).expr == "(exp(x) - 1.0f)"
    graph = _graph("trunc_out_mps")
    assert translate(graph.output, ("x",)).expr == "trunc(x)"


# ---- derived bodies against torch's CPU op ----------------------------------------------------------------

needs_compiler = pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")
# tanh_backward/sigmoid_backward: migrate refuses float alone (their OpInfos test complex, which the graph's
# real arithmetic does not serve); threshold: see the report
TRIED = ["mish", "frac", "softplus"]


def _migrate_with(root: Path, op: str, expr: str) -> None:
    result = run_cli(["-C", str(root), "migrate", op, "--expr", expr, "--dtypes", "float"])
    assert result.exit_code == 0, result.output


@needs_compiler
@pytest.mark.parametrize("op", TRIED)
def test_a_derived_body_matches_torch_on_cpu(tmp_path, op):
    pytest.importorskip("torch")
    root = copy_checkout(tmp_path)
    views = _views(root)
    offer = graph_body(views, read_op(views, op))
    assert isinstance(offer, BodyOffer) and offer.supports == ("float",)
    _migrate_with(root, op, offer.expr)
    report = try_op(Checkout.find(root), op, TryOptions(reference="torch", samples=8))
    failed = {r.dtype: [(m.inputs, m.got, m.want) for m in r.examples[:2]] for r in report.results if r.status != "passed"}
    assert not failed
    assert {r.metal_type for r in report.results} == {"float", "half", "bfloat"}


@needs_compiler
def test_a_wrong_translation_row_is_caught_by_try(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    root = copy_checkout(tmp_path)
    wrong = dict(TRANSLATIONS)
    wrong["subtractionWithPrimaryTensor:secondaryTensor:name:"] = graphbody.Rule("({0} + {1})")
    monkeypatch.setattr(graphbody, "TRANSLATIONS", wrong)
    views = _views(root)
    offer = graph_body(views, read_op(views, "frac"))
    assert offer.expr == "(x + ((x < 0.0f) ? ceil(x) : floor(x)))"
    _migrate_with(root, "frac", offer.expr)
    report = try_op(Checkout.find(root), "frac", TryOptions(reference="torch", samples=8))
    assert {r.status for r in report.results} == {"failed"}


@needs_compiler
def test_try_counts_where_the_graphs_order_of_operations_spares_an_overflow_cpu_has(tmp_path):
    # hardswish's graph divides the clamp by 6 before multiplying by x; CPU multiplies first: at the
    # largest float x * 6 overflows on CPU (inf) and not in the graph's order. The graph's value is the
    # true one (float64 says so), so try passes it by its rule for CPU overflowing in an intermediate
    # and counts those cases; half, whose largest value times 6 stays finite in float, has none.
    pytest.importorskip("torch")
    root = copy_checkout(tmp_path)
    views = _views(root)
    offer = graph_body(views, read_op(views, "hardswish"))
    _migrate_with(root, "hardswish", offer.expr)
    report = try_op(Checkout.find(root), "hardswish", TryOptions(reference="torch", samples=8))
    status = {r.metal_type: (r.status, r.cpu_overflows > 0) for r in report.results}
    assert status == {"float": ("passed", True), "half": ("passed", False), "bfloat": ("passed", True)}



@needs_try
def test_an_integer_safe_graph_serves_integers_and_passes_try(tmp_path):
    # signbit's graph is one signbit node, its result cast to bool: the row means the same for integer
    # operands (an integer's float keeps its sign), so the body serves the integers the tests expect
    plan = plan_migrate(Checkout(copy_checkout(tmp_path)), ("signbit",), Options(body="graph"))
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(r"signbit: checked: \d+ values match torch's CPU op", n) for n in notes), notes
    kernel = next(e.after for e in plan.edits if e.path.endswith("UnaryKernel.metal"))
    assert "REGISTER_UNARY_OP(signbit, long, bool);" in kernel and "REGISTER_UNARY_OP(signbit, bool, bool);" in kernel


@needs_try
@pytest.mark.parametrize("op", ["logit"])
def test_a_graph_branching_on_its_scalar_passes_try(tmp_path, op):
    # logit: `if (eps.has_value())` with the shared function's `eps ? eps.value() : -1.0` (UnaryOps.cpp);
    # NaN stays NaN through the clamp and 1 - eps rounds in half, as on CPU
    try:
        plan = plan_migrate(Checkout(copy_checkout(tmp_path)), (op,), Options(body="graph"))
    except MpsgenError as exc:
        # try's dense samples of the OpInfo's domain (0, 1) (issue 46) meet CPU's half and bfloat logit
        # near 0.5, where it is less accurate than this body: until the relaxed verdict (a body more
        # accurate than CPU passes with a note), each mismatch must be one where the body gives the
        # correctly rounded logit and CPU does not
        assert _only_more_accurate_than_cpu_logit(exc.message), exc.message
        return
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(rf"{op}: checked: \d+ values match torch's CPU op.*", n) for n in notes), notes


def _only_more_accurate_than_cpu_logit(message: str) -> bool:
    import math
    import struct

    from mpsgen.commands.tryop.values import to_bfloat

    to_half = lambda v: struct.unpack("<e", struct.pack("<e", v))[0]  # noqa: E731
    found = re.findall(r"(\w+): \d+ of \d+ differ \(([^;]*)\)", message)
    if "try failed: " not in message or not found:
        return False
    for metal_type, examples in found:
        if metal_type not in ("half", "bfloat"):
            return False
        for x, got, want in re.findall(r"\(([-\d.e]+),\) gave ([-\d.e]+), want ([-\d.e]+)", examples):
            x, got, want = float(x), float(got), float(want)
            true = math.log(x / (1.0 - x))
            if got != (to_half if metal_type == "half" else to_bfloat)(true) or abs(want - true) <= abs(got - true):
                return False
    return True


def test_a_losss_reduction_branch_is_read_as_none_and_said():
    views = _views()
    offer = graph_body(views, read_op(views, "mse_loss"))
    assert isinstance(offer, BodyOffer), offer
    assert offer.expr == "((a - b) * (a - b))"
    assert "`(reduction == Reduction::None)` at aten/src/ATen/native/mps/operations/LossOps.mm:22 is read as " \
           "Reduction::None (the reduction runs as a separate kernel)" in offer.describe


def test_a_reduction_helper_taking_the_graph_after_the_tensor_is_inlined_and_its_switch_read_as_none():
    # the miniature's reduceTensor(loss, reduction, mpsGraph, n): the graph is its third argument and
    # it reduces in a `switch (reduction)`; the elementwise kernel is what Reduction::None computes
    rel = "aten/src/ATen/native/mps/operations/LossOps.mm"
    text = (FIXTURE_CHECKOUT / rel).read_text()
    graph = read_graph(text, rel, "huber_loss_out_mps", find_definitions(text, rel))
    assert graph.output is not None, graph.why
    assert f"`switch (reduction)` at {rel}:58 is read as Reduction::None (the reduction runs as a separate kernel)" \
        in graph.notes
    # a switch on anything but a loss's reduction still ends the reading, naming it
    at = text.index("static MPSGraphTensor* reduceTensor(")
    other = text[:at] + text[at:].replace("switch (reduction) {\n    case Reduction::Mean:",
                                          "switch (axesCount) {\n    case 1:", 1)
    assert other != text
    refused = read_graph(other, rel, "huber_loss_out_mps", find_definitions(other, rel))
    assert refused.output is None and refused.why == "the graph depends on `switch (axesCount)` at run time"
