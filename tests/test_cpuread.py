"""The CPU side of integer promotion (mpsgen.read.cpuread): what an op's CPU implementation gives for
integer inputs, read from the checkout's aten/src/ATen/native/*.cpp, one test per construct the
fixture carries; the dtype rule reads the OpInfo first, then this fact, and an unknown one keeps
the OpInfo's answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.read.cpuread import body_kind
from mpsgen.facts.views import Views, read_op
from support import FIXTURE_CHECKOUT, copy_checkout, every_file, run_cli
from test_dtype_advice import LOGIT_EXPR, proposed, with_logit

CMI = "torch/testing/_internal/common_methods_invocations.py"
NATIVE = "aten/src/ATen/native"


def cpu_of(op: str, root: Path = FIXTURE_CHECKOUT):
    views = Views(Workspace(Checkout.find(root, None)))
    out = read_op(views, op).cpu_output
    return out.kind, (str(out.location) if out.location else None), out.why


@pytest.mark.parametrize("op, kind, where", [
    # a file macro whose body is a float meta function, called per op
    ("acosh", "int2float", "UnaryOps.cpp:14"),
    ("special_ndtri", "int2float", "UnaryOps.cpp:17"),
    # a file macro whose body keeps the dtype
    ("frac", "same", "UnaryOps.cpp:25"),
    # a literal TORCH_META_FUNC with a plain builder (after a TORCH_CHECK)
    ("sign", "same", "UnaryOps.cpp:28"),
    # a literal TORCH_META_FUNC with a float builder
    ("atan2", "int2float", "BinaryOps.cpp:8"),
    ("special_laguerre_polynomial_l", "int2float", "BinaryOps.cpp:21"),
    # TORCH_META_FUNC2: named after the functional entry's overload (copysign.Tensor, xlogy.Tensor)
    ("copysign", "int2float", "BinaryOps.cpp:12"),
    ("xlogy", "int2float", "BinaryOps.cpp:16"),
    ("fmod", "same", "BinaryOps.cpp:25"),
    # build_binary_op (not borrowing)
    ("heaviside", "same", "BinaryOps.cpp:29"),
    # a same-dtype file macro whose calls end in `;`
    ("hypot", "same", "BinaryOps.cpp:44"),
    # build_unary_op in Activation.cpp
    ("softplus", "same", "Activation.cpp:8"),
    ("mish", "same", "Activation.cpp:13"),
    # non-structured: the CPU kernel builds TensorIterator::unary_op itself
    ("hardswish", "same", "Activation.cpp:35"),
    # non-structured: TensorIterator::borrowing_binary_op, only the out kernel defined
    ("hardtanh_backward", "same", "Activation.cpp:42"),
    # non-structured: through a template helper of the same file building unary_float_op
    ("angle", "int2float", "UnaryOps.cpp:66"),
])
def test_each_construct_is_read(op, kind, where):
    got_kind, got_where, why = cpu_of(op)
    assert (got_kind, got_where, why) == (kind, f"{NATIVE}/{where}", "")


def test_a_hand_built_iterator_is_unknown_with_the_reason():
    assert cpu_of("threshold") == (
        "unknown", f"{NATIVE}/Activation.cpp:18",
        "the meta function of threshold builds its iterator with no unary/binary builder mpsgen reads "
        "(e.g. a TensorIteratorConfig of its own)")


def test_an_op_without_a_cpu_definition_is_unknown():
    assert cpu_of("softplus_backward") == (
        "unknown", None, f"no meta function of softplus_backward found in {NATIVE}/*.cpp")


def test_a_checkout_without_cpp_files_skips_with_the_reason(tmp_path):
    root = copy_checkout(tmp_path)
    for name in ("UnaryOps.cpp", "BinaryOps.cpp", "Activation.cpp", "Loss.cpp"):
        (root / NATIVE / name).unlink()
    assert cpu_of("atan2", root) == (
        "unknown", None,
        f"this checkout has no {NATIVE}/*.cpp (a wheel ships none): the CPU output dtype of atan2 was not read")


def test_body_kind_reads_both_builders_as_unknown():
    assert body_kind("if (a) { build_borrowing_unary_float_op(o, s); } else { build_borrowing_unary_op(o, s); }") \
        == "unknown"
    assert body_kind("build(TensorIteratorConfig().promote_integer_inputs_to_float(true));") == "int2float"
    assert body_kind("return x;") == ""


def without_flag(root: Path, name: str) -> None:
    """Drop `promotes_int_to_float=True` from the OpInfo `name` (an OpInfo that does not say it)."""
    path = root / CMI
    text = path.read_text(encoding="utf-8")
    start = text.index(f"Info('{name}',")
    flag = text.index("promotes_int_to_float=True,\n", start)
    line_start = text.rindex("\n", 0, flag) + 1
    path.write_text(text[:line_start] + text[flag + len("promotes_int_to_float=True,\n"):], encoding="utf-8")


def test_the_cpu_kernel_says_float_where_the_opinfo_is_silent(tmp_path):
    # laguerre's OpInfo tests integer inputs; without its flag, the float meta function decides
    root = copy_checkout(tmp_path)
    without_flag(root, "special.laguerre_polynomial_l")
    before = every_file(root)
    refused = run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l", "--expr", "a * b",
                       "--dtypes", "float,integer"])
    assert refused.exit_code == 2
    assert ("special_laguerre_polynomial_l: integer inputs give float (its CPU implementation builds a float "
            f"output for them at {NATIVE}/BinaryOps.cpp:21); dtype group 'integer' would register integer outputs "
            "for them") in refused.stderr
    assert proposed(refused.stderr) == "float,int2float"
    assert every_file(root) == before
    # the value proposed registers the integer inputs with a float output
    accepted = run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l", "--expr", "a * b",
                        "--dtypes", "float,int2float"])
    assert accepted.exit_code == 0, accepted.output
    kernel = (root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text(encoding="utf-8")
    assert "REGISTER_INT2FLOAT_BINARY_OP(laguerre_polynomial_l);" in kernel


def test_without_the_cpp_file_the_silent_opinfo_keeps_todays_behaviour(tmp_path):
    # nothing says laguerre promotes: --dtypes float,integer is taken as asked
    root = copy_checkout(tmp_path)
    without_flag(root, "special.laguerre_polynomial_l")
    (root / NATIVE / "BinaryOps.cpp").unlink()
    result = run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l", "--expr", "a * b",
                      "--dtypes", "float,integer"])
    assert result.exit_code == 0, result.output
    kernel = (root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text(encoding="utf-8")
    assert "REGISTER_INT2FLOAT_BINARY_OP(laguerre_polynomial_l);" not in kernel


def test_an_alpha_kernel_takes_float_output_from_the_cpu_kernel(tmp_path):
    # logit (an alpha kernel) without its OpInfo flag: the CPU kernel's float iterator decides,
    # and an --expr gets int2float by default, the summary saying where the CPU kernel says so
    root = with_logit(tmp_path)
    without_flag(root, "logit")
    first = run_cli(["-C", str(root), "migrate", "logit", "--expr", LOGIT_EXPR])
    assert first.exit_code == 0, first.output
    assert ("int2float registered for the --expr body: integer inputs give float (its CPU implementation builds "
            f"a float output for them at {NATIVE}/UnaryOps.cpp:") in first.output
    text = (root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal").read_text(encoding="utf-8")
    assert "REGISTER_UNARY_ALPHA_OP(logit, long, float, float);" in text
    # the same refusal of `integer`, now said from the CPU kernel
    root2 = with_logit(tmp_path / "again")
    without_flag(root2, "logit")
    refused = run_cli(["-C", str(root2), "migrate", "logit", "--expr", LOGIT_EXPR, "--dtypes", "float,integer"])
    assert refused.exit_code == 2
    assert f"(its CPU implementation builds a float output for them at {NATIVE}/UnaryOps.cpp:" in refused.stderr
    assert proposed(refused.stderr) == "float,int2float"
