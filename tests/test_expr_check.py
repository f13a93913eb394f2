"""`--expr` is compiled, with mpsgen's Metal prelude and the checkout's headers, for every dtype
group it will register before anything is written."""

from __future__ import annotations

import pytest

from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, every_file, run_cli

needs_compiler = pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")

BAD = [
    ("new-op", ["special_ndtri"], "x +", "expected primary-expression"),
    ("new-op", ["special_ndtri"], "lgo(x)", "lgo"),
    ("new-op", ["hypot"], "lgo(0.5f * a) + b", "lgo"),
    ("migrate", ["mish"], "x +", "expected primary-expression"),
    # a params kernel: the schema's names
    ("migrate", ["softplus"], "lgo(x * beta)", "lgo"),
    # compiles for float/half/bfloat, not for the integer group's bool: every group is compiled
    ("migrate", ["fmod", "--dtypes", "float,integer"], "fmod(a, b)", "fmod(const bool&, const bool&)"),
]


@needs_compiler
@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(("command", "argv", "expr", "says"), BAD, ids=[f"{a[0]}:{e}" for _, a, e, _ in BAD])
def test_an_expression_that_does_not_compile_is_refused_before_writing(tmp_path, command, argv, expr, says, dry_run):
    root = copy_checkout(tmp_path)
    before = every_file(root)
    result = run_cli(["-C", str(root), command, *argv, "--expr", expr, *(["--dry-run"] if dry_run else [])])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"--expr {expr!r} does not compile in {argv[0]}_functor: " in lines[0]
    assert says in lines[0].split(" does not compile in ", 1)[1]
    assert ".metal:" in lines[0] and "nothing was written" in lines[0]
    assert result.stdout == ""
    assert every_file(root) == before


GOOD = [
    ("new-op", ["hypot"], "sqrt(a * a + b * b)", "BinaryKernel.metal"),
    # a params kernel: its struct is only in the header as planned, which the check compiles with
    ("migrate", ["softplus"], "x * beta", "ActivationKernel.metal"),
]


@needs_compiler
@pytest.mark.parametrize(("command", "argv", "expr", "kernel"), GOOD, ids=[a[0] for _, a, _, _ in GOOD])
def test_an_expression_that_compiles_is_written_without_a_note(tmp_path, command, argv, expr, kernel):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), command, *argv, "--expr", expr])
    assert result.exit_code == 0, result.output
    assert "was not compiled" not in result.output
    assert expr in (root / "aten/src/ATen/native/mps/kernels" / kernel).read_text()


def test_without_a_compiler_the_summary_says_the_expression_was_not_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSGEN_CXX", "mpsgen-no-such-compiler")
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--expr", "lgo(a)", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert ("note: --expr 'lgo(a)' was not compiled before writing: $MPSGEN_CXX names 'mpsgen-no-such-compiler', "
            "which is not an executable on PATH") in result.stderr
