"""Facts of ATen a checkout without aten/src/ATen/native/*.cpp cannot show (`mpsgen.facts.recorded`):
threshold_backward_out's call of threshold_stub (threshold, 0) and log_sigmoid_backward's CUDA
iterator (grad_input <- self, grad_output). The checkout without .cpp is the miniature with its
native *.cpp deleted; its results are compared with the miniature's own (which reads the .cpp)."""

from __future__ import annotations

import json

import pytest

from support import copy_checkout, run_cli, snapshot

LOG_SIGMOID_BACKWARD_EXPR = ("b * (a < 0 ? 1.0f / (1.0f + metal::precise::exp(a))"
                             " : metal::precise::exp(-a) / (1.0f + metal::precise::exp(-a)))")
ACTIVATION_MM = "aten/src/ATen/native/mps/operations/Activation.mm"
ACTIVATION_H = "aten/src/ATen/native/Activation.h"
NATIVE = "aten/src/ATen/native"


def _without_cpp(tmp_path):
    root = copy_checkout(tmp_path / "nocpp")
    for cpp in (root / NATIVE).glob("*.cpp"):
        cpp.unlink()
    return root


def _migrated(root, args):
    result = run_cli(["-C", str(root), "migrate", *args])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    again = run_cli(["-C", str(root), "migrate", *args])
    assert again.exit_code == 0, again.stderr
    assert snapshot(root) == after  # a second run changes nothing
    return result, after


def _native_cpp(path: str) -> bool:
    return path.startswith(NATIVE + "/") and path.count("/") == NATIVE.count("/") + 1 and path.endswith(".cpp")


def test_threshold_backward_takes_threshold_stub_from_the_record_and_writes_what_the_cpp_gives(tmp_path):
    bare = _without_cpp(tmp_path)
    full = copy_checkout(tmp_path / "full")
    result, without = _migrated(bare, ["threshold_backward"])
    _, with_cpp = _migrated(full, ["threshold_backward"])
    assert without == {p: b for p, b in with_cpp.items() if not _native_cpp(p)}
    summary = " ".join(result.stdout.split())
    assert ("threshold_backward has no kernel of its own: threshold_backward_out (recorded call of ATen's "
            "Activation.cpp (threshold_backward_out passes threshold_stub threshold and 0): this checkout has no .cpp "
            "to read it from (recorded in mpsgen/facts/recorded.py)): threshold_stub, threshold's stub (as recorded), "
            "gets its MPS kernel registered with this migration") in summary
    assert "REGISTER_DISPATCH(threshold_stub, threshold_kernel);" in summary
    assert run_cli(["-C", str(bare), "verify", "threshold_backward", "--static-only"]).exit_code == 0


def test_a_checkout_with_its_cpp_never_uses_the_record(tmp_path):
    full = copy_checkout(tmp_path)
    result = run_cli(["-C", str(full), "migrate", "threshold_backward", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    summary = " ".join(result.stderr.split()) + " ".join(result.stdout.split())
    assert "recorded" not in summary
    assert "threshold_backward_out (aten/src/ATen/native/Activation.cpp:" in summary


def test_a_record_the_header_contradicts_is_refused(tmp_path):
    bare = _without_cpp(tmp_path)
    header = bare / ACTIVATION_H
    text = header.read_text(encoding="utf-8")
    old = "using threshold_fn = void (*)(TensorIteratorBase&, const c10::Scalar&, const c10::Scalar&);"
    assert old in text
    header.write_text(text.replace(old, "using threshold_fn = void (*)(TensorIteratorBase&, const c10::Scalar&);"),
                      encoding="utf-8")
    before = snapshot(bare)
    result = run_cli(["-C", str(bare), "migrate", "threshold_backward"])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert ("(threshold_backward_out passes threshold_stub threshold and 0): this checkout has no .cpp to read it from "
            "(recorded in mpsgen/facts/recorded.py), but threshold_stub is declared at aten/src/ATen/native/Activation.h:"
            ) in message
    assert ("as void(*)(TensorIteratorBase&, const Scalar&), not void(*)(TensorIteratorBase&, const Scalar&, "
            "const Scalar&) as recorded; the record does not hold for this checkout") in message
    assert snapshot(bare) == before


def test_log_sigmoid_backward_body_from_the_recorded_cuda_iterator(tmp_path):
    bare = _without_cpp(tmp_path)
    full = copy_checkout(tmp_path / "full")
    args = ["log_sigmoid_backward", "--expr", LOG_SIGMOID_BACKWARD_EXPR]
    result, without = _migrated(bare, args)
    _, with_cpp = _migrated(full, args)
    # every file but the MPS functions' bodies is what the .cpp gives
    assert {p: b for p, b in without.items() if p != ACTIVATION_MM} == {
        p: b for p, b in with_cpp.items() if p != ACTIVATION_MM and not _native_cpp(p)}
    mm = without[ACTIVATION_MM].decode()
    assert ("                                     Tensor& grad_input) {\n"
            "  auto iter = TensorIteratorConfig().add_output(grad_input).add_const_input(self).add_const_input(grad_output).build();\n"
            "  log_sigmoid_backward_stub(kMPS, iter);\n"
            "  return grad_input;\n"
            "}\n") in mm
    assert ("Tensor log_sigmoid_backward_mps(const Tensor& grad_output, const Tensor& self, const Tensor& buffer) {\n"
            "  auto grad_input = at::empty_like(grad_output);\n"
            "  auto iter = TensorIteratorConfig().add_output(grad_input).add_const_input(self).add_const_input(grad_output).build();\n"
            "  log_sigmoid_backward_stub(kMPS, iter);\n"
            "  return iter.output();\n"
            "}\n") in mm
    summary = " ".join(result.stdout.split())
    assert ("its body becomes the stub call from the recorded iterator of ATen's Activation.cpp "
            "(log_sigmoid_backward_cuda_out builds it with output grad_input and inputs self, grad_output, then calls "
            "log_sigmoid_backward_stub): this checkout has no .cpp to read it from (recorded in "
            "mpsgen/facts/recorded.py), for kMPS") in summary
    verify = run_cli(["-C", str(bare), "verify", "log_sigmoid_backward", "--static-only"])
    assert verify.exit_code == 0, verify.stdout


def test_a_recorded_iterator_the_checkout_contradicts_is_refused(tmp_path):
    bare = _without_cpp(tmp_path)
    header = bare / ACTIVATION_H
    text = header.read_text(encoding="utf-8")
    old = "DECLARE_DISPATCH(activation_backward_fn, log_sigmoid_backward_stub)"
    header.write_text(text.replace(old, "DECLARE_DISPATCH(structured_activation_backward_fn, log_sigmoid_backward_stub)"),
                      encoding="utf-8")
    before = snapshot(bare)
    result = run_cli(["-C", str(bare), "migrate", "log_sigmoid_backward"])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert ("but log_sigmoid_backward's stub is log_sigmoid_backward_stub, declared at aten/src/ATen/native/Activation.h:"
            ) in message
    assert ("as void(*)(TensorIteratorBase&), not log_sigmoid_backward_stub void(*)(TensorIterator&); the record does "
            "not hold for this checkout") in message
    assert snapshot(bare) == before


@pytest.mark.parametrize("op", ["threshold_backward", "log_sigmoid_backward"])
def test_scan_without_cpp_offers_both(tmp_path, op):
    bare = _without_cpp(tmp_path)
    result = run_cli(["-C", str(bare), "scan", "--json"])
    assert result.exit_code == 0, result.stderr
    assert (f'"op": "{op}"') in result.stdout
    rows = [r for r in json.loads(result.stdout)["ops"] if r["op"] == op]
    assert rows[0]["candidate"]["tier"] in ("ready", "expr"), rows[0]["candidate"]


@pytest.mark.parametrize("cpp", [True, False])
def test_stub_still_overrides_the_record(tmp_path, cpp):
    # a --stub the shared function does not call is a kernel of its own (it used to stop on StopIteration)
    root = copy_checkout(tmp_path) if cpp else _without_cpp(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "threshold_backward", "--stub", "sigmoid_backward_stub", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    out = " ".join((result.stdout + result.stderr).split())
    assert "stub sigmoid_backward_stub: --stub" in out
    assert "recorded" not in out
    assert snapshot(root) == before
