"""Issue 36: an op whose CPU meta function builds its iterator with a `_force_boolean_` builder
(signbit: `build_borrowing_unary_force_boolean_op`) writes bool for every input; its registrations are
`<in>` -> bool, the shape 2.15 compiles for bool-output unary ops (`isposinf_dense_bool_float`:
`<op>_dense_<out>_<in>`), and its functor returns bool (the kernels' static assertion wants the
functor's result type to be the output's)."""

from __future__ import annotations

import shutil

from conftest import FIXTURE_CHECKOUT, assemble_real_checkout
from mpsgen.read.cpuread import BOOL, SAME, body_kind, read_cpu_file
from support import changed_files, copy_checkout, run_cli, snapshot

UNARY_METAL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
SIGNBIT_EXPR = "x < 0 || (x == 0 && 1 / float(x) < 0)"


def test_force_boolean_builders_read_as_bool():
    assert body_kind("{ build_borrowing_unary_force_boolean_op(maybe_get_output(), self); }") == BOOL
    assert body_kind("{ build_binary_force_boolean_op(out, a, b); }") == BOOL
    assert body_kind("{ build_borrowing_unary_op(maybe_get_output(), self); }") == SAME
    text = (FIXTURE_CHECKOUT / "aten/src/ATen/native/UnaryOps.cpp").read_text(encoding="utf-8")
    cpu = read_cpu_file(text, "aten/src/ATen/native/UnaryOps.cpp")
    kind, line = cpu.metas[("signbit", "")]
    assert kind == BOOL and text.splitlines()[line - 1].startswith("TORCH_META_FUNC(signbit)")


def _kernel_lines(diff: str) -> list[str]:
    return [ln for ln in diff.splitlines() if ln.startswith("+REGISTER_UNARY_OP(signbit") or "operator()" in ln]


def test_signbit_registers_bool_outputs_on_the_miniature(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "signbit", "--expr", "metal::signbit(x)", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert _kernel_lines(result.stdout) == [
        "+  inline bool operator()(const T x_) {",
        "+REGISTER_UNARY_OP(signbit, float, bool);",
        "+REGISTER_UNARY_OP(signbit, half, bool);",
        "+REGISTER_UNARY_OP(signbit, bfloat, bool);",
    ]
    assert "+    return static_cast<bool>(metal::signbit(x));\n" in result.stdout
    before = snapshot(root)
    assert run_cli(["-C", str(root), "migrate", "signbit", "--expr", "metal::signbit(x)"]).exit_code == 0
    assert UNARY_METAL in changed_files(before, snapshot(root))
    verify = run_cli(["-C", str(root), "verify", "signbit", "--static-only"])
    assert verify.exit_code == 0, verify.stdout
    after = snapshot(root)
    again = run_cli(["-C", str(root), "migrate", "signbit", "--expr", "metal::signbit(x)"])
    assert again.exit_code == 0 and snapshot(root) == after


def test_the_placeholder_of_a_bool_op_returns_bool(tmp_path, monkeypatch):
    from mpsgen.facts import bodies
    from mpsgen.facts.bodyoffer import NoBody

    # signbit's graph gives a body (test_scan): with it off, the placeholder is what is written
    graph = next(s for s in bodies.SOURCES if s.name == "graph")
    monkeypatch.setattr(graph, "graph_body", lambda views, facts: NoBody("graph", "off in this test"))
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "signbit", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "+  inline bool operator()(const T x) {\n+    return x != T(0);\n" in result.stdout
    assert "+REGISTER_UNARY_OP(signbit, float, bool);\n" in result.stdout


def test_signbit_on_the_real_size_checkout(tmp_path, real_torch_files):
    """2.15's yaml (`CPU, CUDA, XPU: signbit_out` / `MPS: signbit_out_mps`) and OpInfo (every dtype
    but complex); the wheel ships no .cpp, so the miniature's UnaryOps.cpp stands in for the source
    checkout's meta function. Without it the output dtype is not read and the kernels keep the input's."""
    root = assemble_real_checkout(tmp_path / "pytorch", real_torch_files)
    args = ["-C", str(root), "migrate", "signbit", "--dtypes", "float,integer", "--expr", SIGNBIT_EXPR]
    wheel_only = run_cli([*args, "--dry-run"])
    assert wheel_only.exit_code == 0, wheel_only.stderr
    assert "+REGISTER_UNARY_OP(signbit, float, float);\n" in wheel_only.stdout
    shutil.copy(FIXTURE_CHECKOUT / "aten/src/ATen/native/UnaryOps.cpp", root / "aten/src/ATen/native/UnaryOps.cpp")
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    text = (root / UNARY_METAL).read_text(encoding="utf-8")
    registered = [ln for ln in text.splitlines() if ln.startswith("REGISTER_UNARY_OP(signbit,")]
    assert registered == [f"REGISTER_UNARY_OP(signbit, {t}, bool);"
                          for t in ("float", "half", "bfloat", "long", "int", "short", "uchar", "char", "bool")]
    yaml = (root / "aten/src/ATen/native/native_functions.yaml").read_text(encoding="utf-8")
    assert "    CPU, CUDA, MPS, XPU: signbit_out\n" in yaml and "signbit_out_mps" not in yaml
    verify = run_cli(["-C", str(root), "verify", "signbit", "--static-only"])
    assert verify.exit_code == 0, verify.stdout
