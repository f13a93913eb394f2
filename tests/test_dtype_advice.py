"""Dtype advice converges: a refusal proposes one `--dtypes` value that the same command accepts,
with every group the tests need at once; integer inputs of an op that promotes them to float are
registered with a float output, alpha kernels too."""

from __future__ import annotations

import re

import pytest

from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, every_file, run_cli

MPS = "aten/src/ATen/native/mps"
CMI = "torch/testing/_internal/common_methods_invocations.py"
YAML = "aten/src/ATen/native/native_functions.yaml"
LOGIT_EXPR = "log(x / (1.0f - x))"
THRESHOLD_EXPR = "a <= threshold ? value : b"

def with_logit(tmp_path):
    """The miniature (which carries logit's entries, stub and MPSGraph functions) with the test
    lists of a release whose MPS tests take logit's integer inputs."""
    root = copy_checkout(tmp_path)
    # MPS tests logit's integer inputs, as upstream does once a kernel serves them: no xfail for them
    lists = root / "torch/testing/_internal/common_mps.py"
    text = lists.read_text(encoding="utf-8")
    entry = '            "logit": [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool],\n'
    assert entry in text
    lists.write_text(text.replace(entry, ""), encoding="utf-8")
    cmi = root / CMI
    text = cmi.read_text(encoding="utf-8")
    skip = re.search(r"\n +# integer inputs are not implemented by the graph path\n.*?dtypes=integral_types\(\)\),", text, re.S)
    assert skip
    cmi.write_text(text[: skip.start()] + text[skip.end():], encoding="utf-8")
    return root


def _yaml_line(root, start: str) -> int:
    lines = (root / YAML).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(start))


def _opinfo_line(root) -> int:
    """The line of logit's OpInfo call (where the summary points for its promotes_int_to_float)."""
    lines = (root / CMI).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if "UnaryUfuncInfo('logit'" in line)


def with_bool_threshold(tmp_path):
    """threshold as upstream tests it: bool among its OpInfo dtypes."""
    root = copy_checkout(tmp_path)
    path = root / CMI
    text = path.read_text(encoding="utf-8")
    old = "           aten_name='threshold',\n           dtypes=all_types_and(torch.half, torch.bfloat16),"
    assert old in text
    path.write_text(text.replace(old, old.replace("all_types_and(torch.half", "all_types_and(torch.bool, torch.half")),
                    encoding="utf-8")
    return root


def proposed(stderr: str) -> str:
    found = re.findall(r"--dtypes (\S+?)\)?$", stderr.strip())
    assert len(found) == 1, stderr
    return found[0]


def _advice_then_accepted(root, argv):
    """The first run refuses with one --dtypes value; the same command with it is accepted and
    writes. Returns (value, the second run's result)."""
    before = every_file(root)
    first = run_cli(["-C", str(root), *argv])
    assert first.exit_code == 2, first.output
    assert every_file(root) == before
    value = proposed(first.stderr)
    second = run_cli(["-C", str(root), *argv, "--dtypes", value])
    assert second.exit_code == 0, second.output
    return value, second


def test_logit_expr_registers_int2float_by_default_as_its_opinfo_promotes_integers(tmp_path):
    # logit's OpInfo sets promotes_int_to_float: an --expr serves its integer inputs as floats
    # (the int2float overload converts its operands first), so no --dtypes is needed, and the
    # summary says why at the OpInfo's line
    root = with_logit(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "logit", "--expr", LOGIT_EXPR])
    assert result.exit_code == 0, result.output
    assert (f"note: {YAML}:{_yaml_line(root, '- func: logit(')}: int2float registered for the --expr body: "
            f"integer inputs give float (its OpInfo at {CMI}:{_opinfo_line(root)} "
            "sets promotes_int_to_float)") in result.output
    text = (root / MPS / "kernels/UnaryKernel.metal").read_text(encoding="utf-8")
    added = [line for line in text.splitlines() if line.startswith("REGISTER_UNARY_ALPHA_OP(logit,")]
    assert added == [
        "REGISTER_UNARY_ALPHA_OP(logit, float, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, half, half, half);",
        "REGISTER_UNARY_ALPHA_OP(logit, bfloat, bfloat, bfloat);",
        "REGISTER_UNARY_ALPHA_OP(logit, long, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, int, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, short, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, uchar, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, char, float, float);",
        "REGISTER_UNARY_ALPHA_OP(logit, bool, float, float);",
    ]
    # the integer overload returns float and takes alpha as float (the iterator's common dtype)
    # the alpha named as the shared function's call of logit_stub names it
    assert "  inline float operator()(const T x_, const float eps_) {\n" in text


def test_integer_outputs_for_an_op_that_promotes_are_refused_with_the_accepted_value(tmp_path):
    root = with_logit(tmp_path)
    before = every_file(root)
    result = run_cli(["-C", str(root), "migrate", "logit", "--expr", LOGIT_EXPR, "--dtypes", "float,integer"])
    assert result.exit_code == 2
    assert ("logit: integer inputs give float (its OpInfo at "
            f"{CMI}:{_opinfo_line(root)} sets promotes_int_to_float); dtype group "
            "'integer' would register integer outputs for them") in result.stderr
    assert proposed(result.stderr) == "float,int2float"
    assert every_file(root) == before


@pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")
def test_logits_integer_alpha_overload_compiles(tmp_path):
    root = with_logit(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "logit", "--expr", LOGIT_EXPR, "--dtypes", "float,int2float",
                      "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "was not compiled" not in result.stderr


def test_threshold_advice_lists_bool_at_once(tmp_path):
    root = with_bool_threshold(tmp_path)
    value, _ = _advice_then_accepted(root, ["migrate", "threshold", "--expr", THRESHOLD_EXPR])
    assert value == "float,integer,bool"
    text = (root / MPS / "kernels/ActivationKernel.metal").read_text(encoding="utf-8")
    assert "REGISTER_THRESHOLD_OP(bool);" in text and "REGISTER_THRESHOLD_OP(long);" in text


def test_threshold_advice_without_bool_in_the_tests_stays_integer(tmp_path):
    root = copy_checkout(tmp_path)
    value, _ = _advice_then_accepted(root, ["migrate", "threshold", "--expr", THRESHOLD_EXPR])
    assert value == "float,integer"
