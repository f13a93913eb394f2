"""Issue 36 item 3: per-device functions around one stub. CPU and CUDA dispatch to functions of their
own (`CPU: gelu_out_cpu`, `CUDA: gelu_out_cuda`) that call one stub for their device; MPS to its own
MPSGraph function (`MPS: gelu_out_mps`), which stays in the yaml while its body becomes the stub call
for kMPS (mpsgen.facts.perdevice), with the kernel and REGISTER_DISPATCH written as for any stub.

The miniature carries 2.15's three shapes: gelu and gelu_backward (structured: `TORCH_IMPL_FUNC`, the
stub takes a GeluType made from `approximate`, a params struct) and log_sigmoid_backward (two
non-structured functions per device building their own iterator, activation_backward_fn)."""

from __future__ import annotations

import json

import pytest

from conftest import assemble_real_checkout
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.read.metalhost.compiler import find_compiler
from support import changed_files, copy_checkout, diff_paths, dry_run_matches_golden, needs, run_cli, snapshot

GELU_EXPR = ("approximate == 1 ? 0.5f * x * (1.0f + metal::precise::tanh(0.7978845608f * (x + 0.044715f * x * x * x)))"
             " : 0.5f * x * (1.0f + c10::metal::erf(x * 0.7071067811865476f))")
GELU_BACKWARD_EXPR = ("approximate == 1 ? a * (0.5f * (1.0f + metal::precise::tanh(0.7978845608f * (b + 0.044715f * b * b * b)))"
                      " + 0.5f * b * (1.0f - metal::precise::tanh(0.7978845608f * (b + 0.044715f * b * b * b))"
                      " * metal::precise::tanh(0.7978845608f * (b + 0.044715f * b * b * b)))"
                      " * 0.7978845608f * (1.0f + 3.0f * 0.044715f * b * b))"
                      " : a * (0.5f * (1.0f + c10::metal::erf(b * 0.7071067811865476f))"
                      " + b * 0.3989422804f * metal::precise::exp(-0.5f * b * b))")
# the MPS functions build the CUDA functions' iterator, (self, grad_output): a, b (the CPU's also
# holds the CPU forward's buffer, which MPS's forward leaves empty and its legacy functions never read)
LOG_SIGMOID_BACKWARD_EXPR = ("b * (a < 0 ? 1.0f / (1.0f + metal::precise::exp(a))"
                             " : metal::precise::exp(-a) / (1.0f + metal::precise::exp(-a)))")

CASES = {
    "gelu_structured_enum_params": ["gelu", "--expr", GELU_EXPR],
    "gelu_backward_structured_enum_params": ["gelu_backward", "--expr", GELU_BACKWARD_EXPR],
    "log_sigmoid_backward_two_functions_own_iterator": ["log_sigmoid_backward", "--expr", LOG_SIGMOID_BACKWARD_EXPR],
}
ACTIVATION_MM = "aten/src/ATen/native/mps/operations/Activation.mm"
YAML = "aten/src/ATen/native/native_functions.yaml"

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_matches_golden(tmp_path, case):
    result = dry_run_matches_golden(tmp_path, ["migrate", *CASES[case]], f"migrate/{case}.diff")
    assert YAML not in result.stdout  # the MPS lines stay


@pytest.mark.parametrize("case", sorted(CASES))
def test_applies_verifies_and_a_second_run_changes_nothing(tmp_path, case):
    root = copy_checkout(tmp_path)
    op = CASES[case][0]
    assert run_cli(["-C", str(root), "verify", op, "--static-only"]).exit_code == 1  # the graph function
    diff = run_cli(["-C", str(root), "migrate", *CASES[case], "--dry-run"]).stdout
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", *CASES[case]])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    assert changed_files(before, after) == diff_paths(diff)
    verify = run_cli(["-C", str(root), "verify", op, "--static-only"])
    assert verify.exit_code == 0, verify.stdout
    again = run_cli(["-C", str(root), "migrate", op])
    assert again.exit_code == 0, again.stderr
    assert f"{op}: already native Metal; nothing to change." in again.stdout
    assert snapshot(root) == after


def test_the_summary_says_where_the_stub_call_was_read(tmp_path):
    root = copy_checkout(tmp_path)
    gelu = " ".join(run_cli(["-C", str(root), "migrate", *CASES["gelu_structured_enum_params"], "--dry-run"]).stderr.split())
    assert "stub GeluKernel: called by gelu_out_cpu at aten/src/ATen/native/Activation.cpp:70" in gelu
    assert ("gelu.out's CPU and CUDA kernels are per-device functions (CPU: gelu_out_cpu "
            "(aten/src/ATen/native/native_functions.yaml:1184), CUDA: gelu_out_cuda "
            "(aten/src/ATen/native/native_functions.yaml:1185)): `MPS: gelu_out_mps` stays in the yaml and its body "
            "becomes the stub call as gelu_out_cpu calls it at aten/src/ATen/native/Activation.cpp:70, for kMPS") in gelu
    assert f"{ACTIVATION_MM}:488 body gelu_out_mps: its body (21 lines, 1 graph site) becomes the stub call" in gelu
    assert "remove-static-helper normcdf (15 lines)" in gelu  # only gelu's graph used it
    log = " ".join(run_cli(["-C", str(root), "migrate", *CASES["log_sigmoid_backward_two_functions_own_iterator"],
                            "--dry-run"]).stderr.split())
    assert ("`MPS: log_sigmoid_backward_mps` stays in the yaml and its body becomes the stub call as "
            "log_sigmoid_backward_cuda's body makes it (aten/src/ATen/native/Activation.cpp:") in log
    assert ("for kMPS (log_sigmoid_backward_cpu's iterator reads buffer, which log_sigmoid_backward's legacy MPS "
            "functions never read)") in log


def test_a_cpu_body_with_preprocessor_branches_is_refused(tmp_path):
    root = copy_checkout(tmp_path)
    cpp = root / "aten/src/ATen/native/Activation.cpp"
    text = cpp.read_text(encoding="utf-8")
    old = "  log_sigmoid_backward_stub(kCPU, iter);\n  return grad_input;\n"
    assert text.count(old) == 1
    cpp.write_text(text.replace(old, "#if AT_MKLDNN_ENABLED()\n  log_sigmoid_backward_stub(kCPU, iter);\n#endif\n"
                                     "  return grad_input;\n"), encoding="utf-8")
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "log_sigmoid_backward"])
    assert result.exit_code == 2
    assert "log_sigmoid_backward_cpu_out's body has preprocessor conditionals" in " ".join(result.stderr.split())
    assert snapshot(root) == before


def test_new_op_points_at_migrate(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "gelu"])
    assert result.exit_code == 2
    assert "already served by a separate MPS kernel gelu_out_mps" in result.stderr
    assert "mpsgen migrate gelu" in result.stderr


def _try(root, op, code):
    result = run_cli(["-C", str(root), "try", op, "--backend", "host", "--json"])
    assert result.exit_code == code, result.stdout + result.stderr
    return json.loads(result.stdout)


@needs_compiler
@needs_torch
def test_try_gelu_passes_for_both_approximations_and_catches_a_swapped_body(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", *CASES["gelu_structured_enum_params"]]).exit_code == 0
    report = _try(root, "gelu", 0)
    assert report["scalar_sets"] == ["approximate=none", "approximate=tanh"]
    assert {(r["scalars"], r["dtype"], r["status"]) for r in report["dtypes"]} == {
        (s, d, "passed") for s in ("approximate=none", "approximate=tanh") for d in ("float32", "float16", "bfloat16")}
    metal = root / "aten/src/ATen/native/mps/kernels/ActivationKernel.metal"
    text = metal.read_text(encoding="utf-8")
    assert text.count("approximate == 1") == 1  # (clang-format breaks the line after it)
    metal.write_text(text.replace("approximate == 1", "approximate == 0"), encoding="utf-8")
    failed = _try(root, "gelu", 1)
    assert {r["scalars"] for r in failed["dtypes"] if r["status"] == "failed"} == {"approximate=none", "approximate=tanh"}


@needs_compiler
@needs_torch
def test_try_gelu_backward_passes_for_both_approximations(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", *CASES["gelu_backward_structured_enum_params"]]).exit_code == 0
    report = _try(root, "gelu_backward", 0)
    assert {r["scalars"] for r in report["dtypes"] if r["status"] == "passed"} == {"approximate=none", "approximate=tanh"}


def test_the_real_size_checkout(tmp_path, real_torch_files):
    """2.15's yaml and headers (GeluKernel, get_gelutype_enum defined in Activation.h), the miniature's
    .mm/.metal. A wheel ships no .cpp: gelu's call is made from the stub's declaration and the header's
    helper; log_sigmoid_backward builds its own iterator, which only the device functions' bodies say how:
    mpsgen's record of the CUDA one's stands in for them (tests/test_recorded.py)."""
    root = assemble_real_checkout(tmp_path / "pytorch", real_torch_files)
    for op in ("gelu", "gelu_backward"):
        result = run_cli(["-C", str(root), "migrate", *CASES[next(c for c in CASES if CASES[c][0] == op)]])
        assert result.exit_code == 0, result.stderr
        summary = " ".join(result.stdout.split())
        assert "from GeluKernel's declaration" in summary or "from GeluBackwardKernel's declaration" in summary
        assert "(get_gelutype_enum at aten/src/ATen/native/Gelu.h:" in summary  # 2.15 defines it there
        verify = run_cli(["-C", str(root), "verify", op, "--static-only"])
        assert verify.exit_code == 0, verify.stdout
    mm = (root / ACTIVATION_MM).read_text(encoding="utf-8")
    assert "  GeluKernel(kMPS, *this, get_gelutype_enum(approximate));\n" in mm
    assert "  GeluBackwardKernel(kMPS, *this, get_gelutype_enum(approximate));\n" in mm
    yaml = (root / YAML).read_text(encoding="utf-8")
    assert "    CPU: gelu_out_cpu\n    CUDA: gelu_out_cuda\n    MPS: gelu_out_mps\n" in yaml
    # the iterator only the device functions' bodies state comes from mpsgen's record of the CUDA one
    # (facts/recorded.py), confirmed by the stub's declaration and what the legacy MPS functions read
    result = run_cli(["-C", str(root), "migrate", *CASES["log_sigmoid_backward_two_functions_own_iterator"]])
    assert result.exit_code == 0, result.stderr
    assert "from the recorded iterator of ATen's Activation.cpp" in " ".join(result.stdout.split())
    verify = run_cli(["-C", str(root), "verify", "log_sigmoid_backward", "--static-only"])
    assert verify.exit_code == 0, verify.stdout


@needs_compiler
@needs_torch
def test_try_on_the_real_size_checkout_reads_the_enum_from_the_mps_functions_call(tmp_path, real_torch_files):
    """A wheel has no Activation.cpp: try takes what MPS passes GeluKernel from the MPS function migrate
    wrote (`get_gelutype_enum(approximate)`), so each `approximate` string reaches the struct as its
    enumerator (it used to stop on 'none' as an int)."""
    root = assemble_real_checkout(tmp_path / "pytorch", real_torch_files)
    assert run_cli(["-C", str(root), "migrate", *CASES["gelu_structured_enum_params"]]).exit_code == 0
    result = run_cli(["-C", str(root), "try", "gelu", "--backend", "host", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["scalar_sets"] == ["approximate=none", "approximate=tanh"]
    assert all(r["status"] == "passed" for r in report["dtypes"]), report["dtypes"]


@needs_compiler
@needs_torch
def test_log_sigmoid_backward_without_the_buffer_matches_the_cpu_op_given_its_own_buffer(tmp_path):
    """The MPS kernel reads (self, grad_output), as the CUDA functions build it; torch's CPU op reads
    the buffer its forward makes, so try hands it that one (`DERIVED_ARGUMENTS`) and they agree."""
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", *CASES["log_sigmoid_backward_two_functions_own_iterator"]]).exit_code == 0
    result = run_cli(["-C", str(root), "try", "log_sigmoid_backward", "--backend", "host", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert "(its buffer made by aten::log_sigmoid_forward)" in report["reference"]
    assert [r["status"] for r in report["dtypes"]] == ["passed"] * 3, report["dtypes"]
