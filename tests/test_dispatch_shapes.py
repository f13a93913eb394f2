"""Issue 36: the dispatch shapes 2.13-2.15 still serve with MPSGraph, on the miniature checkout.
Each construct: the exact diff (golden), everything else byte-identical, a second run changes nothing;
the refusals name what is missing."""

from __future__ import annotations

import pytest

from support import applies_its_diff_then_changes_nothing, copy_checkout, dry_run_matches_golden, run_cli, snapshot

CASES = {
    # the stub the shared function calls (Loss.cpp: mse_loss_out -> mse_stub), reducing through at::mean/at::sum
    "mse_loss_stub_from_shared_function": ["mse_loss"],
    # one function on two lines (`CPU: signbit_out` / `CUDA: signbit_out`): MPS joins CUDA's line
    "signbit_one_function_two_lines": ["signbit"],
    # a stub-less shared function calling at::clamp_min / at::clamp_min_: the yaml lines and the legacy go
    "relu_shared_function_calls_ops": ["relu"],
    # threshold_backward's shared function calls the forward's threshold_stub: once threshold is migrated
    "threshold_backward_after_threshold": ["threshold", "threshold_backward"],
    # alone: threshold_stub's kernel is registered with it (threshold's own MPS line stays on MPSGraph)
    "threshold_backward_registers_threshold_stub": ["threshold_backward"],
    # _prelu_kernel -> prelu_stub (called by the shared function, a name of its own)
    "prelu_kernel_stub_named_otherwise": ["_prelu_kernel"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_matches_golden(tmp_path, case):
    dry_run_matches_golden(tmp_path, ["migrate", *CASES[case]], f"migrate/{case}.diff")


@pytest.mark.parametrize("case", sorted(CASES))
def test_applies_the_diff_and_second_run_changes_nothing(tmp_path, case):
    applies_its_diff_then_changes_nothing(tmp_path, ["migrate", *CASES[case]])


def test_summary_says_how_the_stub_and_the_reduction_were_read(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "mse_loss", "--dry-run"])
    summary = " ".join(result.stderr.split())
    assert "stub mse_stub: called by mse_loss_out at aten/src/ATen/native/Loss.cpp:67" in summary
    assert ("mse_loss reduces through at::mean_out (aten/src/ATen/native/Loss.cpp:58; MPS: mean.out" in summary
            and "at::sum_out (aten/src/ATen/native/Loss.cpp:60;" in summary)
    assert "the reduction now runs as two kernels" in summary
    # the graph helper other losses still use stays; the one only mse_loss used goes
    assert "kept helper reduceLossTensor: still used at aten/src/ATen/native/mps/operations/LossOps.mm:" in summary
    assert "remove-static-helper squaredDifference" in summary


def test_one_function_on_two_lines_joins_the_cuda_line(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "signbit", "--dry-run"])
    assert "-    CUDA: signbit_out\n-    MPS: signbit_out_mps\n+    CUDA, MPS: signbit_out\n" in result.stdout
    assert "signbit_out serves CPU and CUDA on 2 lines" in " ".join(result.stderr.split())


def test_threshold_backward_alone_registers_threshold_stub_and_says_what_stays(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "threshold_backward"])
    assert result.exit_code == 0, result.output
    summary = " ".join(result.output.split())
    assert ("threshold_stub, threshold's stub (called at aten/src/ATen/native/Activation.cpp:"
            in summary)
    assert ("gets its MPS kernel registered with this migration (threshold's own MPS line stays on its MPSGraph "
            "kernel until `mpsgen migrate threshold`, which is then its dispatch line and the legacy removal)"
            in summary)
    # `migrate threshold` afterwards is its dispatch line and the legacy removal, and the tree is the
    # one `migrate threshold threshold_backward` writes in one run
    after = run_cli(["-C", str(root), "migrate", "threshold"])
    assert after.exit_code == 0, after.output
    assert "threshold_stub is already registered for MPS (threshold_kernel); kept as is" in " ".join(after.output.split())
    both = copy_checkout(tmp_path / "both")
    assert run_cli(["-C", str(both), "migrate", "threshold", "threshold_backward"]).exit_code == 0
    assert snapshot(root) == snapshot(both)


def test_a_called_op_without_an_mps_kernel_is_named(tmp_path):
    root = copy_checkout(tmp_path)
    yaml = root / "aten/src/ATen/native/native_functions.yaml"
    text = yaml.read_text(encoding="utf-8")
    yaml.write_text(text.replace("    CPU, CUDA, MPS, MTIA: clamp_min_out\n", "    CPU, CUDA, MTIA: clamp_min_out\n"),
                    encoding="utf-8")
    result = run_cli(["-C", str(root), "migrate", "relu"])
    assert result.exit_code == 2
    assert "at::clamp_min (called at aten/src/ATen/native/Activation.cpp:" in result.stderr
    assert "has no MPS kernel in this checkout" in result.stderr


def test_per_device_functions_without_a_stub_are_refused_naming_the_shape(tmp_path):
    """(gelu migrates now: tests/test_per_device.py; without a declared stub it cannot.)"""
    root = copy_checkout(tmp_path)
    header = root / "aten/src/ATen/native/Activation.h"
    header.write_text(header.read_text(encoding="utf-8").replace("DECLARE_DISPATCH(gelu_fn, GeluKernel)\n", ""),
                      encoding="utf-8")
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "gelu"])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "per-device functions (CPU: gelu_out_cpu, CUDA: gelu_out_cuda) no stub serves them: no dispatch stub found" in message
    assert snapshot(root) == before


def test_several_stubs_called_is_a_refusal_listing_them(tmp_path):
    root = copy_checkout(tmp_path)
    loss = root / "aten/src/ATen/native/Loss.cpp"
    text = loss.read_text(encoding="utf-8")
    loss.write_text(text.replace("    mse_stub(device_type(), *this);\n",
                                 "    mse_stub(device_type(), *this);\n    huber_stub(device_type(), *this, 1.0);\n"),
                    encoding="utf-8")
    result = run_cli(["-C", str(root), "migrate", "mse_loss"])
    assert result.exit_code == 2
    assert "call several dispatch stubs: mse_stub (aten/src/ATen/native/Loss.cpp:" in result.stderr
    assert "huber_stub (aten/src/ATen/native/Loss.cpp:" in result.stderr


def test_without_cpp_the_header_stub_named_like_the_op_is_confirmed_by_its_signature(tmp_path):
    root = copy_checkout(tmp_path)
    for cpp in (root / "aten/src/ATen/native").glob("*.cpp"):
        cpp.unlink()
    result = run_cli(["-C", str(root), "migrate", "mse_loss", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    summary = " ".join(result.stderr.split())
    assert ("stub mse_stub: the header's stub named like mse_loss, declared at aten/src/ATen/native/BinaryOps.h:"
            in summary)
    assert "how its shared function reduces was not read" in summary


def test_a_later_ops_refusal_names_the_line_on_disk(tmp_path):
    # without Activation.cpp nothing says which stub threshold_backward uses; threshold, planned
    # first, removes a yaml line above it: the refusal still names the line as the file has it
    root = copy_checkout(tmp_path)
    (root / "aten/src/ATen/native/Activation.cpp").unlink()
    before = snapshot(root)
    alone = run_cli(["-C", str(root), "migrate", "threshold_backward"])
    both = run_cli(["-C", str(root), "migrate", "threshold", "threshold_backward"])
    assert alone.exit_code == both.exit_code == 2
    assert both.stderr == alone.stderr
    lines = (root / "aten/src/ATen/native/native_functions.yaml").read_text(encoding="utf-8").splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("- func: threshold_backward.grad_input("))
    line = next(i for i, text in enumerate(lines[start:], start + 1) if text.strip().startswith("CPU, CUDA:"))
    assert both.stderr.startswith(f"mpsgen: error: aten/src/ATen/native/native_functions.yaml:{line}: ")
    assert snapshot(root) == before
