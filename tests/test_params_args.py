"""Stub arguments beyond Scalars (issue 36, item 4): a double (huber, smooth_l1), the Scalar a shared
function builds from an optional (logit's eps) or from the reduction (mse_backward's norm), enums
made from strings (GeluType), ternary stubs with a Scalar and a double. Exact diffs on the
miniature, the rest byte-identical, a second run changes nothing; the reader of the shared
function's stub call and its evaluator; refusals naming the launcher a checkout lacks."""

from __future__ import annotations


import pytest

from mpsgen.facts.params import checkout_enums
from mpsgen.read.checkout import Checkout
from mpsgen.read.stubcall import evaluate, read_stub_call
from support import changed_files, copy_checkout, diff_paths, dry_run_matches_golden, git_apply_gives, run_cli, snapshot

LIB = "aten/src/ATen/native/mps/MetalShaderLibrary.h"
HUBER_EXPR = "abs(a - b) < delta ? 0.5f * (a - b) * (a - b) : delta * (abs(a - b) - 0.5f * delta)"
SMOOTH_EXPR = "abs(a - b) < beta ? 0.5f * (a - b) * (a - b) / beta : abs(a - b) - 0.5f * beta"
LOGIT_Z = "(eps < 0 ? x : (x < eps ? eps : (x > float(T(1 - eps)) ? float(T(1 - eps)) : x)))"
LOGIT_EXPR = f"{LOGIT_Z} == 1 ? INFINITY : log({LOGIT_Z} / (1 - {LOGIT_Z}))"

CASES = {
    "huber_loss_double": ["huber_loss", "--stub", "huber_stub", "--expr", HUBER_EXPR],
    "smooth_l1_loss_double_structured": ["smooth_l1_loss", "--stub", "smooth_l1_stub", "--expr", SMOOTH_EXPR],
    "logit_optional_as_scalar_named_eps": ["logit", "--expr", LOGIT_EXPR],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_diff_matches_golden_and_writes_nothing(tmp_path, case):
    dry_run_matches_golden(tmp_path, ["migrate", *CASES[case]], f"params/{case}.diff")


@pytest.mark.parametrize("case", sorted(CASES))
def test_apply_equals_the_diff_and_a_second_run_changes_nothing(tmp_path, case):
    root = copy_checkout(tmp_path)
    diff = run_cli(["-C", str(root), "migrate", *CASES[case], "--dry-run"]).stdout
    before = snapshot(root)
    assert run_cli(["-C", str(root), "migrate", *CASES[case]]).exit_code == 0
    after = snapshot(root)
    assert changed_files(before, after) == diff_paths(diff)
    git_apply_gives(tmp_path, diff, after)
    again = run_cli(["-C", str(root), "migrate", *CASES[case]])
    assert again.exit_code == 0, again.stderr
    assert snapshot(root) == after


def test_migrated_ops_pass_static_verify(tmp_path):
    root = copy_checkout(tmp_path)
    for case in CASES.values():
        assert run_cli(["-C", str(root), "migrate", *case]).exit_code == 0
    # logit's kernel is a plain alpha one; the losses' params kernels are verified in test_losses.py
    result = run_cli(["-C", str(root), "verify", "logit", "--static-only"])
    assert result.exit_code == 0, result.stdout + result.stderr


def test_ternary_with_a_scalar_and_a_double_is_refused_naming_the_launcher(tmp_path):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "huber_loss_backward", "--stub", "huber_backward_stub"])
    assert result.exit_code == 2
    assert ("huber_backward_stub (void(*)(TensorIterator&, const Scalar&, double)) passes a ternary kernel several "
            "values, which needs a params struct and MetalShaderLibrary::exec_ternary_kernel_with_params; this "
            f"checkout's {LIB} does not declare it (its exec_ternary_kernel takes no scalar)") in result.stderr
    assert snapshot(root) == before


def _with_ternary_params(root):
    """The library declaring exec_ternary_kernel_with_params and an alpha on exec_ternary_kernel."""
    lib = root / LIB
    text = lib.read_text()
    old = "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name);\n"
    assert old in text
    lib.write_text(text.replace(old, (
        "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name,\n"
        "                           const std::optional<c10::Scalar> alpha = std::nullopt);\n"
        "  template <typename T>\n"
        "  void exec_ternary_kernel_with_params(TensorIteratorBase& iter, const std::string& name, T params,\n"
        "                                       const std::string& params_type_name);\n")))
    return root


def test_ternary_params_use_the_library_launcher_where_it_has_one(tmp_path):
    root = _with_ternary_params(copy_checkout(tmp_path))
    result = run_cli(["-C", str(root), "migrate", "huber_loss_backward", "--stub", "huber_backward_stub",
                      "--expr", "c * norm * clamp(a - b, -delta, delta)", "--dry-run"])
    # the fixture's c10/metal has no REGISTER_TERNARY_ALPHA_OP: the missing piece is named
    assert result.exit_code == 2
    assert "the checkout defines no REGISTER_TERNARY_ALPHA_OP macro" in result.stderr


def test_mse_backward_norm_is_an_alpha_named_as_the_shared_function_names_it(tmp_path):
    root = _with_ternary_params(copy_checkout(tmp_path))
    indexing = root / "c10/metal/indexing.h"
    indexing.write_text(indexing.read_text().replace(
        "#define REGISTER_TERNARY_OP(", "#define REGISTER_TERNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO)\n"
        "#define REGISTER_TERNARY_OP(", 1))
    result = run_cli(["-C", str(root), "migrate", "mse_loss_backward", "--stub", "mse_backward_stub",
                      "--expr", "norm * (a - b) * c", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "+static void mse_backward_mps_kernel(TensorIterator& iter, const Scalar& norm) {\n" in result.stdout
    # norm in the op-math type, as 2.15 passes a ternary op's Scalar: float for half
    assert ('+  lib.exec_ternary_kernel(iter, "mse_backward", norm, at::toOpMathType(iter.common_dtype()));\n'
            in result.stdout)
    assert "+REGISTER_TERNARY_ALPHA_OP(mse_backward, float, float, float);\n" in result.stdout
    assert "+REGISTER_TERNARY_ALPHA_OP(mse_backward, half, float, half);\n" in result.stdout
    assert "+  inline T operator()(const T a_, const T b_, const T c_, const float norm_) {\n" in result.stdout


def test_the_stub_call_is_read_with_its_locals_and_helpers(fixture_checkout):
    checkout = Checkout.find(fixture_checkout, None)
    call = read_stub_call(checkout, ("mse_loss_backward_out",), "mse_backward_stub")
    assert call.where == "aten/src/ATen/native/Loss.cpp:158"
    (norm,) = call.args
    assert (norm.name, norm.value) == ("norm", "reduction == Reduction::Mean ? 2. / input.numel() : 2.")
    enums = {"Reduction::Mean": 1, "Reduction::Sum": 2, "Reduction::None": 0}
    assert evaluate(norm.value, {"reduction": 1, "input": None}, numel=8, enums=enums) == 0.25
    assert evaluate(norm.value, {"reduction": 2, "input": None}, numel=8, enums=enums) == 2.0
    logit = read_stub_call(checkout, ("logit_out", "logit"), "logit_stub")
    (eps,) = logit.args
    assert (eps.name, eps.text) == ("eps", "Scalar(eps ? eps.value() : -1.0)")
    assert evaluate(eps.value, {"eps": None}) == -1.0 and evaluate(eps.value, {"eps": 0.25}) == 0.25
    huber = read_stub_call(checkout, ("huber_loss_backward_out",), "huber_backward_stub")
    assert [a.name for a in huber.args] == ["norm", "delta"]
    assert evaluate(huber.args[0].value, {"reduction": 0, "input": None}, numel=4, enums=enums) == 1.0


GELU_H = """#pragma once
#include <string_view>

namespace at::native {
// how gelu approximates
enum class GeluType {
  None,             // exact
  Tanh,             // tanh approximation
  END
};

inline GeluType get_gelutype_enum(const std::string_view approximate) {
  if (approximate == "none") {
    return GeluType::None;
  } else if (approximate == "tanh") {
    return GeluType::Tanh;
  } else {
    TORCH_CHECK(false, "approximate must be none or tanh");
  }
}
} // namespace at::native
"""


def test_an_enum_and_its_string_helper_are_read_from_the_headers(tmp_path):
    root = copy_checkout(tmp_path)
    # the miniature's Activation.h defines the helper as 2.15's does: a header that defines it wins over
    # one that only declares it, so the miniature's definition is taken out for this one
    activation = root / "aten/src/ATen/native/Activation.h"
    text = activation.read_text(encoding="utf-8")
    start = text.index("inline GeluType get_gelutype_enum(")
    end = text.index("\n}\n", start) + 3
    activation.write_text(text[:start] + "GeluType get_gelutype_enum(const std::string_view approximate);\n" + text[end:])
    (root / "aten/src/ATen/native/Gelu.h").write_text(GELU_H)
    gelu = checkout_enums(Checkout.find(root, None))["GeluType"]
    assert gelu.enumerators == (("None", 0), ("Tanh", 1), ("END", 2))
    assert (gelu.helper, gelu.strings) == ("get_gelutype_enum", (("none", "None"), ("tanh", "Tanh")))
    assert str(gelu.location) == "aten/src/ATen/native/Gelu.h:6"
    miniature = checkout_enums(Checkout.find(copy_checkout(tmp_path / "mini"), None))["GeluType"]
    assert miniature.strings == gelu.strings and str(miniature.location) == "aten/src/ATen/native/Activation.h:20"
    table = {s: gelu.value(e) for s, e in gelu.strings}
    assert evaluate("get_gelutype_enum(approximate)", {"approximate": "tanh"},
                    functions={"get_gelutype_enum": table.__getitem__}) == 1


def test_the_releases_gelu_enum_is_read(real_torch_files):
    gelu = checkout_enums(Checkout.find(real_torch_files, None))["GeluType"]
    assert gelu.enumerators[:2] == (("None", 0), ("Tanh", 1))
    assert gelu.helper == "get_gelutype_enum" and dict(gelu.strings) == {"none": "None", "tanh": "Tanh"}


def test_an_enum_field_is_an_int_filled_by_a_cast(tmp_path):
    from mpsgen.facts.params import ParamField

    root = copy_checkout(tmp_path)
    (root / "aten/src/ATen/native/Gelu.h").write_text(GELU_H)
    gelu = checkout_enums(Checkout.find(root, None))["GeluType"]
    field = ParamField("approximate", "enum", "GeluType", enum=gelu)
    assert field.struct_lines == ("int approximate;",)
    assert field.host_inits == ("static_cast<int>(approximate)",)
    assert field.expr_names == ("approximate", "GeluType::None", "GeluType::Tanh", "GeluType::END")


def test_a_params_body_naming_scalar_t_gets_it_declared_and_compiles(tmp_path):
    # a graph's constant held in the input's dtype (`constantWithScalar:delta dataType:x.dataType`)
    # is `static_cast<scalar_t>(delta)`: the params functor declares scalar_t as the input type, as the
    # plain functor does, so the kernel file compiles (it did not: "'scalar_t' does not name a type")
    root = copy_checkout(tmp_path)
    expr = "abs(a - b) < static_cast<scalar_t>(delta) ? 0.5f * (a - b) * (a - b) : delta * (abs(a - b) - 0.5f * delta)"
    done = run_cli(["-C", str(root), "migrate", "huber_loss", "--expr", expr])
    assert done.exit_code == 0, done.stderr
    kernel = (root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text()
    assert ("  inline T operator()(const T a_, const T b_, const HuberParams<T> params) {\n"
            "    using scalar_t = T;\n"
            "    const float a = static_cast<float>(a_);\n") in kernel
    after = snapshot(root)
    assert run_cli(["-C", str(root), "migrate", "huber_loss", "--expr", expr]).exit_code == 0
    assert snapshot(root) == after
    verify = run_cli(["-C", str(root), "verify", "huber_loss", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
