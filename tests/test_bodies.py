"""The body resolver (mpsgen.facts.bodies) and its sources, end to end on the miniature: every
derived body is run by `try` against torch's CPU op for every dtype it registers, a forced source
with nothing is exit 2 with its reason, a body that fails is not written."""

from __future__ import annotations

import re

import pytest

from mpsgen.commands.migrate import plan_migrate
from mpsgen.commands.newop import plan_new_op
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.errors import MpsgenError
from mpsgen.facts import bodies, translate
from mpsgen.facts.bodies import BODY_CHOICES, SOURCES, BodyRequest, GraphSource, placeholder_comment, resolve_body
from mpsgen.facts.bodyoffer import BodyOffer, NoBody
from mpsgen.facts.resolve import Options, resolve_op
from mpsgen.facts.views import Views
from mpsgen.edit.workspace import Workspace
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.kernelfile import NamespacePrefixes
from mpsgen.read.metalhost.compiler import find_compiler
from support import FIXTURE_CHECKOUT, copy_checkout, needs, run_cli

needs_try = needs(torch_unavailable() or (None if find_compiler()[0] else "no C++ compiler (g++/clang++) on PATH"))


def _request(op: str, mode: str = "new-op", root=FIXTURE_CHECKOUT) -> BodyRequest:
    views = Views(Workspace(Checkout(root)))
    spec = resolve_op(views, op, Options(), mode)
    return BodyRequest(views, spec.facts, op, spec.functor, spec.arity, spec.alpha, None, NamespacePrefixes("", ""),
                       frozenset({"hypot", "xlogy"}))


def _plan(root, command: str, op: str, **options):
    planner = plan_new_op if command == "new-op" else (lambda c, o, opts: plan_migrate(c, (o,), opts))
    return planner(Checkout(root), op, Options(**options))


def test_sources_are_declared_in_the_issues_order():
    assert [s.name for s in SOURCES] == ["expr", "catalog", "c10", "cpu", "graph"]
    assert BODY_CHOICES == ("auto", "catalog", "c10", "cpu", "graph")


def test_cli_body_choices_are_the_resolvers():
    from mpsgen.cli import BODY_CHOICES as CLI

    assert CLI == BODY_CHOICES


def test_the_catalog_answers_first_and_the_others_are_not_asked():
    resolution = resolve_body(_request("hypot"))
    assert resolution.chosen.source == "catalog" and [a.source for a in resolution.answers] == ["catalog"]
    assert resolution.chosen.location.path == "mpsgen/facts/catalog.toml"


def test_c10_source_offers_the_checkouts_function_with_its_line():
    offer = resolve_body(_request("hypot"), forced="c10").chosen
    assert (offer.expr, offer.location, offer.describe) == ("hypot(a, b)", Location("c10/metal/utils.h", 107),
                                                            "c10::metal::hypot")


def test_cpu_source_brings_the_helpers_along_callees_first():
    offer = resolve_body(_request("hypot"), forced="cpu").chosen
    assert offer.expr == "calc_hypot(a, b)" and offer.location == Location("aten/src/ATen/native/cpu/BinaryOpsKernel.cpp", 52)
    assert [re.search(r"(\w+)\(T", h).group(1) for h in offer.helpers] == ["hypot_sum_of_squares", "calc_hypot"]
    assert offer.supports == ("float",)


def test_cpu_source_groups_and_output_from_the_dispatch_list():
    assert resolve_body(_request("heaviside"), forced="cpu").chosen.supports == ("float", "integer", "bool")
    assert resolve_body(_request("atan2", "migrate"), forced="cpu").chosen.supports == ("float", "int2float")
    # the float branch, and the integral one (its raising TORCH_CHECK dropped) for the integer group
    fmod = resolve_body(_request("fmod", "migrate"), forced="cpu").chosen
    assert (fmod.expr, fmod.supports, fmod.integer_expr) == ("fmod(a, b)", ("float", "integer"), "a % b")


def test_cpu_source_refuses_a_helper_it_cannot_bring_naming_it():
    answer = resolve_body(_request("special_ndtri"), forced="cpu").answers[0]
    assert isinstance(answer, NoBody) and answer.location == Location("aten/src/ATen/native/Math.h", 43)
    assert answer.reason == ("ndtri_kernel's lambda calls calc_ndtri (aten/src/ATen/native/Math.h:35), which cannot be "
                             "brought along: std::frexp has no Metal translation (mpsgen.facts.translate)")


def test_graph_source_adapts_any_callable():
    seen = []

    def stand_in(views, facts):
        seen.append(facts.op)
        return BodyOffer("graph", "a + b", Location("aten/src/ATen/native/mps/operations/BinaryOps.mm", 7),
                         "hypot's MPSGraph graph")

    sources = (SOURCES[0], SOURCES[1], GraphSource(stand_in))
    resolution = resolve_body(_request("hypot"), forced="graph", sources=sources)
    assert seen == ["hypot"] and resolution.chosen.expr == "a + b"
    assert resolve_body(_request("hypot"), forced="graph", sources=(GraphSource(None),)).answers[0].reason == (
        "the MPSGraph source (mpsgen.facts.graphbody) is not part of this build")
    assert isinstance(GraphSource(lambda v, f: "nonsense").offer(_request("hypot")), NoBody)


def test_a_rejected_source_answers_with_its_reason_and_the_next_is_asked():
    resolution = resolve_body(_request("hypot"), rejected={"catalog": "try failed: float: 1 of 2 differ"},
                              sources=SOURCES[1:4])
    assert [a.source for a in resolution.answers] == ["catalog", "c10"]
    assert resolution.answers[0].reason == "try failed: float: 1 of 2 differ"
    assert resolution.chosen.source == "c10"


def test_placeholder_comment_quotes_every_answer():
    lines = placeholder_comment((NoBody("catalog", "no body"), NoBody("cpu", "calls f", Location("x.cpp", 3)),
                                 BodyOffer("c10", "f(a)", Location("c10/metal/utils.h", 9), "c10::metal::f")))
    assert lines == ("catalog: no body", "cpu: calls f (x.cpp:3)", "c10: c10::metal::f (c10/metal/utils.h:9): f(a)")


def test_forced_source_without_a_body_is_exit_2_with_its_reason(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "special_ndtri", "--body", "c10", "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "mpsgen: error: --body c10: no body for special_ndtri: the checkout's c10/metal headers define none of "
        "special_ndtri, ndtri, ndtri_forward (choose another source with --body, or write one with --expr)")


def test_expr_and_body_together_are_refused(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--body", "cpu", "--expr", "a + b", "--dry-run"])
    assert result.exit_code == 2 and "--expr and --body cpu both choose the body" in result.stderr


# every derived body the miniature's sources give, run by try for every dtype it registers
DERIVED = [
    ("new-op", "hypot", "cpu"), ("new-op", "copysign", "cpu"), ("new-op", "heaviside", "cpu"),
    ("migrate", "atan2", "cpu"), ("migrate", "xlogy", "cpu"), ("migrate", "xlogy", "c10"),
    ("migrate", "frac", "cpu"), ("migrate", "sign", "cpu"),
]


@needs_try
@pytest.mark.parametrize(("command", "op", "source"), DERIVED)
def test_every_derived_body_passes_try_for_every_registered_dtype(tmp_path, command, op, source):
    plan = _plan(copy_checkout(tmp_path), command, op, body=source)
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(rf"{op}: checked: \d+ values match torch's CPU op", n) for n in notes), notes
    assert any(n.startswith("body: from ") and (source == "c10") == ("c10::metal::" in n) for n in notes), notes


@needs_try
def test_the_summary_names_the_source_with_path_and_line(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "atan2", "--body", "cpu", "--dry-run", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    assert "note: body: from aten/src/ATen/native/cpu/BinaryOpsKernel.cpp:28, atan2's CPU kernel" in result.stderr
    assert re.search(r"note: atan2: checked: \d+ values match torch's CPU op", result.stderr)
    assert "  return static_cast<T>(precise::atan2(a, b));" in result.stdout.replace("+  ", "  ")


@needs_try
def test_a_forced_body_that_fails_try_is_exit_2_with_the_failing_values(tmp_path):
    # the miniature's c10::metal::hypot takes max/min of its arguments as given (as 2.13's does)
    with pytest.raises(MpsgenError) as caught:
        _plan(copy_checkout(tmp_path), "new-op", "hypot", body="c10")
    assert caught.value.message.startswith("--body c10: no body for hypot: try failed: float: ")
    assert "(0.0, -1.0) gave nan, want 1.0" in caught.value.message


@needs_try
def test_a_wrong_translation_rule_is_caught_by_try_and_the_placeholder_quotes_the_values(tmp_path, monkeypatch):
    monkeypatch.setitem(translate.FUNCTIONS, "std::atan2", "{m}precise::pow")  # wrong on purpose
    monkeypatch.setattr(bodies, "lookup", lambda name: None)  # the catalog off: auto reaches the CPU source
    graph = next(s for s in bodies.SOURCES if s.name == "graph")  # and the graph's body (right) is not offered
    monkeypatch.setattr(graph, "graph_body", lambda views, facts: NoBody("graph", "off in this test"))
    root = copy_checkout(tmp_path)
    plan = _plan(root, "migrate", "atan2")
    kernel = next(e.after for e in plan.edits if e.path.endswith("BinaryKernel.metal"))
    functor = kernel[kernel.index("struct atan2_functor"):]
    assert "#error" in functor and "pow" not in functor
    comment = " ".join(line.strip(" /") for line in functor.splitlines() if line.lstrip().startswith("//"))
    assert "cpu: try failed: float: " in comment and " gave " in comment and "want" in comment
    assert any("atan2: body from atan2's CPU kernel not written: try failed" in n.message for n in plan.notes)


def test_without_a_compiler_the_plan_says_not_checked(tmp_path, monkeypatch):
    from mpsgen.commands import bodycheck

    monkeypatch.setattr(bodycheck, "find_compiler", lambda: (None, "no C++ compiler found (looked for g++)"))
    plan = _plan(copy_checkout(tmp_path), "new-op", "copysign", body="cpu")
    assert "copysign: body from copysign's CPU kernel not checked: no C++ compiler found (looked for g++)" \
        in [n.message for n in plan.notes]


def test_body_is_refused_where_the_sources_do_not_apply(tmp_path):
    # a params op (several scalars in a struct): c10 takes no scalars; threshold's graph reads self
    # once where its iterator holds it twice (the operands a, b)
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "threshold", "--body", "graph", "--dry-run"])
    assert result.exit_code == 2
    assert ("--body graph: no body for threshold: threshold's MPSGraph graph (threshold_out_mps) gives ((x > "
            "threshold) ? x : value), whose x is no field of the params struct (threshold, value)") in result.stderr
    result = run_cli(["-C", str(root), "migrate", "softplus", "--body", "c10", "--dry-run"])
    assert result.exit_code == 2
    assert ("--body c10: no body for softplus: softplus's stub passes scalars (beta, threshold), which no "
            "c10::metal function takes") in result.stderr


@needs_try
def test_std_hypot_row_serves_the_c10_function_on_magnitudes_and_passes_try(tmp_path):
    # upstream's hypot lambda is `return std::hypot(a, b);`; the checkout's c10::metal::hypot (as 2.13's)
    # takes max/min of its arguments as given, so the row calls it on |a|, |b| with inf and NaN settled
    root = copy_checkout(tmp_path)
    cpu = root / "aten/src/ATen/native/cpu/BinaryOpsKernel.cpp"
    text = cpu.read_text()
    assert "return calc_hypot(a, b);" in text
    cpu.write_text(text.replace("return calc_hypot(a, b);", "return std::hypot(a, b);"))
    plan = _plan(root, "new-op", "hypot", body="cpu")
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(r"hypot: checked: \d+ values match torch's CPU op", n) for n in notes), notes
    kernel = next(e.after for e in plan.edits if e.path.endswith(".metal"))
    assert ": hypot(abs(a), abs(b))));" in kernel  # the miniature's kernel file spells both namespaces bare


def test_a_try_that_compares_no_value_is_not_checked(tmp_path, monkeypatch):
    # 2.15's mse_loss: try has no reference for the loss's elementwise kernel, every dtype is skipped;
    # "checked: 0 values match" would call a body checked that nothing compared
    from types import SimpleNamespace

    from mpsgen.commands import bodycheck

    skipped = [SimpleNamespace(metal_type=t, status="skipped", cases=0) for t in ("float", "half", "bfloat")]
    monkeypatch.setattr(bodycheck, "torch_importable", lambda: True)
    monkeypatch.setattr(bodycheck, "try_op", lambda *a, **k: SimpleNamespace(results=skipped, untaken=False))
    monkeypatch.setattr(bodycheck, "cached_result", lambda kind, inputs, run: run())  # no verdict kept earlier
    plan = _plan(copy_checkout(tmp_path), "new-op", "copysign", body="cpu")
    notes = [n.message for n in plan.notes]
    assert "copysign: body from copysign's CPU kernel not checked: try compared no value (float, half, bfloat " \
           "skipped: no reference)" in notes, notes
    assert not any(": checked: " in n for n in notes)


@pytest.fixture
def counted_try(tmp_path, monkeypatch):
    """try as the body check runs it, replaced by one that passes 5 float values and counts its runs
    (the list it returns), with no verdict kept before this test."""
    from types import SimpleNamespace

    from mpsgen.commands import bodycheck

    runs = []
    passed = [SimpleNamespace(metal_type="float", status="passed", cases=5, cpu_overflows=0, nearer_float64=(),
                              edge_overflows=(), beyond_samples=())]
    monkeypatch.setattr(bodycheck, "torch_importable", lambda: True)
    monkeypatch.setattr(bodycheck, "CHECK_VERSION", f"bodycheck-test-{tmp_path.name}")
    monkeypatch.setattr(bodycheck, "try_op", lambda *a, **k: runs.append(1) or SimpleNamespace(results=passed, untaken=False))
    return runs


def test_a_verdict_is_kept_for_the_same_planned_kernel_and_asked_again_for_another(tmp_path, counted_try):
    # scan asks migrate's check for every candidate with a derived body: try runs once per planned kernel
    runs = counted_try
    root = copy_checkout(tmp_path)
    for _ in range(2):
        notes = [n.message for n in _plan(root, "new-op", "copysign", body="cpu").notes]
        assert "copysign: checked: 5 values match torch's CPU op" in notes, notes
    assert len(runs) == 1
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    kernel.write_text(kernel.read_text() + "// another kernel file: another planned kernel\n")
    _plan(root, "new-op", "copysign", body="cpu")
    assert len(runs) == 2


def test_a_verdict_depends_on_the_ops_own_yaml_entries_and_only_a_cause_outside_the_body_is_asked_again(
        tmp_path, monkeypatch, counted_try):
    from mpsgen.commands import bodycheck

    runs = counted_try
    root = copy_checkout(tmp_path)
    yaml = root / "aten/src/ATen/native/native_functions.yaml"
    original = yaml.read_text()
    _plan(root, "new-op", "copysign", body="cpu")
    # another op's entry changes (and every line after it moves): the same verdict
    yaml.write_text(original.replace("    SparseCsrCPU, SparseCsrCUDA, SparseCsrMeta: atanh_sparse_csr_out\n",
                                     "    SparseCsrCPU, SparseCsrCUDA, SparseCsrMeta: atanh_sparse_csr_out\n  tags: core\n", 1))
    assert yaml.read_text() != original
    notes = [n.message for n in _plan(root, "new-op", "copysign", body="cpu").notes]
    assert "copysign: checked: 5 values match torch's CPU op" in notes and len(runs) == 1
    # the op's own entry changes: asked again
    yaml.write_text(original.replace("copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n  device_check: "
                                     "NoCheck   # TensorIterator\n", "copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) "
                                     "-> Tensor(a!)\n  device_check: NoCheck\n", 1))
    assert yaml.read_text() != original
    _plan(root, "new-op", "copysign", body="cpu")
    assert len(runs) == 2

    def refused(*args, **kwargs):
        runs.append(1)
        raise MpsgenError("no kernel to run")

    monkeypatch.setattr(bodycheck, "try_op", refused)
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    kernel.write_text(kernel.read_text() + "// another planned kernel\n")
    for _ in range(2):  # a refusal of try's is decided by the content: kept, asked once
        with pytest.raises(MpsgenError) as refusal:
            _plan(root, "new-op", "copysign", body="cpu")
        assert "--body cpu: no body for copysign: try could not run it: no kernel to run" in refusal.value.message
        assert len(runs) == 3

    def timed_out(*args, **kwargs):
        runs.append(1)
        raise MpsgenError("the host compiler did not finish the try program in 180 s")

    monkeypatch.setattr(bodycheck, "try_op", timed_out)
    kernel.write_text(kernel.read_text() + "// yet another planned kernel\n")
    for count in (4, 5):  # a cause outside the body (a loaded machine): not written, and asked each time
        with pytest.raises(MpsgenError) as refusal:
            _plan(root, "new-op", "copysign", body="cpu")
        assert ("--body cpu: no body for copysign: try could not run it: the host compiler did not finish the try "
                "program in 180 s") in refusal.value.message
        assert len(runs) == count


@needs_try
def test_hardswish_from_the_cpu_kernel_keeps_cpus_order_and_passes_try(tmp_path):
    # cpu/Activation.cpp's lambda multiplies before dividing (x * 6 overflows to inf at FLT_MAX, as CPU
    # does), with its constants captured from the dispatch lambda; the graph divides first: its value
    # at FLT_MAX is the true one, which try's rule for CPU overflowing in an intermediate accepts and counts
    root = copy_checkout(tmp_path)
    plan = _plan(root, "migrate", "hardswish", body="cpu")
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(r"hardswish: checked: \d+ values match torch's CPU op", n) for n in notes), notes
    graph = [n.message for n in _plan(root, "migrate", "hardswish", body="graph").notes]
    assert any(re.fullmatch(r"hardswish: checked: \d+ values match torch's CPU op; matches CPU except where CPU "
                            r"overflows in an intermediate: [1-9]\d* cases", n) for n in graph), graph


def _params_request(op: str) -> BodyRequest:
    """A params op's request as the params family asks it (fields with an enum's enumerators)."""
    from mpsgen.facts.paramskernel import field_enumerators
    from mpsgen.read.c10lib import checkout_functions

    views = Views(Workspace(Checkout(FIXTURE_CHECKOUT)))
    spec = resolve_op(views, op, Options(), "migrate")
    return BodyRequest(views, spec.facts, op, spec.functor, spec.params.arity, False, None, NamespacePrefixes("", ""),
                       checkout_functions(views.ws), params=tuple((f.name, f.kind, field_enumerators(f)) for f in spec.params.fields))


def test_cpu_source_reads_a_params_ops_captured_scalars_as_its_fields():
    softplus = resolve_body(_params_request("softplus"), forced="cpu").chosen
    # the float32 lambda (not the reduced-float branch): beta_/threshold_ read into beta/threshold
    assert softplus.expr == "softplus_scalar(x, beta, threshold)"
    assert softplus.location == Location("aten/src/ATen/native/cpu/Activation.cpp", 76)
    assert softplus.supports == ("float",) and softplus.defaults == ()
    assert softplus.helpers[0].startswith("// log(1 + t), the low bits of a tiny t kept")  # no c10 log1p here
    threshold = resolve_body(_params_request("threshold"), forced="cpu").chosen
    assert (threshold.expr, threshold.supports) == ("a <= threshold ? value : b", ("float", "integer"))
    nan_to_num = resolve_body(_params_request("nan_to_num"), forced="cpu").chosen
    assert nan_to_num.expr == "replace_non_finite(x, nan, posinf, neginf)"
    assert nan_to_num.defaults == (("nan", "scalar_t(0.)"), ("posinf", "std::numeric_limits<scalar_t>::max()"),
                                   ("neginf", "std::numeric_limits<scalar_t>::lowest()"))


def test_cpu_source_selects_on_a_params_ops_enum_where_its_kernel_branches_on_it():
    gelu = resolve_body(_params_request("gelu"), forced="cpu").chosen
    assert gelu.expr == "(approximate == 1) ? (gelu_tanh_scalar(x)) : (gelu_scalar(x))"
    assert gelu.describe == "gelu's CPU kernel, both branches on approximate (GeluType::Tanh or not)"
    assert [h.split("(")[0].split()[-1] for h in gelu.helpers] == ["gelu_tanh_scalar", "gelu_scalar"]
    assert "const scalar_t k = M_SQRT2_F * M_2_SQRTPI_F * 0.5;" in gelu.helpers[0]


def test_graph_source_serves_a_params_op_whose_graph_reads_only_its_fields():
    # the graph names the op's scalars as the schema does, as the struct's fields are named
    softplus = resolve_body(_params_request("softplus"), forced="graph").chosen
    assert softplus.expr == "(((x * beta) > threshold) ? x : (log(1.0f + exp((x * beta))) / beta))"
    assert bodies._value_names(softplus.expr) == ["x", "beta", "threshold"]
    assert bodies._value_names("static_cast<bool>(signbit(static_cast<float>(x))) ? INFINITY : M_PI_F") == ["x"]


def test_graph_source_refuses_a_params_ops_graph_not_reading_its_enum():
    # the miniature's gelu graph computes the erf form only (M_SQRT1_2 read as Metal's M_SQRT1_2_F)
    answer = resolve_body(_params_request("gelu"), forced="graph").answers[0]
    assert isinstance(answer, NoBody)
    assert answer.reason.endswith("gives (x * ((c10::metal::erf((x * M_SQRT1_2_F)) + 1.0f) * 0.5f)), which reads no "
                                  "approximate: "
                                  "the graph computes one of its formulas only")


@needs_try
def test_a_params_placeholder_quotes_every_sources_answer(tmp_path):
    # no cpu kernel for gelu: the params placeholder says what each source lacked
    root = copy_checkout(tmp_path)
    cpu = root / "aten/src/ATen/native/cpu/Activation.cpp"
    cpu.write_text(cpu.read_text().replace("REGISTER_DISPATCH(GeluKernel, &GeluKernelImpl);\n", ""))
    plan = _plan(root, "migrate", "gelu")
    kernel = next(e.after for e in plan.edits if e.path.endswith("ActivationKernel.metal"))
    start = kernel.index("struct gelu_functor {")
    assert kernel[start:kernel.index('#error "', start)] == (
        "struct gelu_functor {\n"
        "  // mpsgen: write the body, then delete the #error line.\n"
        "  // Kind: unary; params: approximate.\n"
        "  // Dtype groups: float.\n"
        "  // What each body source offered:\n"
        "  //   catalog: mpsgen's catalog has no gelu body reading a params struct\n"
        "  //   c10: gelu's stub passes scalars (approximate), which no c10::metal\n"
        "  //     function takes\n"
        "  //   cpu: no REGISTER_DISPATCH(GeluKernel, ...) in\n"
        "  //     aten/src/ATen/native/cpu/Activation.cpp\n"
        "  //   graph: gelu's MPSGraph graph (gelu_out_mps); approximate_type is read as\n"
        "  //     approximate (approximate_type = get_gelutype_enum(approximate) at\n"
        "  //     aten/src/ATen/native/mps/operations/Activation.mm:509) gives (x *\n"
        "  //     ((c10::metal::erf((x * M_SQRT1_2_F)) + 1.0f) * 0.5f)), which reads no\n"
        "  //     approximate: the graph computes one of its formulas only\n"
        "  //     (aten/src/ATen/native/mps/operations/Activation.mm:503)\n")


# ---- without torch: a derived body is compiled before it is written (issue 42 item 4) ----------------

needs_compiler = needs(None if find_compiler()[0] else "no C++ compiler (g++/clang++) on PATH")
MATH_H = "aten/src/ATen/native/Math.h"


def _without_torch(monkeypatch, only: str | None = None) -> None:
    """torch unimportable (`import torch` fails, `find_spec("torch")` is None), and every body source but
    `only` off (the catalog answers hypot first; c10 has hypot too)."""
    import sys

    from mpsgen.commands import bodycheck

    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(bodycheck, "CHECK_VERSION", f"bodycheck-test-{id(monkeypatch)}")
    monkeypatch.setattr(bodycheck, "COMPILE_VERSION", f"bodycompile-test-{id(monkeypatch)}")
    if only is not None:
        for source in bodies.SOURCES:
            if source.name not in ("expr", only):
                monkeypatch.setattr(source, "offer", lambda request, name=source.name: NoBody(name, "off in this test"))


@needs_compiler
@pytest.mark.parametrize("reference", ["catalog", "none"])
def test_without_torch_a_body_that_does_not_compile_is_never_written_and_the_placeholder_quotes_the_compiler(
        tmp_path, monkeypatch, reference):
    # our own construct: the CPU kernel's helper (brought along from Math.h) reads a file-scope constant
    # the translation does not bring: the Metal file does not compile. With the catalog's reference try
    # compiles it (and would run it); without one the kernel file as planned is compiled alone
    _without_torch(monkeypatch, only="cpu")
    if reference == "none":
        from mpsgen.commands import bodycheck as check

        monkeypatch.setattr(check, "lookup", lambda op: None)
    root = copy_checkout(tmp_path)
    math_h = root / MATH_H
    text = math_h.read_text()
    text = text.replace("template <typename T>\ninline C10_HOST_DEVICE T calc_hypot",
                        "constexpr float kHypotScale = 1.0f;\n\ntemplate <typename T>\ninline C10_HOST_DEVICE T calc_hypot", 1)
    math_h.write_text(text.replace("  const T big = std::max(x, y);", "  const T big = std::max(x, y) * kHypotScale;", 1))
    assert math_h.read_text().count("kHypotScale") == 2
    from mpsgen.commands import bodycheck

    ran = []  # try (compiling, then running) or the compile alone
    name = "try_op" if reference == "catalog" else "compile_metal_file"
    original = getattr(bodycheck, name)
    monkeypatch.setattr(bodycheck, name, lambda *a, **k: ran.append(1) or original(*a, **k))
    plan = plan_new_op(Checkout(root), "hypot", Options())
    again = plan_new_op(Checkout(root), "hypot", Options())  # the verdict "does not compile" is kept by content
    assert again == plan and len(ran) == 1
    kernel = next(e.after for e in plan.edits if e.path.endswith("BinaryKernel.metal"))
    functor = kernel[kernel.index("struct hypot_functor"):kernel.index("};\n", kernel.index("struct hypot_functor")) + 3]
    assert "calc_hypot" not in kernel and "* kHypotScale" not in kernel  # the body is not written
    assert functor == (
        "struct hypot_functor {\n"
        "  // mpsgen: write the body, then delete the #error line.\n"
        "  // Kind: binary.\n"
        "  // Dtype groups: float.\n"
        "  // What each body source offered:\n"
        "  //   catalog: off in this test\n"
        "  //   c10: off in this test\n"
        "  //   cpu: it does not compile\n"
        "  //     (aten/src/ATen/native/mps/kernels/BinaryKernel.metal:98 as planned:\n"
        "  //     ‘kHypotScale’ was not declared in this scope)\n"
        "  //     (aten/src/ATen/native/cpu/BinaryOpsKernel.cpp:52)\n"
        "  //   graph: off in this test\n"
        "#error \"mpsgen: write the body of this functor, then delete this line\"\n"
        "  template <typename T>\n"
        "  inline T operator()(const T a, const T b) {\n"
        "    return a;\n"
        "  }\n"
        "};\n")
    assert ("hypot: body from hypot's CPU kernel not written: it does not compile (aten/src/ATen/native/mps/kernels/"
            "BinaryKernel.metal:98 as planned: ‘kHypotScale’ was not declared in this scope)") in [n.message for n in plan.notes]


@needs_compiler
def test_without_torch_a_body_that_compiles_is_written_and_the_note_says_it_was_compiled_not_run(tmp_path, monkeypatch):
    _without_torch(monkeypatch, only="cpu")
    plan = plan_new_op(Checkout(copy_checkout(tmp_path)), "hypot", Options())
    notes = [n.message for n in plan.notes]
    # compiled, then run on the host against the catalog's Python reference (hypot has one)
    assert "hypot: checked: 1131 values match the catalog's reference (torch is not importable)" in notes, notes
    kernel = next(e.after for e in plan.edits if e.path.endswith("BinaryKernel.metal"))
    assert "calc_hypot(a, b)" in kernel and "#error" not in kernel


@needs_compiler
def test_without_torch_a_params_body_is_compiled_and_written_saying_it_was_not_run(tmp_path, monkeypatch):
    # gelu takes its approximate in a params struct: the catalog's references take no scalars
    _without_torch(monkeypatch)
    plan = plan_migrate(Checkout(copy_checkout(tmp_path)), ("gelu",), Options())
    notes = [n.message for n in plan.notes]
    assert ("gelu: body from gelu's CPU kernel, both branches on approximate (GeluType::Tanh or not) compiled, not "
            "run: torch is not importable (pip install torch==2.13.0): its CPU op is the reference") in notes, notes


@needs_try
def test_another_functors_error_in_the_file_leaves_the_body_written_not_checked(tmp_path):
    # another op's placeholder (#error) in the kernel file stops try's build in that functor's code:
    # the body is not judged, so it is written and called not checked, naming the other functor
    root = copy_checkout(tmp_path)
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = kernel.read_text(encoding="utf-8")
    anchor = "// Arithmetic\n"
    kernel.write_text(text.replace(anchor, anchor + "\nstruct pending_functor {\n  template <typename T>\n"
                                   "  inline T operator()(const T a, const T b) {\n"
                                   "#error fill in the body of pending_functor\n    return a;\n  }\n};\n", 1),
                      encoding="utf-8")
    result = run_cli(["-C", str(root), "migrate", "atan2", "--body", "cpu", "--dry-run", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    notes = result.stderr.replace("\n  ", " ")
    assert re.search(r"note: atan2: body from atan2's CPU kernel not checked: try could not run it: "
                     r"aten/src/ATen/native/mps/kernels/BinaryKernel\.metal:13: #error fill in the body of "
                     r"pending_functor \(pre-existing: in pending_functor, not atan2_functor; the whole kernel "
                     r"file must compile for try to run atan2_functor on the host\)", notes), result.stderr
    assert "  return static_cast<T>(precise::atan2(a, b));" in result.stdout.replace("+  ", "  ")


def test_a_passed_check_names_the_cases_beyond_upstreams_samples(tmp_path, monkeypatch):
    # try's rules for values upstream's test never feeds let a body pass: the note written with it
    # names each such case, never passes over it silently
    from types import SimpleNamespace

    from mpsgen.commands import bodycheck

    inf = float("inf")
    beyond = (((0.0, inf), float("nan"), inf), ((inf, 0.0), float("nan"), inf))
    passed = [SimpleNamespace(metal_type="float", status="passed", cases=5, cpu_overflows=0, nearer_float64=(),
                              edge_overflows=(), beyond_samples=beyond)]
    monkeypatch.setattr(bodycheck, "torch_importable", lambda: True)
    monkeypatch.setattr(bodycheck, "CHECK_VERSION", f"bodycheck-test-{tmp_path.name}")
    monkeypatch.setattr(bodycheck, "try_op", lambda *a, **k: SimpleNamespace(results=passed, untaken=False))
    root = copy_checkout(tmp_path)
    notes = [n.message for n in _plan(root, "new-op", "copysign", body="cpu").notes]
    assert ("copysign: checked: 5 values match torch's CPU op; 2 cases beyond what upstream's test samples, where the "
            "kernel's value differs from CPU's and neither is judged (an infinite operand where both values are not "
            "finite, both overflowing at the top of the range, a complex inf or NaN part, an operand at the OpInfo's "
            "domain end: docs/try.md): (0.0, inf) gave nan, CPU inf; (inf, 0.0) gave nan, CPU inf") in notes, notes


def test_a_multi_op_migrate_plans_each_op_in_turn_and_its_checks_notes_come_last_in_the_ops_order(
        tmp_path, monkeypatch):
    # signbit's derived body fails its check (a placeholder is planned instead), logit's passes: each
    # op's notes in the order given, then the checks' verdicts, in the same order
    from types import SimpleNamespace

    from mpsgen.commands import bodycheck
    from mpsgen.commands.tryop.run import CheckFailed

    passed = [SimpleNamespace(metal_type="float", status="passed", cases=5, cpu_overflows=0, nearer_float64=(),
                              edge_overflows=(), beyond_samples=())]
    tried = []

    def try_op(checkout, op, options):
        tried.append(op)
        if op == "signbit":
            raise CheckFailed("boom")
        return SimpleNamespace(results=passed, untaken=False)

    monkeypatch.setattr(bodycheck, "torch_importable", lambda: True)
    monkeypatch.setattr(bodycheck, "CHECK_VERSION", f"bodycheck-test-{tmp_path.name}")
    monkeypatch.setattr(bodycheck, "try_op", try_op)
    root = copy_checkout(tmp_path)
    notes = [n.message for n in plan_migrate(Checkout(root), ("signbit", "logit"), Options()).notes]
    assert tried == ["signbit", "logit"]
    placeholder = notes.index("fill in the body of signbit_functor (the #error stops the build there until you do)")
    logit_stub = notes.index("stub logit_stub: named after the op, declared at aten/src/ATen/native/UnaryOps.h:41")
    assert notes.index("stub signbit_stub: called by signbit_out at aten/src/ATen/native/UnaryOps.cpp:74") < placeholder
    assert placeholder < logit_stub
    assert notes[-2:] == ["signbit: body from signbit's MPSGraph graph (signbit_out_mps) not written: try could not run "
                          "it: boom", "logit: checked: 5 values match torch's CPU op"]
