"""Issue 42's try gaps: what try samples and how it compares where upstream's test_output_match does
otherwise. A functor looping as many times as an operand holds (special_laguerre_polynomial_l) is
sampled as the test samples it; complex values are compared as torch.isclose does, with the
nearer-float64 rule (addcmul in complex32); an operand at the top of float's range where the
kernel overflows an intermediate and CPU's fused multiply-add does not is a note (sub); a scalar set
at each boundary of the functor's comparisons of its alpha (logit_backward's eps == 0)."""

from __future__ import annotations

import cmath
import json
import math
from pathlib import Path

from mpsgen.commands.tryop.branchvalues import boundary_pairs, functor_spans, loop_bounded_operands, scalar_boundaries
from mpsgen.commands.tryop.compare import _close, compare
from mpsgen.commands.tryop.reference import import_torch, scalar_reference, torch_scalar_reference, torch_unavailable
from mpsgen.commands.tryop.scalars import ScalarArg, ScalarSet, with_boundaries
from mpsgen.commands.tryop.values import make_inputs, to_float32, within_sampled_range
from mpsgen.read.metalhost.compiler import find_compiler
from mpsgen.read.stubcall import evaluate
from support import copy_checkout, needs, run_cli

DATA = Path(__file__).resolve().parent / "data" / "trysampling"
needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())
FLT_MAX = 3.4028234663852886e38
INF = math.inf


# ---- a loop counted by an operand (special_laguerre_polynomial_l) ---------------------------------


def test_a_loop_counted_by_an_operand_is_found_through_the_overloads_and_locals():
    text = (DATA / "LoopCount.metal").read_text(encoding="utf-8")
    # n_ -> local n -> recurrence_n(T x, T n) -> static_cast<long>(n) -> recurrence_n(T x, long n): `step < n`
    assert loop_bounded_operands(text, "laguerre_polynomial_l") == (1,)
    # `i < top` where top is a local computed from the operand (gamma's shape, behind a branch): not a count
    assert loop_bounded_operands(text, "local_bound") == ()
    assert loop_bounded_operands(text, "no_such") == ()


def test_a_loop_counted_op_keeps_only_the_cases_upstreams_test_samples():
    inputs = make_inputs("float", 2, 0, 32, ())
    kept = within_sampled_range(inputs, (1,))
    every = [inputs.case(i) for i in range(inputs.count)]
    assert [kept.case(i) for i in range(kept.count)] == [
        c for c in every if all(math.isfinite(v) and -9.0 <= v <= 9.0 for v in c)]
    assert (0.5, 3.0) in every and (0.5, 3.0) in [kept.case(i) for i in range(kept.count)]
    assert kept.count < inputs.count
    assert kept.note == (f"{inputs.count - kept.count} cases left out: beyond [-9, 9], the range upstream's test "
                         "samples (make_tensor's default): the functor loops as many times as operand 2 holds")
    assert within_sampled_range(inputs, ()) is inputs


def _laguerre_root(tmp_path, body: str) -> Path:
    """The miniature checkout with special_laguerre_polynomial_l's functor replaced by the fixture's."""
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l"]).exit_code == 0
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = kernel.read_text(encoding="utf-8")
    start = text.index("struct laguerre_polynomial_l_functor {")
    end = text.index("\n};\n", start) + 4
    kernel.write_text(text[:start] + body + text[end:], encoding="utf-8")
    return root


def _fixture_body() -> str:
    text = (DATA / "LoopCount.metal").read_text(encoding="utf-8")
    start = text.index("// Degree-n member")
    end = text.index("\n};\n", text.index("struct laguerre_polynomial_l_functor {")) + 4
    return text[start:end]


@needs_compiler
@needs_torch
def test_try_a_loop_counted_body_finishes_on_the_tests_range_and_a_wrong_count_still_fails(tmp_path):
    body = _fixture_body()
    root = _laguerre_root(tmp_path / "right", body)
    done = run_cli(["-C", str(root), "try", "special_laguerre_polynomial_l", "--backend", "host", "--reference",
                    "torch", "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    assert [(r["dtype"], r["status"]) for r in doc["dtypes"]] == [
        ("float32", "passed"), ("float16", "passed"), ("bfloat16", "passed")]
    for r in doc["dtypes"]:
        assert "cases left out: beyond [-9, 9], the range upstream's test samples (make_tensor's default): " \
               "the functor loops as many times as operand 2 holds" in r["note"]
    wrong = _laguerre_root(tmp_path / "wrong", body.replace("step < n;", "step <= n;"))
    failed = run_cli(["-C", str(wrong), "try", "special_laguerre_polynomial_l", "--backend", "host", "--reference",
                      "torch", "--json"])
    assert failed.exit_code == 1
    assert {r["status"] for r in json.loads(failed.stdout)["dtypes"]} == {"failed"}


# ---- complex values (addcmul in complex32) --------------------------------------------------------


def test_complex_values_are_close_as_torch_isclose_says():
    # the modulus of the difference against atol + rtol * |want|, not each part alone
    assert _close(complex(1000.0, 0.5), complex(1000.0, 0.01), 1e-3, 1e-5)
    assert not _close(complex(1000.0, 2.0), complex(1000.0, 0.01), 1e-3, 1e-5)
    # an inf part matches only exactly: (inf + 1.0001j) - (inf + 1j) has a NaN real part
    assert _close(complex(INF, 1.0), complex(INF, 1.0), 1e-3, 1e-5)
    assert not _close(complex(INF, 1.0001), complex(INF, 1.0), 1e-3, 1e-5)
    assert _close(complex(math.nan, 0.0), complex(0.0, math.nan), 1e-3, 1e-5)


def _addcmul_kernel(torch, inputs, value: float, sign: float = 1.0) -> tuple:
    """addcmul as upstream's kernel computes it from complex32 inputs: at opmath (float parts), value
    (a complex number) folded into tensor1 first, each complex product by its plain formula; rounded once to complex32."""

    def parts(col):
        t = torch.tensor(list(col), dtype=torch.complex64).to(torch.complex32).to(torch.complex64)
        return t.real.clone(), t.imag.clone()

    def mul(x, y):
        return x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]

    a, b, c = (parts(col) for col in inputs.columns)
    alpha = (torch.full_like(b[0], sign * value), torch.zeros_like(b[0]))  # value as a complex opmath value
    scaled = mul(alpha, b)
    product = mul(scaled, c)
    out = torch.complex(a[0] + product[0], a[1] + product[1]).to(torch.complex32)
    return tuple(out.to(torch.complex128).tolist())


@needs_torch
def test_addcmul_in_complex32_computed_at_opmath_matches_and_a_flipped_sign_fails():
    torch = import_torch()
    overload, label = torch_scalar_reference("addcmul", 3)
    inputs = make_inputs("half2", 3, 0, 32, ())
    reference = scalar_reference(overload, label, {"value": 2.0})
    want = reference.compute(inputs, None)
    right = compare(inputs, _addcmul_kernel(torch, inputs, 2.0), want.values, "half2", "", want.alone, None, want.wide)
    assert (right.status, right.mismatches, right.cases) == ("passed", 0, 544)
    # CPU holds t1 * t2's real part (2.59e8) as inf in ComplexHalf, and its imaginary part goes to -inf with it; the
    # kernel's value is the op's in complex128, rounded to complex32
    assert right.nearer_float64 == (
        ((complex(467.75, -1.28515625), complex(-49888.0, -0.000202178955078125), complex(-5192.0, 0.00021028518676757812)),
         complex(INF, -20.171875), complex(INF, -INF), complex(INF, -20.171875)),)
    without = compare(inputs, _addcmul_kernel(torch, inputs, 2.0), want.values, "half2", "", want.alone)
    assert (without.status, without.mismatches) == ("failed", 1)
    flipped = compare(inputs, _addcmul_kernel(torch, inputs, 2.0, -1.0), want.values, "half2", "", want.alone, None,
                      want.wide)
    assert (flipped.status, flipped.mismatches) == ("failed", 205)


# ---- an intermediate at the top of float's range (sub) --------------------------------------------


def _sub_kernel(torch, inputs, alpha: float, sign: float = -1.0, use_alpha: bool = True) -> tuple:
    """sub through add_alpha's body, `a + (-alpha) * b`, each operation rounded to float."""
    a, b = (torch.tensor(list(col), dtype=torch.float32) for col in inputs.columns)
    product = torch.mul(b, sign * alpha) if use_alpha else torch.mul(b, sign)
    return tuple(torch.add(a, product).to(torch.float64).tolist())


@needs_torch
def test_sub_at_the_top_of_floats_range_is_noted_and_a_wrong_body_still_fails():
    torch = import_torch()
    overload, label = torch_scalar_reference("sub", 2)
    inputs = make_inputs("float", 2, 0, 32, ())
    want = scalar_reference(overload, label, {"alpha": 2.0}).compute(inputs, None)

    def run(got):
        return compare(inputs, got, want.values, "float", "", want.alone, None, want.wide)

    right = run(_sub_kernel(torch, inputs, 2.0))
    assert (right.status, right.mismatches) == ("passed", 0)
    shown = [(tuple(case), "nan" if math.isnan(got) else got, cpu) for case, got, cpu in right.edge_overflows]
    # a - 2 * b: 2 * b overflows in the kernel; CPU's fused multiply-add gives the op's value
    assert shown == [((INF, FLT_MAX), "nan", INF), ((-INF, -FLT_MAX), "nan", -INF),
                     ((FLT_MAX, FLT_MAX), -INF, -FLT_MAX), ((-FLT_MAX, -FLT_MAX), INF, FLT_MAX)]
    assert "4 cases with an operand at the top of the type's range, beyond what upstream's test samples ([-9, 9]), " \
           "where the kernel overflows an intermediate and CPU (a fused multiply-add, one rounding) gives the op's " \
           "value: " in right.note
    flipped = run(_sub_kernel(torch, inputs, 2.0, sign=1.0))
    ignored = run(_sub_kernel(torch, inputs, 2.0, use_alpha=False))
    assert (flipped.status, flipped.mismatches) == ("failed", 151)  # a + 2 * b
    assert (ignored.status, ignored.mismatches) == ("failed", 148)  # a - b
    # a kernel's inf where CPU is finite and no operand is near the largest value is never excused (1e30 - 2 * 0.5)
    mid = make_inputs("float", 2, 0, 0, ())
    index = [mid.case(i) for i in range(mid.count)].index((to_float32(1e30), 0.5))
    want_mid = scalar_reference(overload, label, {"alpha": 2.0}).compute(mid, None)
    got = list(_sub_kernel(torch, mid, 2.0))
    got[index] = INF
    assert compare(mid, tuple(got), want_mid.values, "float", "", want_mid.alone, None, want_mid.wide).mismatches == 1


# ---- a scalar set at each boundary of the alpha's comparisons (logit_backward) ---------------------


def test_the_alphas_comparison_boundaries_give_scalar_sets():
    text = (DATA / "AlphaBoundary.metal").read_text(encoding="utf-8")
    line = text.split("\n").index("struct clipped_ratio_functor {") + 1
    spans = functor_spans(text, line)
    first, last = spans[0]
    assert boundary_pairs(text, first, last) == [("lo_", 0.0)]
    helper = spans[1]
    assert boundary_pairs(text, *helper) == [("x", 0.0)]  # `scalar_t(0)` read as a cast
    assert scalar_boundaries(text, spans, 2) == [0.0]
    assert scalar_boundaries(text, spans, 1) == []  # x_ is compared in the helper only, through a call
    eps = ScalarArg("eps", "float?", None, True)
    sets = (ScalarSet((("eps", None),)), ScalarSet((("eps", 1e-6),)), ScalarSet((("eps", 0.25),)))
    assert with_boundaries(sets, (eps,), [0.0]) == sets + (ScalarSet((("eps", 0.0),)),)
    assert with_boundaries(sets, (eps,), [0.25]) == sets
    assert with_boundaries(sets, (eps, ScalarArg("beta", "Scalar", 1, True)), [0.0]) == sets


def test_an_optional_tested_alone_is_true_when_set_zero_included():
    call = "eps ? eps.value() : -1.0"
    assert evaluate(call, {"eps": 0.0}, optionals=frozenset({"eps"})) == 0.0
    assert evaluate(call, {"eps": None}, optionals=frozenset({"eps"})) == -1.0
    assert evaluate(call, {"eps": 0.25}, optionals=frozenset({"eps"})) == 0.25
    # a plain number tested alone is its value's truth, as C++ has it
    assert evaluate("x ? 1 : 2", {"x": 0.0}) == 2


# ---- complex values upstream's test never feeds (pow's exp(w * log(z)) in complex64) ---------------


def _complex_pow_kernel(torch, inputs, sign: float = 1.0, log_scale: float = 1.0) -> tuple:
    """A complex power as a polar-form body computes it in float: r = sqrt(x^2 + y^2) (overflowing for
    parts beyond 1.8e19), a zero base giving 0 for a positive real exponent and NaN otherwise, else
    exp(w * log(z)) by the plain complex product. `sign` scales the result's imaginary part, `log_scale`
    the log's real part (a wrong constant)."""
    z, w = (torch.tensor(list(col), dtype=torch.complex64) for col in inputs.columns)
    x, y, c, d = z.real, z.imag, w.real, w.imag
    r = torch.sqrt(x * x + y * y)
    theta, log_r = torch.atan2(y, x), torch.log(r) * log_scale
    size, angle = torch.exp(c * log_r - d * theta), c * theta + d * log_r
    out = torch.complex(size * torch.cos(angle), sign * size * torch.sin(angle))
    zero = torch.where(c > 0, torch.zeros_like(out), torch.full_like(out, complex(math.nan, math.nan)))
    out = torch.where(r == 0, zero, out)
    return tuple(out.to(torch.complex128).tolist())


@needs_torch
def test_pow_in_complex64_is_judged_on_the_values_the_test_feeds_and_a_wrong_body_still_fails(tmp_path):
    from mpsgen.commands.tryop.branchvalues import samples_finite_parts
    from mpsgen.commands.tryop.reference import torch_reference
    from mpsgen.read.checkout import COMMON_METHODS, Checkout

    torch = import_torch()
    inputs = make_inputs("float2", 2, 0, 32, ())
    want = torch_reference("pow", 2)[0].compute(inputs, None)

    def run(got, finite: bool = True):
        return compare(inputs, got, want.values, "float2", "", want.alone, None, want.wide, 10, finite)

    right = run(_complex_pow_kernel(torch, inputs))
    assert (right.status, right.mismatches, right.cases) == ("passed", 0, 1328)
    beyond = right.beyond_samples
    assert len(beyond) == 136  # as 2.15's own kernel on the source checkout: 127 with an inf or NaN part, 9 huge
    # every case the rule passes has an inf or NaN part, or a part past sqrt(3.4e38) and a non-finite kernel value
    for case, got, _ in beyond:
        parts = [p for v in case for p in (v.real, v.imag)]
        assert not all(map(math.isfinite, parts)) or (any(abs(p) >= 1.8446742e19 for p in parts)
                                                      and not cmath.isfinite(got))
    # C's special-value rules (CPU) against exp(w * log(z)) at a zero base raised to an infinite imaginary part
    zero_cases = [(case, got, cpu) for case, got, cpu in beyond if case[0] == 0]
    assert zero_cases[0][0] == (0j, complex(1.0, INF)) and zero_cases[0][1] == 0j and cmath.isnan(zero_cases[0][2])
    assert right.note.startswith("beyond what upstream's test samples: 136 cases with an operand whose real or "
                                 "imaginary part is inf or NaN, or at least the square root of the type's largest "
                                 "value where the kernel's value is not finite (the OpInfo's samples draw finite parts "
                                 "with make_tensor and add none such): ")
    # without the OpInfo's word that its samples are finite, the same cases fail
    assert run(_complex_pow_kernel(torch, inputs), finite=False).mismatches == 136
    flipped = run(_complex_pow_kernel(torch, inputs, sign=-1.0))
    constant = run(_complex_pow_kernel(torch, inputs, log_scale=1.0001))
    assert (flipped.status, flipped.mismatches) == ("failed", 199)
    assert (constant.status, constant.mismatches) == ("failed", 121)
    # both fail on operands the test feeds: every part finite and within [-9, 9]
    for wrong in (flipped, constant):
        assert any(all(abs(p) <= 9 for v in m.inputs for p in (v.real, v.imag)) for m in wrong.examples)
    # the OpInfo file says which ops' samples are finite (tests/data/trysampling/complex_samples.py)
    (tmp_path / COMMON_METHODS).parent.mkdir(parents=True)
    (tmp_path / COMMON_METHODS).write_text((DATA / "complex_samples.py").read_text(encoding="utf-8"), encoding="utf-8")
    checkout = Checkout(tmp_path)
    assert {op: samples_finite_parts(checkout, op) for op in ("pow", "hypot", "atan2", "xlogy", "fmod", "polar", "sub")} == {
        "pow": True, "atan2": True, "hypot": False, "xlogy": False, "fmod": False, "polar": False, "sub": False}


def test_opmath_registrations_are_read_directly_and_through_a_macro_of_the_file():
    from mpsgen.commands.tryop.lookup import opmath_registered

    text = (DATA / "OpmathRegister.metal").read_text(encoding="utf-8")
    assert opmath_registered(text, "square_sum") == frozenset({"half2"})  # the commented line is not read
    assert opmath_registered(text, "twice") == frozenset({"half", "bfloat"})
    assert opmath_registered(text, "sum") == frozenset()


def test_a_type_registered_at_opmath_gets_its_operands_at_opmath_in_the_try_kernel():
    from mpsgen.facts.templates import Templates

    source = Templates(Path(".")).render("try_kernels.metal.j2", functor="pow", arity=2, types=["float2", "half2"],
                                         alphas={}, struct=False, opmath=["half2"])
    assert "  out[i] = f(in0[i], in1[i]);\n}\n\nkernel void mpsgen_try_half2(" in source  # float2: as registered
    assert source.endswith(
        "  pow_functor f;\n"
        "  // registered through an OPMATH macro: the operands at opmath_t<half2>, as c10's kernels call the functor\n"
        "  using om_t = ::c10::metal::opmath_t<half2>;\n"
        "  out[i] = static_cast<::c10::metal::result_of<pow_functor, half2, half2>>(f(om_t(in0[i]), om_t(in1[i])));\n"
        "}\n")


# ---- values within the OpInfo's domain eps of a domain end (erfinv's steep ends on 2.13) ------------


def test_the_domain_upstreams_samples_stay_inside_is_a_unary_ufuncinfos_with_its_default_samples():
    from mpsgen.commands.tryop.branchvalues import DOMAIN_EPS, near_domain_end, unsampled_domain
    from mpsgen.read.checkout import Checkout
    from support import FIXTURE_CHECKOUT

    checkout = Checkout(FIXTURE_CHECKOUT)
    assert unsampled_domain(checkout, "atanh") == (-1.0, 1.0)  # UnaryUfuncInfo, domain=(-1, 1), default samples
    assert unsampled_domain(checkout, "acosh") == (1.0, None)
    assert unsampled_domain(checkout, "addcmul") is None  # its own sample_inputs_func
    assert unsampled_domain(checkout, "no_such_op") is None
    assert DOMAIN_EPS == 1e-5  # opinfo/core.py's _domain_eps (2.13-2.15)
    assert [near_domain_end(v, (-1.0, 1.0)) for v in (0.9999999403953552, 0.99999, 1.0, -0.999995, 0.5, 1.5)] == [
        True, False, True, True, False, False]
    assert [near_domain_end(v, (1.0, None)) for v in (1.000001, 1e30, 0.9999999)] == [True, False, False]


def test_a_value_at_the_domain_end_matches_when_it_is_the_ops_value_at_an_input_that_rounds_to_it():
    inputs = make_inputs("float", 1, 0, 0, ())
    x = 0.9999999403953552  # 1 - 2^-24: the float below 1
    inputs = type(inputs)(inputs.metal_type, ((x, 0.5, x, x, x),))
    cpu = (3.8325068950653076, 0.4769362762044699, 3.8325068950653076, 3.8325068950653076, 3.8325068950653076)
    got = (3.8325369358062744, 0.4769362762044699, -3.8325369358062744, 3.8325369358062744, 4.5)
    # erfinv in float64 at 1 - 1.5 * 2^-24 and 1 - 2^-25, halfway to x's neighbours (1 itself: inf)
    halfway = (3.7809243716742102, 3.919205843636722)
    span = {0: halfway, 2: halfway, 3: (math.nan, 3.9), 4: halfway}
    result = compare(inputs, got, cpu, "float", unsampled=lambda i: span.get(i))
    # case 0: within the span, noted; case 1: not near the end, judged (and right); case 2: a flipped
    # sign, outside the span; case 3: a NaN end refuses; case 4: past the value halfway to 1
    assert result.mismatches == 3 and [m.inputs for m in result.examples] == [(x,)] * 3
    assert result.beyond_samples == (((0.9999999403953552,), 3.8325369358062744, 3.8325068950653076),)
    assert ("beyond what upstream's test samples: 1 case within the OpInfo's domain eps (1e-5) of a domain end, "
            "which its samples never come nearer than, where the kernel's value is the op's value at a real input that "
            "rounds to the operand: (0.9999999403953552,) gave 3.8325369358062744, CPU 3.8325068950653076") in result.note
    assert compare(inputs, got, cpu, "float").mismatches == 4  # without the rule (audit): judged


def _atanh_root(tmp_path, edge: str) -> Path:
    """The miniature with atanh migrated, its float values multiplied by `edge` within 1e-5 of +-1."""
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "atanh"]).exit_code == 0
    kernel = root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    text = kernel.read_text(encoding="utf-8")
    plain = "    return static_cast<T>(precise::atanh(float(x)));\n"
    assert text.count(plain) == 1
    kernel.write_text(text.replace(plain, "    const float y = precise::atanh(float(x));\n"
                                          f"    return static_cast<T>(1.0f - fabs(float(x)) < 1e-5f ? y * {edge} : y);\n"),
                      encoding="utf-8")
    return root


@needs_compiler
@needs_torch
def test_try_notes_an_answer_within_one_ulp_at_the_domain_end_and_fails_a_wrong_one(tmp_path):
    near = run_cli(["-C", str(_atanh_root(tmp_path / "near", "1.00001f")), "try", "atanh", "--backend", "host",
                    "--reference", "torch", "--json"])
    assert near.exit_code == 0, near.output
    float32 = next(r for r in json.loads(near.stdout)["dtypes"] if r["dtype"] == "float32")
    assert float32["status"] == "passed" and float32["beyond_samples"] >= 2  # +-0.99999994 at least
    assert "within the OpInfo's domain eps (1e-5) of a domain end" in float32["note"]
    flipped = run_cli(["-C", str(_atanh_root(tmp_path / "flipped", "-1.0f")), "try", "atanh", "--backend", "host",
                       "--reference", "torch", "--json"])
    assert flipped.exit_code == 1
    float32 = next(r for r in json.loads(flipped.stdout)["dtypes"] if r["dtype"] == "float32")
    assert float32["status"] == "failed"


# ---- an infinite operand, and both overflowing at the top of the range (2.15's lerp) ---------------


def _float_inputs(*cases):
    inputs = make_inputs("float", 2, 0, 0, ())
    return type(inputs)("float", tuple(tuple(c[k] for c in cases) for k in range(len(cases[0]))))


def test_an_infinite_operand_where_both_values_are_not_finite_but_differ_is_noted_when_samples_are_finite():
    # lerp at weight 0.5: the kernel's a + w * (b - a) against CPU's b - (b - a) * (1 - w)
    inputs = _float_inputs((0.0, INF), (INF, 0.0), (1.0, -INF), (0.0, INF), (2.0, 3.0), (INF, math.nan))
    got = (INF, math.nan, -INF, 0.0, 2.5, math.nan)
    cpu = (math.nan, INF, math.nan, math.nan, 2.5, INF)
    result = compare(inputs, got, cpu, "float", finite_samples=True)
    # the fourth: a finite kernel value where CPU's is NaN; the last: a NaN operand (hypot(inf, nan)
    # is inf in C, a mutant's NaN is wrong): both still judged
    assert result.mismatches == 2 and [m.inputs[0] for m in result.examples] == [0.0, INF]
    assert [case for case, _, _ in result.beyond_samples] == [(0.0, INF), (INF, 0.0), (1.0, -INF)]
    assert ("beyond what upstream's test samples: 3 cases with an infinite operand and none NaN, where the kernel and CPU both "
            "give a value that is not finite, but not the same one (the OpInfo's samples draw finite values with "
            "make_tensor and add none such): (0.0, inf) gave inf, CPU nan; (inf, 0.0) gave nan, CPU inf; "
            "(1.0, -inf) gave -inf, CPU nan") in result.note
    assert compare(inputs, got, cpu, "float").mismatches == 5  # samples that may hold inf (or audit): judged


def test_an_operand_at_the_top_of_the_range_where_both_overflow_differently_is_noted():
    # lerp(3.4e38, -3.4e38, 0.5): b - a is inf in both formulas; the op's value is 0
    inputs = _float_inputs((FLT_MAX, -FLT_MAX), (1e30, -1e30), (FLT_MAX, -FLT_MAX))
    got, cpu = (-INF, -INF, 5.0), (INF, INF, INF)
    result = compare(inputs, got, cpu, "float", wide=lambda i: 0.0)
    # the second is not at the top of the range; the third is a finite wrong value: both judged
    assert result.mismatches == 2 and [m.inputs for m in result.examples] == [(1e30, -1e30), (FLT_MAX, -FLT_MAX)]
    assert result.edge_overflows == () and result.beyond_samples == (((FLT_MAX, -FLT_MAX), -INF, INF),)
    assert "where the kernel and CPU both overflow an intermediate, to different values that are not finite" \
        in result.note
    assert compare(inputs, got, cpu, "float", wide=lambda i: 0.0, edge_noted=False).mismatches == 3  # audit
