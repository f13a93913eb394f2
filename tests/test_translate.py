"""facts/translate.py: every rule row spelled as Metal spells it (one test per row of each table),
and what is refused names itself."""

from __future__ import annotations

import pytest

from mpsgen.facts import translate
from mpsgen.facts.translate import Untranslatable, translate_function, translate_lambda
from mpsgen.read.cppsyntax import read_cpu_kernels

C10 = frozenset({"log1p", "expm1", "erf", "erfc", "erfinv", "hypot", "lgamma", "tgamma"})
SPELLING = dict(metal="metal::", c10="c10::metal::", c10_functions=C10, known=lambda name: name == "helper")

# the Metal each row gives, written out: a row without its line here fails the coverage test
FUNCTIONS = {
    **{f"std::{n}": f"metal::precise::{n}(a)" for n in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos",
                                                        "cosh", "exp", "exp2", "log", "log2", "log10", "sin", "sinh",
                                                        "sqrt", "tan", "tanh")},
    "std::atan2": "metal::precise::atan2(a, b)",
    "std::pow": "metal::precise::pow(a, b)",
    **{f"std::{n}": f"metal::{n}(a)" for n in ("abs", "fabs", "ceil", "floor", "trunc", "round", "rint", "isnan",
                                               "isinf", "isfinite", "signbit")},
    **{f"std::{n}": f"metal::{n}(a, b)" for n in ("fmod", "copysign", "nextafter", "fmax", "fmin")},
    **{f"std::{n}": f"c10::metal::{n}(a)" for n in ("log1p", "expm1", "erf", "erfc", "erfinv", "lgamma", "tgamma")},
    "std::hypot": "((metal::isinf(a) || metal::isinf(b)) ? INFINITY : (metal::isnan(a) || metal::isnan(b)) ? NAN : "
                  "c10::metal::hypot(metal::abs(a), metal::abs(b)))",
    "std::max": "((a) < (b) ? (b) : (a))",
    "std::min": "((b) < (a) ? (b) : (a))",
    "at::_isnan": "metal::isnan(a)",
    "at::native::_isnan": "metal::isnan(a)",
    "c10::copysign": "metal::copysign(a, b)",
    "c10::is_negative": "((a) < 0)",
}
BINARY = {"atan2", "pow", "fmod", "copysign", "nextafter", "fmax", "fmin", "hypot", "max", "min"}


def _lambda(body: str, params: str = "scalar_t a, scalar_t b", returns: str = " -> scalar_t"):
    text = (f"void k(TensorIteratorBase& iter) {{\n  AT_DISPATCH_FLOATING_TYPES(iter.dtype(), \"k\", [&]() {{\n"
            f"    cpu_kernel(iter, []({params}){returns} {{ {body} }});\n  }});\n}}\n")
    kernels = read_cpu_kernels(text, "k.cpp")
    return kernels.source, kernels.lambdas("k")[0]


def _translate(body: str, **kw):
    source, lam = _lambda(body, **kw)
    operands = tuple(p for _, p in lam.params)
    return translate_lambda(source, lam, name="op", operands=operands, **SPELLING)


def test_every_function_row_has_its_test():
    assert set(translate.FUNCTIONS) == set(FUNCTIONS)


@pytest.mark.parametrize("cpp", sorted(FUNCTIONS))
def test_function_row(cpp):
    name = cpp.split("::")[-1]
    args = "a, b" if name in BINARY else "a"
    assert _translate(f"return {cpp}({args});").expr == FUNCTIONS[cpp]


@pytest.mark.parametrize("bare", sorted(translate.BARE_FUNCTIONS))
def test_bare_function_row(bare):
    # Math.h calls <cmath> unqualified: `exp(x*x)`
    args = "a, b" if bare in BINARY else "a"
    expected = FUNCTIONS[f"std::{bare}"]
    assert _translate(f"return {bare}({args});").expr == expected


NAMES = {
    "std::numeric_limits": ("return std::numeric_limits<float>::infinity();", "metal::numeric_limits<float>::infinity()"),
    "std::enable_if_t": None,  # a return type: test_enable_if_return_type
    "std::is_floating_point_v": None,
    "std::is_integral_v": ("return std::is_integral_v<float> ? a : b;", "metal::is_integral_v<float> ? a : b"),
    "c10::pi": ("return c10::pi<float> * a;", "static_cast<float>(M_PI_F) * a"),
    "c10::frac_sqrt_2": ("return c10::frac_sqrt_2<float> * a;", "static_cast<float>(M_SQRT1_2_F) * a"),
    "c10::ln_2": ("return c10::ln_2<float> * a;", "static_cast<float>(M_LN2_F) * a"),
}


def test_every_name_row_has_its_test():
    assert set(translate.NAMES) == set(NAMES)


@pytest.mark.parametrize("row", sorted(k for k, v in NAMES.items() if v))
def test_name_row(row):
    body, expected = NAMES[row]
    assert _translate(body).expr == expected


def test_enable_if_return_type_and_typename_dropped_when_unqualified():
    text = ("template <typename T>\nC10_HOST_DEVICE inline typename std::enable_if_t<std::is_floating_point_v<T>, T>\n"
            "twice(T u) {\n  return u + u;\n}\n")
    kernels = read_cpu_kernels(text, "h.h")
    node = kernels.functions["twice"][0].node
    qualified = translate_function(kernels.source, node, **SPELLING).helpers[0]
    assert "inline typename metal::enable_if_t<metal::is_floating_point_v<T>, T>" in qualified
    plain = translate_function(kernels.source, node, **{**SPELLING, "metal": ""}).helpers[0]
    assert "inline enable_if_t<is_floating_point_v<T>, T>" in plain and "C10_HOST_DEVICE" not in plain


@pytest.mark.parametrize(("cpp", "metal"), sorted(translate.TYPES.items()))
def test_type_row(cpp, metal):
    translation = _translate(f"{cpp} t = a; return t * b;")
    assert f"{{ {metal} t = a;" in translation.helpers[0] and cpp not in translation.helpers[0]


@pytest.mark.parametrize("refused", sorted(translate.REFUSED))
def test_refused_row(refused):
    with pytest.raises(Untranslatable) as caught:
        _translate(f"if (a > 0) {{ {refused}(a); }} return a;")
    assert caught.value.reason.startswith(f"{refused}: {translate.REFUSED[refused]}")


def test_a_statement_that_only_raises_before_the_return_is_dropped():
    # fmod's integral lambda: where CPU raises (d == 0) no value is defined, and a kernel cannot raise
    t = _translate('TORCH_CHECK(b != 0, "ZeroDivisionError");\n return a % b;')
    assert (t.expr, t.helpers) == ("a % b", ())


def test_one_return_is_an_expression_over_the_operands_renamed():
    source, lam = _lambda("return x * std::log(y);", params="scalar_t x, scalar_t y")
    t = translate_lambda(source, lam, name="xlogy", operands=("a", "b"), **SPELLING)
    assert (t.expr, t.helpers) == ("a * metal::precise::log(b)", ())


def test_scalar_t_or_statements_make_a_helper_templated_on_scalar_t():
    t = _translate("if (at::_isnan(b)) { return NAN; } return a == 0 ? b : static_cast<scalar_t>(a > 0);")
    assert t.expr == "op_scalar(a, b)"
    assert t.helpers[0].startswith("template <typename scalar_t>\ninline scalar_t op_scalar(scalar_t a, scalar_t b) {")
    assert "metal::isnan(b)" in t.helpers[0] and "static_cast<scalar_t>(a > 0)" in t.helpers[0]


def test_bool_return_type_is_kept():
    t = _translate("bool both = a && b; return both;", returns=" -> bool")
    assert "inline bool op_scalar(" in t.helpers[0]


def test_static_tables_become_constexpr():
    text = "template <typename T>\ninline T poly(T x) {\n  static const T C[] = {1.0, 2.0};\n  return C[0] + C[1] * x;\n}\n"
    kernels = read_cpu_kernels(text, "h.h")
    helper = translate_function(kernels.source, kernels.functions["poly"][0].node, **SPELLING).helpers[0]
    assert "constexpr T C[] = {1.0, 2.0};" in helper and "static" not in helper


def test_a_helper_named_like_a_c10_function_is_renamed_at_definition_and_call():
    text = "template <typename T>\ninline T erfc(T x) {\n  return erfc_inner(x);\n}\n"
    kernels = read_cpu_kernels(text, "h.h")
    spelling = {**SPELLING, "known": lambda name: name in ("erfc_inner", "erfc")}
    spelling["c10_functions"] = C10 | {"erfc_inner"}
    helper = translate_function(kernels.source, kernels.functions["erfc"][0].node, **spelling)
    assert "inline T erfc_cpu(T x)" in helper.helpers[0] and "return erfc_inner_cpu(x);" in helper.helpers[0]
    assert helper.needs == ("erfc_inner",)


def test_calls_to_helpers_are_asked_for():
    assert _translate("return helper(a) + b;").needs == ("helper",)


@pytest.mark.parametrize(("body", "reason"), [
    ("return unknown_fn(a);", "calls unknown_fn, defined neither in this file nor in a header the checkout has"),
    ("return std::frexp(a, nullptr);", "std::frexp has no Metal translation"),
    ("return a.real();", "calls the member 'a.real'"),
    ("return std::lgamma(a) * eps;", "the lambda uses eps, a value the host computes"),
])
def test_refusals_name_what_they_lack(body, reason):
    with pytest.raises(Untranslatable) as caught:
        _translate(body)
    assert reason in caught.value.reason


def test_a_c10_spelling_needs_the_checkouts_c10_function():
    source, lam = _lambda("return std::erf(a) + b;")
    with pytest.raises(Untranslatable) as caught:
        translate_lambda(source, lam, name="op", operands=("a", "b"), **{**SPELLING, "c10_functions": frozenset()})
    assert caught.value.reason == ("std::erf: needs c10::metal::erf, which this checkout's c10/metal headers "
                                   "do not define")


def test_every_local_fallback_row_is_spelled_as_its_helper_without_c10():
    assert set(translate.LOCAL_FALLBACKS) == {"log1p"}
    source, lam = _lambda("return std::log1p(a) + b;")
    translation = translate_lambda(source, lam, name="op", operands=("a", "b"),
                                   **{**SPELLING, "c10_functions": frozenset()})
    assert translation.expr == "log1p_local(a) + b"
    assert translation.helpers == (
        "// log(1 + t), the low bits of a tiny t kept (this checkout's c10/metal has no log1p)\n"
        "inline float log1p_local(const float t) {\n"
        "  const float u = 1.0f + t;\n"
        "  if (u == 1.0f || metal::isinf(u)) {\n"
        "    return u == 1.0f ? t : u;\n"
        "  }\n"
        "  return metal::precise::log(u) * (t / (u - 1.0f));\n"
        "}\n",)
    # with the checkout's c10::metal::log1p, that one
    assert translate_lambda(source, lam, name="op", operands=("a", "b"), **SPELLING).helpers == ()


PARAMS_KERNEL = """\
void k(TensorIteratorBase& iter, const Scalar& lo_, const Scalar& hi_, std::optional<double> fill) {
  AT_DISPATCH_FLOATING_TYPES(iter.dtype(), "k", [&]() {
    auto lo = lo_.to<scalar_t>();
    scalar_t hi(hi_.to<scalar_t>());
    scalar_t low_fill = static_cast<scalar_t>(fill.value_or(-2.));
    scalar_t high_fill = fill.has_value() ? static_cast<scalar_t>(fill.value()) : std::numeric_limits<scalar_t>::max();
    cpu_kernel(iter, [lo, hi, low_fill, high_fill](scalar_t x) -> scalar_t { BODY });
  });
}
"""
PARAMS = (translate.ParamRead("lo_", "low", "scalar"), translate.ParamRead("hi_", "high", "scalar"),
          translate.ParamRead("fill", "fill", "optional"))


def _params_translation(body: str):
    kernels = read_cpu_kernels(PARAMS_KERNEL.replace("BODY", body), "k.cpp")
    return translate_lambda(kernels.source, kernels.lambdas("k")[0], name="op", operands=("x",), params=PARAMS,
                            **SPELLING)


def test_scalars_a_params_lambda_captures_are_spelled_as_the_struct_fields():
    # `.to<T>()` (assigned or constructed): the field; an optional's `value_or(D)`: the field, D the
    # host's default in its scalar_t
    translation = _params_translation("return x < lo ? low_fill : x > hi ? hi : x;")
    assert translation.expr == "x < low ? fill : x > high ? high : x"
    assert translation.defaults == (("fill", "scalar_t(-2.)"),)


def test_an_optional_read_through_has_value_gives_its_alternative_as_the_default():
    translation = _params_translation("return x > hi ? high_fill : x;")
    assert translation.expr == "x > high ? fill : x"
    assert translation.defaults == (("fill", "std::numeric_limits<scalar_t>::max()"),)


def test_a_params_lambda_of_several_statements_takes_the_fields_it_reads_as_parameters():
    translation = _params_translation("const scalar_t y = x * hi;\n return y > lo ? y : scalar_t(0);")
    assert translation.expr == "op_scalar(x, low, high)"
    assert translation.helpers == (
        "template <typename scalar_t>\ninline scalar_t op_scalar(scalar_t x, scalar_t low, scalar_t high) "
        "{ const scalar_t y = x * high;\n return y > low ? y : scalar_t(0); }\n",)


def test_a_captured_value_computed_otherwise_is_refused_naming_it():
    text = PARAMS_KERNEL.replace("auto lo = lo_.to<scalar_t>();", "auto lo = lo_.to<scalar_t>() * hi_.to<scalar_t>();")
    kernels = read_cpu_kernels(text.replace("BODY", "return x < lo ? x : hi;"), "k.cpp")
    with pytest.raises(Untranslatable) as caught:
        translate_lambda(kernels.source, kernels.lambdas("k")[0], name="op", operands=("x",), params=PARAMS,
                         **SPELLING)
    assert caught.value.reason.startswith("the lambda captures lo, computed from 'lo_.to<scalar_t>() * hi_.to<scalar_t>()'")


def test_captures_other_than_copying_everything_are_refused():
    source, lam = _lambda("return a;", params="scalar_t a")
    text = source.text.replace("[]", "[lo, hi]")
    kernels = read_cpu_kernels(text, "k.cpp")
    with pytest.raises(Untranslatable) as caught:
        translate_lambda(kernels.source, kernels.lambdas("k")[0], name="op", operands=("x",), **SPELLING)
    assert "captures [lo, hi]" in caught.value.reason


def test_captured_literal_constants_are_spelled_in_their_type_where_used():
    text = ("void k(TensorIterator& iter) {\n  AT_DISPATCH_FLOATING_TYPES(iter.dtype(), \"k\", [&]() {\n"
            "    const scalar_t three(3.0f);\n    const scalar_t six = 6;\n    const auto half_ = scalar_t(0.5);\n"
            "    const scalar_t lo = some_scalar.to<scalar_t>();\n"
            "    cpu_kernel(iter, [&](scalar_t a) -> scalar_t { return (a + three) / six * half_; });\n  });\n}\n")
    kernels = read_cpu_kernels(text, "k.cpp")
    lam = kernels.lambdas("k")[0]
    # `lo` is computed by the host from a scalar: not a constant
    assert lam.constants == (("three", "scalar_t", "3.0f"), ("six", "scalar_t", "6"), ("half_", "scalar_t", "0.5"))
    out = translate_lambda(kernels.source, lam, name="op", operands=("x",), **SPELLING)
    assert out.expr == "op_scalar(x)"
    assert "return (a + static_cast<scalar_t>(3.0f)) / static_cast<scalar_t>(6) * static_cast<scalar_t>(0.5f);" \
        in out.helpers[0]


def test_a_captured_value_the_host_computes_is_still_refused():
    text = ("void k(TensorIterator& iter, const Scalar& s) {\n  AT_DISPATCH_FLOATING_TYPES(iter.dtype(), \"k\", [&]() {\n"
            "    const scalar_t lo = s.to<scalar_t>();\n"
            "    cpu_kernel(iter, [&](scalar_t a) -> scalar_t { return a < lo ? lo : a; });\n  });\n}\n")
    kernels = read_cpu_kernels(text, "k.cpp")
    with pytest.raises(Untranslatable) as caught:
        translate_lambda(kernels.source, kernels.lambdas("k")[0], name="op", operands=("x",), **SPELLING)
    assert caught.value.reason == "the lambda uses lo, a value the host computes (captured by [&])"


@pytest.mark.parametrize("macro", sorted(translate.CONSTANTS))
def test_math_macro_row(macro):
    # <cmath>'s double macros are Metal's float constants (the host prelude defines the same names)
    assert _translate(f"return a * {macro};", params="scalar_t a").expr == f"a * {translate.CONSTANTS[macro]}"


def test_a_functional_cast_to_opmath_t_is_a_cast_to_float():
    t = _translate("return static_cast<scalar_t>(opmath_t(a) * opmath_t(0.5));", params="scalar_t a")
    assert t.expr == "op_scalar(a)"
    assert "return static_cast<scalar_t>(float(a) * float(0.5));" in t.helpers[0]
