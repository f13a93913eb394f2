"""`mpsgen migrate` on the miniature checkout: exact diffs for every legacy form, transactions,
idempotency, refusals."""

from __future__ import annotations

import pytest

from support import applies_its_diff_then_changes_nothing, assert_golden, copy_checkout, run_cli, snapshot

OPERATIONS = "aten/src/ATen/native/mps/operations"

CASES = {
    # name: argv after `migrate`
    "atan2_impl_func_shared_helper_kept": ["atan2"],
    "xlogy_impl_func_own_graph": ["xlogy"],
    "fmod_helper_shared_with_remainder": ["fmod"],
    "fmod_remainder_helper_goes_with_both": ["fmod", "remainder"],
    "asinh_acosh_atanh_macro_instances": ["asinh", "acosh", "atanh"],
    "frac_impl_func": ["frac"],
    "sgn_impl_func_complex_branch": ["sgn"],
    "mish_impl_func": ["mish"],
    "mish_backward_plain_function_tensoriterator": ["mish_backward"],
    "hardswish_three_plain_functions_per_variant_lines": ["hardswish"],
    "sigmoid_backward_structured_binary": ["sigmoid_backward"],
    "logit_backward_alpha_placeholder": ["logit_backward"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_migrate_dry_run_matches_golden(tmp_path, case):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", *CASES[case], "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, f"migrate/{case}.diff")
    assert snapshot(root) == before


@pytest.mark.parametrize("case", sorted(CASES))
def test_migrate_applies_the_diff_and_second_run_changes_nothing(tmp_path, case):
    applied = applies_its_diff_then_changes_nothing(tmp_path, ["migrate", *CASES[case]])
    again = run_cli(["-C", str(applied.root), "migrate", *CASES[case]])
    assert again.exit_code == 0, again.stderr
    assert "already native Metal" in again.stdout
    assert snapshot(applied.root) == applied.after


def test_report_lists_what_was_removed_with_line_counts(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "xlogy", "--dry-run"])
    assert result.exit_code == 0
    summary = result.stderr
    assert "remove-impl-func" in summary and "xlogy_out_mps (" in summary
    assert "remove-include" in summary and "xlogy_native.h" in summary
    assert "1 graph site)" in summary
    assert "test: python test/test_mps.py -k test_output_match_xlogy" in summary


def test_multi_op_transaction_is_rolled_back_whole_when_the_last_op_fails(tmp_path):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "atan2", "xlogy", "polygamma"])
    assert result.exit_code == 2
    assert "polygamma_stub has signature" in result.stderr
    assert snapshot(root) == before


def test_op_with_no_mps_kernel_points_to_new_op(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "hypot"])
    assert result.exit_code == 2
    assert result.stderr.startswith("mpsgen: error: aten/src/ATen/native/native_functions.yaml:")
    assert "use `mpsgen new-op hypot`" in result.stderr


def test_already_native_op_says_so_and_changes_nothing(tmp_path):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "logaddexp"])
    assert result.exit_code == 0
    assert "logaddexp: already native Metal" in result.stdout
    assert snapshot(root) == before


def test_new_op_on_a_legacy_op_points_to_migrate(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "atan2"])
    assert result.exit_code == 2
    assert "already served by a separate MPS kernel atan2_out_mps" in result.stderr
    assert "mpsgen migrate atan2" in result.stderr


def test_a_remaining_caller_of_the_legacy_kernel_stops_the_migration(tmp_path):
    root = copy_checkout(tmp_path)
    other = root / OPERATIONS / "Extra.mm"
    other.write_text(
        "namespace at::native {\n"
        "Tensor& uses_legacy(const Tensor& a, const Tensor& b, Tensor& out) {\n"
        "  return atan2_out_mps(a, b, out);\n"
        "}\n"
        "} // namespace at::native\n"
    )
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "atan2"])
    assert result.exit_code == 2
    assert f"{OPERATIONS}/Extra.mm:3" in result.stderr
    assert snapshot(root) == before


def test_a_stub_registered_twice_is_refused(tmp_path):
    root = copy_checkout(tmp_path)
    for name in ("Extra1.mm", "Extra2.mm"):
        (root / OPERATIONS / name).write_text(
            "namespace at::native {\nREGISTER_DISPATCH(atan2_stub, &atan2_elsewhere)\n} // namespace at::native\n"
        )
    result = run_cli(["-C", str(root), "migrate", "atan2", "--dry-run"])
    assert result.exit_code == 2
    assert "atan2_stub would be registered for MPS 2 times" in result.stderr


def test_undelimitable_legacy_definition_is_refused_with_its_line(tmp_path):
    root = copy_checkout(tmp_path)
    binary = root / OPERATIONS / "BinaryOps.mm"
    text = binary.read_text()
    start = text.index("TORCH_IMPL_FUNC(atan2_out_mps)")
    brace = text.index("{", start)
    binary.write_text(text[: brace + 1] + "\n#if 0\n}\n#endif\n" + text[brace + 1 :])
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "atan2"])
    assert result.exit_code == 2
    assert f"{OPERATIONS}/BinaryOps.mm:" in result.stderr
    assert snapshot(root) == before


def test_asinh_with_complex_registers_float2_half2_and_renders_the_complex_overload(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "asinh", "--dtypes", "float,int2float,complex"])
    assert result.exit_code == 0, result.stderr
    metal = (root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal").read_text()
    # the complex group is what the file's REGISTER_COMPLEX_SIGN_KERNELS(float/half) registers: asinh joins its list
    assert "  REGISTER_UNARY_OP(asinh, COMPONENT##2, COMPONENT##2)\n\nREGISTER_COMPLEX_SIGN_KERNELS(float);\n" in metal
    assert "REGISTER_UNARY_OP(asinh, float2" not in metal
    functor = metal[metal.index("struct asinh_functor {") :]
    functor = functor[: functor.index("\n};\n")]
    assert "enable_if_t<is_complex_v<T>, bool> = true>" in functor


def test_asinh_without_complex_is_refused_since_the_tests_expect_complex(tmp_path):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "asinh", "--dtypes", "float,int2float"])
    assert result.exit_code == 2
    assert "would lose complex64" in result.stderr and "--dtypes float,int2float,complex" in result.stderr
    assert snapshot(root) == before


def test_catalog_body_renders_the_complex_overload_only_when_complex_is_registered():
    from mpsgen.facts.functor import find_body, render_functor
    from mpsgen.edit.templates import Templates

    from mpsgen.facts.bodies import BodyResolution, catalog_offer

    offer = catalog_offer("asinh", "asinh", False)
    body = find_body(BodyResolution(offer, (offer,)), op="asinh", name="asinh", arity=1, alpha=False, expr=None,
                     dtypes=None)
    without = render_functor(Templates(), body, name="asinh", arity=1, alpha=False, expr=None, groups=("float", "int2float"))
    with_complex = render_functor(Templates(), body, name="asinh", arity=1, alpha=False, expr=None,
                                  groups=("float", "int2float", "complex"))
    assert "is_complex_v" not in without.text and "is_complex_v" in with_complex.text
