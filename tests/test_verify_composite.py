"""Issue 36: `verify` judges an op with no kernel of its own by what its shared function calls
(`facts.resolve.composite_judgement`, the facts `migrate` reads: relu -> at::clamp_min/at::clamp_min_,
threshold_backward -> threshold's stub): it passes once migrate has run and fails, naming the call,
when a called op loses its MPS kernel."""

from __future__ import annotations

import json

from support import copy_checkout, run_cli

YAML = "aten/src/ATen/native/native_functions.yaml"
ACTIVATION_KERNEL_MM = "aten/src/ATen/native/mps/operations/ActivationKernel.mm"


def _verify(root, *ops):
    result = run_cli(["-C", str(root), "verify", *ops, "--static-only", "--json"])
    doc = json.loads(result.stdout)
    checks = {(c["op"], c["check"]): c for c in doc["stages"][0]["checks"]}
    return result.exit_code, checks, doc["findings"]


def _edit(root, rel, old, new):
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_relu_passes_after_migrate_and_fails_when_clamp_min_loses_its_mps_kernel(tmp_path):
    root = copy_checkout(tmp_path)
    code, checks, _ = _verify(root, "relu")
    assert code == 1  # before: the separate `MPS: relu_mps` line and its MPSGraph body
    assert checks[("relu", "yaml-dispatch")]["status"] == "failed"
    assert checks[("relu", "legacy")]["status"] == "failed"
    assert run_cli(["-C", str(root), "migrate", "relu"]).exit_code == 0
    code, checks, findings = _verify(root, "relu")
    assert code == 0, findings
    assert checks[("relu", "stub-registration")]["status"] == "passed"
    assert checks[("relu", "kernel-name")]["status"] == "skipped"
    assert "served by what its shared function calls" in checks[("relu", "kernel-name")]["reason"]
    _edit(root, YAML, "    CPU, CUDA, MPS, MTIA: clamp_min_out\n", "    CPU, CUDA, MTIA: clamp_min_out\n")
    code, checks, findings = _verify(root, "relu")
    assert code == 1
    assert checks[("relu", "stub-registration")]["status"] == "failed"
    (finding,) = findings
    assert finding["path"] == "aten/src/ATen/native/Activation.cpp"
    assert "at::clamp_min (called at aten/src/ATen/native/Activation.cpp:" in finding["message"]
    assert "has no MPS kernel in this checkout" in finding["message"]


def test_threshold_backward_passes_after_threshold_and_fails_without_its_registration(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "threshold", "threshold_backward"]).exit_code == 0
    code, checks, findings = _verify(root, "threshold_backward")
    assert code == 0, findings
    assert checks[("threshold_backward", "stub-registration")]["status"] == "passed"
    _edit(root, ACTIVATION_KERNEL_MM, "REGISTER_DISPATCH(threshold_stub, threshold_kernel);\n", "")
    code, checks, findings = _verify(root, "threshold_backward")
    assert code == 1
    (finding,) = [f for f in findings if f["check"] == "stub-registration"]
    assert "threshold_stub, threshold's stub (called at aten/src/ATen/native/Activation.cpp:" in finding["message"]
    assert "has no MPS registration" in finding["message"]
    assert "migrate threshold first" in finding["hint"]


def test_a_stub_less_op_without_cpp_is_not_judged(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "relu"]).exit_code == 0
    for cpp in (root / "aten/src/ATen/native").glob("*.cpp"):
        cpp.unlink()
    code, checks, _ = _verify(root, "relu")
    assert code == 0
    assert checks[("relu", "stub-registration")]["status"] == "skipped"
    assert "what its shared function calls was not read" in checks[("relu", "stub-registration")]["reason"]
