"""An --expr naming the stub's Scalar by a name it does not have: the one-line refusal says which
name it has and how it got it (the shared function's call of the stub, read from the checkout's
.cpp; without one, as a wheel-built checkout has, `alpha`)."""

from __future__ import annotations

from support import copy_checkout, every_file, run_cli

LOSS_CPP = "aten/src/ATen/native/Loss.cpp"
LIBRARY = "aten/src/ATen/native/mps/MetalShaderLibrary.h"


def with_ternary_alpha(tmp_path):
    """The miniature with 2.15's launcher shape: exec_ternary_kernel takes one Scalar."""
    root = copy_checkout(tmp_path)
    path = root / LIBRARY
    old = "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name);\n"
    new = ("  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name,\n"
           "                           const std::optional<c10::Scalar> alpha = std::nullopt);\n")
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    return root


def _call_line(root) -> int:
    lines = (root / LOSS_CPP).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if "mse_backward_stub(iter.device_type()" in line)


def _refused(root, expr: str) -> str:
    """`migrate mse_loss_backward --expr EXPR`: exit 2, nothing written; its stderr."""
    before = every_file(root)
    result = run_cli(["-C", str(root), "migrate", "mse_loss_backward", "--expr", expr])
    assert result.exit_code == 2
    assert every_file(root) == before
    return result.stderr


def test_the_scalar_is_named_as_the_shared_functions_call_passes_it(tmp_path):
    root = with_ternary_alpha(tmp_path)
    assert _refused(root, "alpha * (a - b) * c") == (
        "mpsgen: error: --expr uses 'alpha', which is not an operand of this ternary op (operands are a, b, c, "
        "norm; norm is the Scalar mse_backward_stub takes, named as mse_loss_backward_out passes it at "
        f"{LOSS_CPP}:{_call_line(root)})\n")


def test_without_the_cpp_the_scalar_is_alpha_and_the_refusal_says_why(tmp_path):
    root = with_ternary_alpha(tmp_path)
    (root / LOSS_CPP).unlink()
    assert _refused(root, "norm * (a - b) * c") == (
        "mpsgen: error: --expr uses 'norm', which is not an operand of this ternary op (operands are a, b, c, "
        "alpha; alpha is the Scalar mse_backward_stub takes (void(*)(TensorIterator&, const Scalar&)): no call "
        "of it in this checkout's aten/src/ATen/native/*.cpp names it, so it is alpha)\n")
    # (`alpha` is accepted there: tests/test_losses.py migrates mse_loss_backward on the 2.15 wheel's files)
