"""The commands share one model of an op: what `new-op`/`migrate` write, `verify --static-only`
accepts; a command that cannot do it refuses (exit 2) with what to supply and writes nothing; and a
second run changes nothing at all (every file of the tree compared)."""

from __future__ import annotations

import json

import pytest

from support import copy_checkout, every_file, run_cli, sampled
from test_migrate import CASES as MIGRATE_CASES
from test_newop import CASES as NEWOP_CASES


FIXTURE_CASES = [("new-op", argv) for argv, _ in NEWOP_CASES.values()] + [("migrate", argv) for argv in MIGRATE_CASES.values()]
REAL_CASES = [
    ("new-op", ["heaviside"]),
    ("new-op", ["special_ndtri"]),
    ("new-op", ["special_log_ndtr"]),
    ("new-op", ["special_airy_ai"]),
    ("new-op", ["special_laguerre_polynomial_l", "--stub", "laguerre_polynomial_l_stub", "--expr", "a + b"]),
    ("new-op", ["special_legendre_polynomial_p"]),
    ("new-op", ["glu_jvp", "--expr", "a * (1 - a) * b * c"]),
    ("migrate", ["sgn"]),
    ("migrate", ["frac"]),
    ("migrate", ["acosh", "asinh", "atanh"]),
    ("migrate", ["mish", "mish_backward"]),
    ("migrate", ["sigmoid_backward", "tanh_backward"]),
]


def ops_of(command: str, argv: list[str]) -> list[str]:
    """The op names of a new-op/migrate argument list (new-op takes one; options follow)."""
    names = []
    for arg in argv:
        if arg.startswith("--"):
            break
        names.append(arg)
    return names[:1] if command == "new-op" else names


def failing_checks(root, ops) -> tuple[int, set[tuple[str, str]], list[str]]:
    """(exit code, failed (op, check)s, findings); a placeholder's own `#error`, which the compiler
    reports too, counts as the placeholder check's failure only."""
    result = run_cli(["-C", str(root), "verify", *ops, "--static-only", "--json"])
    doc = json.loads(result.stdout)
    static = doc["stages"][0]
    failed = {(c["op"], "placeholder" if c["check"] == "metal-compile"
               and all("#error" in f["message"] for f in c["findings"]) else c["check"])
              for c in static["checks"] if c["status"] == "failed"}
    findings = [f"{f['path']}:{f['line']}: {f['message']}" for f in doc["findings"]]
    return result.exit_code, failed, findings


def run_and_verify(root, command: str, argv: list[str]) -> None:
    before = every_file(root)
    result = run_cli(["-C", str(root), command, *argv])
    if result.exit_code == 2:
        # refused: one line saying what to supply, and nothing written
        assert result.stderr.startswith("mpsgen: error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "(" in result.stderr and every_file(root) == before
        return
    assert result.exit_code == 0, result.stderr
    ops = ops_of(command, argv)
    code, failed, findings = failing_checks(root, ops)
    # a placeholder body (the command said where to fill it in) is the one thing left for the user;
    # every other check agrees with the edit
    assert {check for _, check in failed} <= {"placeholder"}, findings
    assert code == (1 if failed else 0)
    assert bool(failed) == ("fill in the body of" in result.stdout + result.stderr), findings
    again_before = every_file(root)
    again = run_cli(["-C", str(root), command, *argv])
    assert again.exit_code == 0, again.stderr
    assert every_file(root) == again_before


# Run in every run (CI runs every golden case): a plain binary op, an expression with a dtype
# group, a stub and overload given, a unary migration of three complex-capable ops, an activation
# with its backward, a binary migration, a backward op.
LOCAL_FIXTURE_CASES = (
    "new-op hypot",
    "new-op copysign --expr copysign(a, b) --dtypes float,int2float",
    "new-op lerp --overload Tensor_out --stub lerp_kernel_tensor_weight --expr a + c * (b - a) --kernel-file PointwiseOps.metal --host-file PointwiseOps.mm",
    "migrate asinh acosh atanh",
    "migrate mish",
    "migrate atan2",
    "migrate sigmoid_backward",
)


@pytest.mark.parametrize("command,argv", sampled(FIXTURE_CASES, LOCAL_FIXTURE_CASES, ids=[" ".join([c, *a]) for c, a in FIXTURE_CASES]))
def test_fixture_change_passes_verify_and_is_idempotent(tmp_path, command, argv):
    run_and_verify(copy_checkout(tmp_path), command, argv)


def test_new_op_with_an_overload_and_a_stub_verifies_clean(tmp_path):
    root = copy_checkout(tmp_path)
    argv = ["lerp", "--overload", "Tensor_out", "--stub", "lerp_kernel_tensor_weight", "--expr", "a + c * (b - a)",
            "--kernel-file", "PointwiseOps.metal", "--host-file", "PointwiseOps.mm"]
    assert run_cli(["-C", str(root), "new-op", *argv]).exit_code == 0
    code, failed, findings = failing_checks(root, ["lerp"])
    assert (code, failed) == (0, set()), findings


# Run in every run (each writes and verifies a real-size checkout: heavy, CI runs every case): a
# binary op over integer and bool, a complex-capable migrate (the fixture cases above cover a stub
# and expression given, and an activation with its backward).
LOCAL_REAL_CASES = (
    "new-op heaviside",
    "migrate sgn",
)


@pytest.mark.realfiles
@pytest.mark.parametrize("command,argv", sampled(REAL_CASES, LOCAL_REAL_CASES, ids=[" ".join([c, *a]) for c, a in REAL_CASES]))
def test_real_change_passes_verify_and_is_idempotent(tmp_path, real_torch_files_older, command, argv):
    from conftest import assemble_real_checkout

    root = assemble_real_checkout(tmp_path / "pytorch", real_torch_files_older, keep_wheel_headers=False)
    run_and_verify(root, command, argv)
