"""The losses end to end (issue 36): mse_loss, huber_loss, smooth_l1_loss and mse_loss_backward migrate
with a body, pass `verify --static-only`, change nothing on a second run and `try` matches torch's CPU op
for every registered dtype and scalar set, on the miniature (its Loss.cpp read) and on the 2.15.0
real-size checkout (the wheel: no .cpp, so nothing says what the shared function passes but the stub's
signature); huber_loss_backward and smooth_l1_loss_backward need a ternary params launcher 2.15's library
lacks (its exec_ternary_kernel takes one Scalar): migrate adds it (tests/test_ternary_launcher.py).

A double field (delta, beta) is held at opmath (float) precision in the params struct: in half, 1e6
would overflow and 1e-6 round to 1.01e-6, where torch's CPU huber computes with the double."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.commands.tryop.scalars import ScalarArg, host_arguments, scalar_sets
from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, every_file, needs, run_cli

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())

HUBER = "abs(a - b) < delta ? 0.5f * (a - b) * (a - b) : delta * (abs(a - b) - 0.5f * delta)"
# torch's CPU smooth_l1 computes a half input in half, beta rounded to half (1e6 -> inf): the body
# does the same with T(...); bfloat16 is computed in float there, which T(...) stays within tolerance of.
SMOOTH = "abs(T(a - b)) < T(beta) ? T(0.5f) * T(a - b) * T(a - b) / T(beta) : T(abs(T(a - b))) - T(0.5f) * T(beta)"
# CPU's mse rounds the difference to the input type before squaring it (`auto diff = a - b` in scalar_t)
MSE = "float(T(a - b)) * float(T(a - b))"
# the iterator's operands are (input, target, grad_output); the Scalar is the norm of the reduction
MSE_BACKWARD = "{alpha} * (a - b) * c"
DOUBLE_SETS = {"huber_loss": "delta", "smooth_l1_loss": "beta"}


def _cli(root: Path, *args: str):
    return run_cli(["-C", str(root), *args])


def _end_to_end(root: Path, op: str, expr: str) -> dict:
    first = _cli(root, "migrate", op, "--expr", expr)
    assert first.exit_code == 0, first.stderr
    after = every_file(root)
    again = _cli(root, "migrate", op, "--expr", expr)
    assert again.exit_code == 0, again.stderr
    assert every_file(root) == after
    verify = _cli(root, "verify", op, "--static-only")
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    result = _cli(root, "try", op, "--backend", "host", "--json")
    assert every_file(root) == after
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    for r in report["dtypes"]:
        assert r["status"] == "passed" or (r["status"] == "skipped" and "the CPU op refuses it" in r["note"]), r
    return report


@needs_compiler
@needs_torch
@pytest.mark.parametrize("op,expr", [("mse_loss", MSE), ("huber_loss", HUBER), ("smooth_l1_loss", SMOOTH)])
def test_forward_losses_on_the_miniature(tmp_path, op, expr):
    report = _end_to_end(copy_checkout(tmp_path), op, expr)
    if op in DOUBLE_SETS:
        name = DOUBLE_SETS[op]
        # the reduction never reaches the stub (Loss.cpp reduces after it): held at None, not varied
        assert all(label.startswith("reduction=0, ") for label in report["scalar_sets"])
        by_set = {(r["scalars"], r["dtype"]): r["status"] for r in report["dtypes"]}
        for value in ("1e-06", "1000000"):
            assert by_set[(f"reduction=0, {name}={value}", "float16")] == "passed"


def test_a_double_is_held_at_opmath_precision_in_the_struct(tmp_path):
    root = copy_checkout(tmp_path)
    result = _cli(root, "migrate", "huber_loss", "--expr", HUBER, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "+struct HuberParams {\n+  float delta;\n+};\n" in result.stdout
    assert "+    HuberParams<scalar_t> params{static_cast<float>(delta)};\n" in result.stdout


# ---- the 2.15.0 real-size checkout: the wheel's files, no .cpp ------------------------------------


@pytest.fixture
def real_215(real_checkout: Path) -> Path:
    (real_checkout / ".clang-format").write_text((Path(__file__).parents[1] / "fixtures/pytorch/.clang-format")
                                                 .read_text())
    return real_checkout


@needs_compiler
@needs_torch
def test_losses_on_the_215_real_size_checkout(real_215):
    for op, expr in (("mse_loss", MSE), ("huber_loss", HUBER), ("smooth_l1_loss", SMOOTH)):
        report = _end_to_end(real_215, op, expr)
        if op in DOUBLE_SETS:
            # no Loss.cpp: the host's parameter (delta) says which argument reaches the kernel, and
            # the schema's `int reduction` is not one of them
            assert all(label.startswith("reduction=0, ") for label in report["scalar_sets"]), report["scalar_sets"]
    # 2.15's exec_ternary_kernel takes the Scalar; unnamed on a wheel, it is the host's `alpha`
    report = _end_to_end(real_215, "mse_loss_backward", MSE_BACKWARD.format(alpha="alpha"))
    # the norm ATen computes from the reduction (Loss.cpp is not in a wheel: a known call)
    assert report["scalar_sets"] == ["reduction=1", "reduction=0", "reduction=2"]
    assert sum(r["status"] == "passed" for r in report["dtypes"]) == 9
    ops = real_215 / "aten/src/ATen/native/mps"
    assert "REGISTER_DISPATCH(mse_backward_stub, &mse_backward_mps_kernel)\n" in (
        ops / "operations/PointwiseOps.mm").read_text()
    assert "REGISTER_TERNARY_ALPHA_OP(mse_backward, half, float, half);\n" in (
        ops / "kernels/PointwiseOps.metal").read_text()
    header = (ops / "kernels/Binary.h").read_text()
    assert "  float delta;\n" in header and "  float beta;\n" in header


# the CPU kernels' branches (x = input - target), each product rounded to the input type as CPU's
# scalar_t arithmetic does; the Scalar is the norm of the reduction, `alpha` on a wheel (no Loss.cpp names it)
HUBER_BACKWARD = ("T(a - b) <= -T(delta) ? T(T(-T(alpha) * c) * T(delta)) : (T(a - b) >= T(delta) ? "
                  "T(T(T(alpha) * c) * T(delta)) : T(T(T(alpha) * T(a - b)) * c))")
# smooth_l1: the division in float, as CPU divides by beta at opmath precision (1e6 is no half)
SMOOTH_BACKWARD = ("T(a - b) <= -T(beta) ? T(-T(alpha) * c) : (T(a - b) >= T(beta) ? T(T(alpha) * c) : "
                   "T(T(T(T(alpha) * T(a - b)) * c) / beta))")


@needs_compiler
@needs_torch
@pytest.mark.parametrize("op,stub,expr,name", [
    ("huber_loss_backward", "huber_backward_stub", HUBER_BACKWARD, "delta"),
    ("smooth_l1_loss_backward", "smooth_l1_backward_stub", SMOOTH_BACKWARD, "beta")])
def test_ternary_backward_losses_add_the_launcher_2_15_lacks(real_215, op, stub, expr, name):
    first = _cli(real_215, "migrate", op, "--expr", expr)
    assert first.exit_code == 0, first.stderr
    summary = " ".join(first.output.split())
    assert "MetalShaderLibrary::exec_ternary_kernel_with_params added" in summary
    after = every_file(real_215)
    again = _cli(real_215, "migrate", op, "--expr", expr)
    assert again.exit_code == 0 and every_file(real_215) == after
    verify = _cli(real_215, "verify", op, "--static-only")
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    mps = real_215 / "aten/src/ATen/native/mps"
    assert "  void exec_ternary_kernel_with_params(\n" in (mps / "MetalShaderLibrary.h").read_text()
    assert "void MetalShaderLibrary::exec_ternary_kernel_with_params(TensorIteratorBase& iter,\n" in (
        mps / "OperationUtils.h").read_text()
    host = (mps / "operations/PointwiseOps.mm").read_text()
    assert f"REGISTER_DISPATCH({stub}, &{stub.removesuffix('_stub')}_mps_kernel)\n" in host
    assert "lib.exec_ternary_kernel_with_params(" in host
    result = _cli(real_215, "try", op, "--backend", "host", "--json")
    report = json.loads(result.stdout)
    assert every_file(real_215) == after
    # every scalar set passes (the launcher binds the struct the host fills); at a negative value (which
    # the forward losses refuse) CPU's vectorised and scalar loops disagree, and the kernel gives the
    # scalar loop's answer, which try counts as CPU's (the tensor laid out with a stride keeps a mean's norm)
    assert result.exit_code == 0, result.stdout
    assert all(r["status"] == "passed" for r in report["dtypes"]), [r for r in report["dtypes"] if r["status"] != "passed"]
    negative = [r for r in report["dtypes"] if f"{name}=-1" in r["scalars"]]
    assert negative and all("match the CPU's scalar loop" in r["note"] for r in negative), negative
    # the rule judges each case by CPU's two loops, never by neither: the first branch's sign flipped fails
    kernel = mps / "kernels/PointwiseOps.metal"
    text = kernel.read_text()
    assert text.count("-T(alpha) * c") == 1
    kernel.write_text(text.replace("-T(alpha) * c", "T(alpha) * c"))
    wrong = json.loads(_cli(real_215, "try", op, "--backend", "host", "--json").stdout)
    failed = {r["scalars"] for r in wrong["dtypes"] if r["status"] == "failed"}
    assert {f"reduction=1, {name}=0.5", f"reduction=1, {name}=-1"} <= failed, failed


def test_scan_on_215_ranks_the_ternary_backward_losses_expr_saying_the_launcher_is_added(real_215):
    result = _cli(real_215, "scan", "--json")
    assert result.exit_code == 0, result.stderr
    rows = {r["op"]: r["candidate"] for r in json.loads(result.stdout)["ops"] if r.get("candidate")}
    for op, names in (("huber_loss_backward", "alpha, delta"), ("smooth_l1_loss_backward", "alpha, beta")):
        assert rows[op]["tier"] == "expr", rows[op]
        assert rows[op]["reason"].endswith(f"pass --expr over a, b, c and {names}; migrate adds the library's "
                                           "exec_ternary_kernel_with_params"), rows[op]


# ---- units ------------------------------------------------------------------------------------------


def test_a_loss_reduction_is_never_a_host_parameter_in_order():
    reduction = ScalarArg("reduction", "int", 1, True)
    delta = ScalarArg("delta", "float", 1.0, True)
    # mse_loss_backward on a wheel: the host's Scalar is the norm, not the reduction
    assert host_arguments((reduction,), ("alpha",)) is None
    assert host_arguments((reduction, delta), ("delta",)) == (delta,)
    assert host_arguments((reduction, delta), ("value",)) == (delta,)
    sets = scalar_sets("huber_loss", (reduction, delta), carried=(delta,))
    assert [s.label for s in sets] == ["reduction=0, delta=1", "reduction=0, delta=2", "reduction=0, delta=-1",
                                       "reduction=0, delta=0", "reduction=0, delta=1e-06",
                                       "reduction=0, delta=1000000"]


# ---- how a loss reduces: through a helper of its file calling Tensor::mean()/sum() ----------------


def test_a_reduction_through_the_files_helper_is_named_with_the_kernels_serving_it(tmp_path):
    # huber_loss_out hands its result to apply_loss_reduction (the miniature's Loss.cpp, as ATen's):
    # `unreduced.mean()` / `unreduced.sum()`, served on MPS by mean.out / sum.IntList_out
    root = copy_checkout(tmp_path)
    result = _cli(root, "migrate", "huber_loss", "--expr", HUBER, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert ("note: aten/src/ATen/native/native_functions.yaml:1089: huber_loss reduces through Tensor::mean() "
            "(aten/src/ATen/native/Loss.cpp:14; MPS: mean.out (MPS: mean_out_mps) at "
            "aten/src/ATen/native/native_functions.yaml:1270), Tensor::sum() (aten/src/ATen/native/Loss.cpp:16; "
            "MPS: sum.IntList_out (CPU, CUDA, MPS, XPU: sum_out) at aten/src/ATen/native/native_functions.yaml:1262): "
            "with MPS on the shared line the reduction now runs as two kernels (huber_stub's elementwise pass, then "
            "the reduction; a fused pass is a later step)\n") in result.stderr


def test_the_cpu_reader_records_whole_tensor_reductions_called_as_methods():
    from mpsgen.read.cpuread import Use, read_cpu_file

    text = ("namespace {\nstatic at::Tensor reduce(const at::Tensor& t, int64_t r) {\n  if (r == 1) {\n"
            "    return t.mean();\n  }\n  return r == 2 ? t.sum() : t.sum(0);\n}\n}\n\n"
            "at::Tensor& loss_out(const at::Tensor& a, int64_t r, at::Tensor& out) {\n  loss_stub(kCPU, a);\n"
            "  return out.copy_(reduce(out, r));\n}\n")
    cpu = read_cpu_file(text, "aten/src/ATen/native/X.cpp")
    assert [u for u in cpu.uses_of("loss_out") if u.kind == "method"] == [Use("method", "mean", 4),
                                                                          Use("method", "sum", 6)]


def test_a_backward_loss_reduction_is_the_scale_its_shared_function_hands_the_stub(tmp_path):
    from test_params_args import _with_ternary_params

    root = _with_ternary_params(copy_checkout(tmp_path))
    indexing = root / "c10/metal/indexing.h"
    indexing.write_text(indexing.read_text().replace(
        "#define REGISTER_TERNARY_OP(", "#define REGISTER_TERNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO)\n"
        "#define REGISTER_TERNARY_OP(", 1))
    result = _cli(root, "migrate", "mse_loss_backward", "--expr", MSE_BACKWARD.format(alpha="norm"), "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert ("mse_loss_backward takes `reduction`; mse_loss_backward_out hands it to mse_backward_stub as norm = "
            "`reduction == Reduction::Mean ? 2. / input.numel() : 2.` (aten/src/ATen/native/Loss.cpp:158): the kernel "
            "scales by it and nothing reduces after it\n") in result.stderr
