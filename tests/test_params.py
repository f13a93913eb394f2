"""Stubs with several scalars (softplus, threshold, hardtanh_backward, nan_to_num): a params struct in
the family's kernels/*.h, its include, the functor with its registration macro, the host kernel with
exec_*_kernel_with_params; exact diffs on the miniature checkout, idempotency, refusals."""

from __future__ import annotations


import pytest

from support import (applies_its_diff_then_changes_nothing, assert_golden, copy_checkout, git_apply_gives, run_cli,
                     snapshot)

KERNELS = "aten/src/ATen/native/mps/kernels"
OPERATIONS = "aten/src/ATen/native/mps/operations"

CASES = {
    # name: argv after `migrate`
    "softplus_unary_catalog": ["softplus"],
    "softplus_backward_binary_catalog": ["softplus_backward"],
    "hardtanh_backward_tensoriterator_two_entries": ["hardtanh_backward"],
    "nan_to_num_optional_new_header": ["nan_to_num"],
    "softplus_softplus_backward_threshold_one_include": ["softplus", "softplus_backward", "threshold"],
    "threshold_expr_with_parameter_names": ["threshold", "--expr", "a <= threshold ? value : b", "--dtypes", "float,integer"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_diff_matches_golden_and_writes_nothing(tmp_path, case):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", *CASES[case], "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, f"params/{case}.diff")
    assert snapshot(root) == before


@pytest.mark.parametrize("case", sorted(CASES))
def test_apply_equals_git_apply_of_the_diff_and_second_run_changes_nothing(tmp_path, case):
    applied = applies_its_diff_then_changes_nothing(tmp_path, ["migrate", *CASES[case]])
    git_apply_gives(tmp_path, applied.diff, applied.after)
    again = run_cli(["-C", str(applied.root), "migrate", *CASES[case]])
    assert again.exit_code == 0, again.stderr
    assert snapshot(applied.root) == applied.after


def test_migrated_params_ops_pass_static_verify(tmp_path):
    root = copy_checkout(tmp_path)
    ops = ["softplus", "softplus_backward", "threshold"]
    assert run_cli(["-C", str(root), "migrate", *ops]).exit_code == 0
    result = run_cli(["-C", str(root), "verify", *ops, "--static-only"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "failed" not in result.stdout.split("static", 1)[1].split("build", 1)[0]


def test_verify_finds_a_host_kernel_whose_parameters_differ_from_the_stub(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "hardtanh_backward"]).exit_code == 0
    host = root / OPERATIONS / "ActivationKernel.mm"
    text = host.read_text()
    wrong = text.replace("static void hardtanh_backward_kernel(TensorIterator& iter,",
                         "static void hardtanh_backward_kernel(TensorIteratorBase& iter,")
    assert wrong != text
    host.write_text(wrong)
    result = run_cli(["-C", str(root), "verify", "hardtanh_backward", "--static-only", "--json"])
    assert result.exit_code == 1
    assert "hardtanh_backward_kernel takes (TensorIteratorBase&, const Scalar&, const Scalar&) but " \
           "hardtanh_backward_stub is declared void(*)(TensorIterator&, const Scalar&, const Scalar&)" in result.stdout


def test_the_struct_of_a_second_op_follows_the_first_in_the_header(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "softplus", "hardtanh_backward"]).exit_code == 0
    header = (root / KERNELS / "Activation.h").read_text()
    assert header.endswith(
        "};\n\ntemplate <typename T>\nstruct SoftplusParams {\n  T beta;\n  T threshold;\n};\n"
        "\ntemplate <typename T>\nstruct HardtanhBackwardParams {\n  T min_val;\n  T max_val;\n};\n"
    )
    metal = (root / KERNELS / "ActivationKernel.metal").read_text()
    assert metal.count("#include <ATen/native/mps/kernels/Activation.h>") == 1


def test_an_existing_struct_of_the_same_name_is_kept_and_reported(tmp_path):
    root = copy_checkout(tmp_path)
    header = root / KERNELS / "Activation.h"
    header.write_text(header.read_text() + "\ntemplate <typename T>\nstruct SoftplusParams {\n  T beta;\n  T threshold;\n};\n")
    before = header.read_bytes()
    result = run_cli(["-C", str(root), "migrate", "softplus"])
    assert result.exit_code == 0, result.stderr
    assert header.read_bytes() == before
    assert f"{KERNELS}/Activation.h:15: struct SoftplusParams already exists; kept as is" in result.stdout


def test_a_checkout_without_the_with_params_launcher_is_refused(tmp_path):
    root = copy_checkout(tmp_path)
    library = root / "aten/src/ATen/native/mps/MetalShaderLibrary.h"
    text = library.read_text()
    library.write_text(text.replace("exec_unary_kernel_with_params", "exec_unary_kernel_with_struct"))
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "softplus"])
    assert result.exit_code == 2
    assert result.stderr.startswith("mpsgen: error: aten/src/ATen/native/Activation.h:")
    assert "needs MetalShaderLibrary::exec_unary_kernel_with_params, which this checkout's" in result.stderr
    assert snapshot(root) == before


def test_a_stub_and_schema_that_disagree_are_refused(tmp_path):
    root = copy_checkout(tmp_path)
    nf = root / "aten/src/ATen/native/native_functions.yaml"
    text = nf.read_text()
    nf.write_text(text.replace("threshold.out(Tensor self, Scalar threshold, Scalar value, *",
                               "threshold.out(Tensor self, Scalar threshold, bool value, *"))
    result = run_cli(["-C", str(root), "migrate", "threshold", "--dry-run"])
    assert result.exit_code == 2
    assert ("threshold_stub's parameter `const Scalar&` carries threshold.out's argument `bool value`, "
            "which is not a Scalar") in result.stderr


def test_expr_names_outside_the_schema_are_refused_with_the_parameters(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "softplus", "--expr", "x * gamma", "--dry-run"])
    assert result.exit_code == 2
    assert "--expr uses 'gamma', which is not an operand of this unary op (operands are x; parameters beta, threshold)" in result.stderr


def test_expr_may_name_params_fields_through_the_struct(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "softplus", "--expr", "x * params.beta", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "+    return static_cast<T>(x * params.beta);\n" in result.stdout
    assert "const float beta" not in result.stdout


def test_params_kernels_register_float_and_integer_groups_only(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "softplus", "--expr", "x", "--dtypes", "float,complex", "--dry-run"])
    assert result.exit_code == 2
    assert "dtype group 'complex' is not generated for a params kernel" in result.stderr


def test_expr_with_integer_group_computes_integers_in_their_type_and_dispatches_them(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "softplus", "--expr", "x > threshold ? x : beta",
                      "--dtypes", "float,integer", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "+    const T threshold = static_cast<T>(params.threshold);\n" in result.stdout
    assert "+  AT_DISPATCH_ALL_TYPES_AND2(kHalf, kBFloat16, iter.common_dtype(), \"softplus_mps\", [&]() {\n" in result.stdout
    assert "+REGISTER_SOFTPLUS_OP(char);\n" in result.stdout and "REGISTER_SOFTPLUS_OP(bool)" not in result.stdout


def test_ternary_with_a_scalar_stays_refused_precisely(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "addcmul"])
    assert result.exit_code == 2
    assert "addcmul is ternary with a Scalar (void(*)(TensorIteratorBase&, const Scalar&)), but exec_ternary_kernel" in result.stderr
    assert "no exec_ternary_kernel_with_params either" in result.stderr


def test_new_op_gives_a_params_op_without_mps_kernel_the_same_kernel(tmp_path):
    root = copy_checkout(tmp_path)
    nf = root / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text().replace("    MPS: softplus_out_mps\n", ""))
    migrate = run_cli(["-C", str(copy_checkout(tmp_path / "m")), "migrate", "softplus", "--dry-run"]).stdout
    result = run_cli(["-C", str(root), "new-op", "softplus", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    for rel in (f"{KERNELS}/Activation.h", f"{KERNELS}/ActivationKernel.metal", f"{OPERATIONS}/ActivationKernel.mm"):
        assert _section(result.stdout, rel) == _section(migrate, rel) != ""


def _section(diff: str, rel: str) -> str:
    """The part of a multi-file diff about one file."""
    start = diff.index(f"diff --git a/{rel} ")
    end = diff.find("diff --git ", start + 1)
    return diff[start:] if end < 0 else diff[start:end]


def test_ternary_hint_follows_what_the_library_declares(tmp_path):
    root = copy_checkout(tmp_path)
    library = root / "aten/src/ATen/native/mps/MetalShaderLibrary.h"
    text = library.read_text()
    library.write_text(text.replace("  template <typename T>\n  void exec_binary_kernel_with_params(",
                                    "  template <typename T>\n  void exec_ternary_kernel_with_params(TensorIteratorBase& iter, T params);\n"
                                    "  template <typename T>\n  void exec_binary_kernel_with_params(", 1))
    result = run_cli(["-C", str(root), "migrate", "addcmul"])
    assert result.exit_code == 2
    assert "this checkout has exec_ternary_kernel_with_params, which mpsgen does not generate kernels for yet" in result.stderr
