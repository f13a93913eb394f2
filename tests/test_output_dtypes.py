"""Output dtypes as the op's meta function or the catalog decide them: bool-output ops register a
bool output for every input, int2float kernels an op never looks up are refused, and test_out /
test_out_warning expectations about out= behaviour go when the out= entry moves to the shared kernel."""

from __future__ import annotations

from mpsgen.facts.choice import registrations_for
from mpsgen.facts.catalog import load_catalog
from mpsgen.facts.rules import OTHER, OUT_BEHAVIOUR, MissingOpRule

from support import copy_checkout, run_cli, snapshot

MACROS = frozenset({"REGISTER_UNARY_OP", "REGISTER_BINARY_OP"})


def test_a_bool_output_op_registers_every_input_type_to_bool():
    entry = load_catalog()["logical_not"]
    assert entry.output == "bool"
    regs = registrations_for("logical_not", 1, False, entry.dtypes, MACROS, "K.metal", output=entry.output)
    pairs = {(r.args[1], r.args[2]) for r in regs}
    # what 2.14 compiles: logical_not_dense_bool_<in> for 11 input types
    assert pairs == {(t, "bool") for t in ("float", "half", "bfloat", "long", "int", "short", "uchar", "char",
                                           "bool", "float2", "half2")}


def test_int2float_for_an_op_whose_meta_function_keeps_its_dtype_is_refused(tmp_path):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "mish", "--dtypes", "float,int2float"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "mpsgen: error: aten/src/ATen/native/native_functions.yaml:387: mish keeps the input dtype (its CPU meta "
        "function at aten/src/ATen/native/Activation.cpp:13 builds the iterator without promoting integers), so an "
        "integer input looks up an integer-output kernel: dtype group 'int2float' registers integer-in, float-out "
        "kernels that would never be called (pass --dtypes float; nothing was written)")
    assert snapshot(root) == before
    # the value it names works
    assert run_cli(["-C", str(root), "migrate", "mish", "--dtypes", "float"]).exit_code == 0


MISH_EXPR = "x * tanh(log(1.0f + exp(x)))"
MISH_REFUSAL = (
    "mpsgen: error: aten/src/ATen/native/native_functions.yaml:387: mish keeps the input dtype (its CPU meta "
    "function at aten/src/ATen/native/Activation.cpp:13 builds the iterator without promoting integers), so an "
    "integer input looks up an integer-output kernel: dtype group 'int2float' registers integer-in, float-out "
    "kernels that would never be called (pass --dtypes float; nothing was written)")


def test_int2float_with_an_expr_body_is_refused_too(tmp_path):
    # issue 35's command: an --expr body goes through the same rule as the catalog's
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "mish", "--dtypes", "float,int2float", "--expr", MISH_EXPR])
    assert (result.exit_code, result.stderr.strip(), result.stdout) == (2, MISH_REFUSAL, "")
    assert snapshot(root) == before


def test_int2float_where_the_checkout_cannot_say_is_written_with_a_warning_and_its_reason(tmp_path):
    # a checkout without the CPU .cpp files (a wheel's: the real-size checkouts), whose OpInfo does
    # not set promotes_int_to_float: mpsgen cannot tell, so it writes what was asked and says why
    # the kernels may never be called
    root = copy_checkout(tmp_path)
    for cpp in (root / "aten/src/ATen/native").glob("*.cpp"):
        cpp.unlink()
    result = run_cli(["-C", str(root), "migrate", "mish", "--dtypes", "float,int2float", "--expr", MISH_EXPR,
                      "--dry-run", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    todo = [line for line in result.stderr.splitlines() if line.startswith("todo: ")]
    assert todo == [
        "todo: aten/src/ATen/native/native_functions.yaml:387: dtype group 'int2float' registers integer-in, "
        "float-out kernels that an integer input looks up only if mish's meta function promotes integers to "
        "float, and nothing here says it does (its OpInfo at torch/testing/_internal/common_methods_invocations.py:"
        f"{_mish_opinfo_line(root)} does not set promotes_int_to_float, and its CPU reference takes no integer dtype; "
        "this checkout has no aten/src/ATen/native/*.cpp (a wheel ships none): the CPU output dtype of mish was "
        "not read): they may never be called (pass --dtypes float unless it promotes them)"]
    assert "REGISTER_UNARY_OP(mish, int, float);" in result.stdout  # written as asked
    # nothing to say for float alone, nor where the OpInfo says integers give float
    plain = run_cli(["-C", str(root), "migrate", "mish", "--dtypes", "float", "--expr", MISH_EXPR, "--dry-run",
                     "--format", "plain"])
    assert plain.exit_code == 0 and "todo: " not in plain.stderr


def _mish_opinfo_line(root) -> int:
    text = (root / "torch/testing/_internal/common_methods_invocations.py").read_text(encoding="utf-8")
    return text[: text.index("'nn.functional.mish'")].count("\n")  # the OpInfo call's line, above its name


OUT_REASON = "# AssertionError: RuntimeError not raised : Expected RuntimeError when calling with\n# input.device=mps:0 and out.device=cpu."
RESIZE_REASON = "# AssertionError: The values for attribute 'shape' do not match: torch.Size([20]) != torch.Size([0])."


def test_out_behaviour_is_fixed_for_the_out_tests_when_the_out_entry_moves_to_the_shared_kernel():
    moving = MissingOpRule(frozenset({"logical_not.out"}), frozenset({"logical_not"}), shared_out=True)
    for reason in (OUT_REASON, RESIZE_REASON):
        judged = moving.judge(reason)
        assert judged.kind == OUT_BEHAVIOUR
        assert judged.fixes_out("test_out") and judged.fixes_out("test_out_warning")
        assert not judged.fixes_out("test_variant_consistency_eager")
    # an op whose out= entry stays where it is: the same reason is other behaviour, kept
    staying = MissingOpRule(frozenset({"logical_not.out"}), frozenset({"logical_not"}))
    assert staying.judge(OUT_REASON).kind == OTHER
    # a reason about something else is not out= behaviour
    assert moving.judge("# AssertionError: Tensor-likes are not close!").kind == OTHER


def test_types_an_op_does_not_take_are_not_registered_and_no_group_macro_registers_them():
    # addcmul's catalog entry: its integer group without bool (2.15 compiles no bool kernel for it)
    regs = registrations_for("f", 2, False, ("float", "integer"), MACROS | {"REGISTER_INTEGER_BINARY_OP"}, "K.metal",
                             without=("bool",))
    assert [r.macro for r in regs] == ["REGISTER_BINARY_OP"] * 8
    assert [r.args[1] for r in regs] == ["float", "half", "bfloat", "long", "int", "short", "uchar", "char"]
    # with every type taken, the integer group is the one macro line
    regs = registrations_for("f", 2, False, ("integer",), MACROS | {"REGISTER_INTEGER_BINARY_OP"}, "K.metal")
    assert [(r.macro, r.args) for r in regs] == [("REGISTER_INTEGER_BINARY_OP", ("f",))]
