"""new-op and migrate against the real PyTorch yaml, stub headers, c10/metal headers and test lists
(the wheel does not ship .metal/.mm files: those come from our fixture). The cases of ops that 2.15
already serves natively (asinh, mish, softplus, ...; heaviside and the special_* polynomials gained
MPS) run on the older release, 2.13.0, where they are still to do; the others on 2.15.0."""

from __future__ import annotations

import subprocess

import pytest

from support import run_cli, sampled, snapshot

pytestmark = pytest.mark.realfiles
MPS = "aten/src/ATen/native/mps"
NF = "aten/src/ATen/native/native_functions.yaml"


def _file_section(diff: str, path: str) -> list[str]:
    lines, inside = [], False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            inside = line.endswith(f" b/{path}")
            continue
        if inside and line[:1] in "+-" and not line.startswith(("+++", "---")):
            lines.append(line)
    return lines


def _git_apply_check(root, diff: str) -> None:
    subprocess.run(["git", "apply", "--check", "-"], input=diff.encode(), cwd=root, check=True)


@pytest.mark.parametrize("op", ["heaviside", "special_ndtri", "special_log_ndtr", "special_airy_ai",
                                "special_laguerre_polynomial_l", "special_legendre_polynomial_p", "glu_jvp"])
def test_new_op_on_real_yaml_is_minimal_and_git_applicable(real_checkout_older, op):
    real_checkout = real_checkout_older
    before = snapshot(real_checkout)
    result = run_cli(["-C", str(real_checkout), "new-op", op, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    yaml_lines = _file_section(result.stdout, NF)
    assert len(yaml_lines) == 2, yaml_lines
    removed, added = yaml_lines
    assert removed.startswith("-    CPU, CUDA: ") and added == removed.replace("-    CPU, CUDA: ", "+    CPU, CUDA, MPS: ", 1)
    _git_apply_check(real_checkout, result.stdout)
    assert snapshot(real_checkout) == before


# Run in every run (CI runs all eight): a complex-capable op and an activation.
@pytest.mark.parametrize("op", sampled(["sgn", "frac", "asinh", "acosh", "atanh", "mish", "sigmoid_backward", "tanh_backward"],
                                       ("sgn", "mish")))
def test_migrate_on_real_yaml_and_test_lists(real_checkout_older, op):
    real_checkout = real_checkout_older
    result = run_cli(["-C", str(real_checkout), "migrate", op, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    yaml_lines = _file_section(result.stdout, NF)
    shared = [l for l in yaml_lines if l.startswith("-    CPU, CUDA")]
    legacy = [l for l in yaml_lines if l.startswith("-    MPS: ")]
    added = [l for l in yaml_lines if l.startswith("+")]
    assert len(shared) == len(legacy) == len(added) == 1, yaml_lines
    assert added[0] == shared[0].replace("-    CPU, CUDA", "+    CPU, CUDA, MPS", 1)
    _git_apply_check(real_checkout, result.stdout)
    # applying then migrating again changes nothing
    assert run_cli(["-C", str(real_checkout), "migrate", op]).exit_code == 0
    after = snapshot(real_checkout)
    again = run_cli(["-C", str(real_checkout), "migrate", op])
    assert again.exit_code == 0 and "already native Metal" in again.stdout
    assert snapshot(real_checkout) == after


def test_unsupported_real_signature_is_named(real_checkout):
    result = run_cli(["-C", str(real_checkout), "migrate", "index_copy"])
    assert result.exit_code == 2
    assert "aten/src/ATen/native/IndexKernel.h:" in result.stderr
    assert "void(*)(TensorIterator&, int64_t, int64_t, int64_t)" in result.stderr


def test_real_ternary_with_several_scalars_is_refused_precisely(real_checkout):
    # 2.15's library lacks exec_ternary_kernel_with_params, which migrate can add (its kernels take a
    # params struct as alpha: tests/test_ternary_launcher.py); what stops addr is the family's files
    result = run_cli(["-C", str(real_checkout), "migrate", "addr"])
    assert result.exit_code == 2
    assert ("aten/src/ATen/native/LinearAlgebra.h:17: addr_stub is declared in LinearAlgebra.h, which has no default "
            "Metal kernel and host file (pass --kernel-file NAME.metal and --host-file NAME.mm)") in result.stderr


KERNEL_HEADERS = f"{MPS}/kernels"
PARAMS_OPS = {
    # op: (params header, struct, its fields in the schema's order)
    "softplus": ("Activation.h", "SoftplusParams", ("T beta;", "T threshold;")),
    "softplus_backward": ("Activation.h", "SoftplusBackwardParams", ("T beta;", "T threshold;")),
    "threshold": ("Activation.h", "ThresholdParams", ("T threshold;", "T value;")),
    "hardtanh_backward": ("Activation.h", "HardtanhBackwardParams", ("T min_val;", "T max_val;")),
    "nan_to_num": ("Unary.h", "NanToNumParams",
                   ("T nan;", "bool has_nan;", "T posinf;", "bool has_posinf;", "T neginf;", "bool has_neginf;")),
}


# Run in every run (CI runs all five): a forward and a backward params op.
@pytest.mark.parametrize("op", sampled(sorted(PARAMS_OPS), ("softplus", "hardtanh_backward")))
def test_params_struct_lands_in_the_real_header_and_the_diff_applies(real_checkout_older, op):
    real_checkout = real_checkout_older
    header, struct, fields = PARAMS_OPS[op]
    result = run_cli(["-C", str(real_checkout), "migrate", op, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    added = _file_section(result.stdout, f"{KERNEL_HEADERS}/{header}")
    body = ["+template <typename T>", f"+struct {struct} {{", *(f"+  {f}" for f in fields), "+};"]
    assert "\n".join(body) in "\n".join(added)
    assert not [line for line in added if line.startswith("-")]
    _git_apply_check(real_checkout, result.stdout)
    assert run_cli(["-C", str(real_checkout), "migrate", op]).exit_code == 0
    after = snapshot(real_checkout)
    again = run_cli(["-C", str(real_checkout), "migrate", op])
    assert again.exit_code == 0 and "already native Metal" in again.stdout
    assert snapshot(real_checkout) == after


def test_params_struct_goes_inside_the_real_headers_stable_abi_guard(real_checkout):
    assert run_cli(["-C", str(real_checkout), "migrate", "softplus"]).exit_code == 0
    text = (real_checkout / KERNEL_HEADERS / "Activation.h").read_text(encoding="utf-8")
    struct = text.index("struct SoftplusParams {")
    assert text.index("struct ELUBackwardParams {") < struct < text.index("#else\n#error")
    assert text.count("#pragma once") == 1


def test_a_new_params_header_copies_the_real_headers_conventions(real_checkout_older):
    # 2.13.0: on 2.15 nan_to_num's complex tests are expected to pass (2.15 compiles complex kernels for
    # it), so migrating it needs a complex body (issue 27)
    real_checkout = real_checkout_older
    assert run_cli(["-C", str(real_checkout), "migrate", "nan_to_num"]).exit_code == 0
    created = (real_checkout / KERNEL_HEADERS / "Unary.h").read_text(encoding="utf-8")
    sibling = (real_checkout / KERNEL_HEADERS / "Activation.h").read_text(encoding="utf-8")
    first_two = "".join(sibling.splitlines(True)[:2])
    assert first_two.endswith("#pragma once\n") and created.startswith(first_two + "\ntemplate <typename T>\n")
    assert created.endswith(sibling[sibling.index("\n#else\n"):])
