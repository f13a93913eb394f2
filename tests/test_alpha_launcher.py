"""A ternary op whose stub passes one Scalar (addcmul's value) on a library whose
`exec_ternary_kernel(iter, name)` takes none (2.13; issue 42): migrate adds what is missing of
`exec_ternary_kernel(iter, name, alpha, scalar_arg_type)`, the call 2.15's host code writes: the
c10/metal alpha kernels, the declaration after the plain one in MetalShaderLibrary.h, the
definition after the plain one in OperationUtils.mm (following the file's profiler calls); each
only where missing, so a second op of the same run or a later run adds nothing; refused naming the
missing file where the checkout has no OperationUtils.mm.

tests/data/alphalauncher is our own text (see its README), overlaid on a copy of the miniature."""

from __future__ import annotations

import shutil
from pathlib import Path

from mpsgen.commands.tryop.api import TryOptions, try_op
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.compiler import find_compiler
from support import (applies_its_diff_then_changes_nothing, assert_golden, changed_files, copy_checkout, diff_paths,
                     every_file, needs, run_cli, snapshot)

DATA = Path(__file__).resolve().parent / "data" / "alphalauncher"
DEFINITIONS = "aten/src/ATen/native/mps/OperationUtils.mm"
LIBRARY = "aten/src/ATen/native/mps/MetalShaderLibrary.h"
ARGS = ["migrate", "addcmul", "--expr", "a + alpha * b * c", "--dtypes", "float,integer"]

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())


def overlay(tmp_path: Path) -> Path:
    root = copy_checkout(tmp_path)
    shutil.copy(DATA / DEFINITIONS, root / DEFINITIONS)
    return root


def test_the_missing_pieces_are_added_after_the_plain_launcher(tmp_path):
    root = overlay(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), *ARGS, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, "launcher/addcmul_alpha_213.diff")
    assert snapshot(root) == before
    summary = " ".join(result.stderr.split())
    assert (f"note: {LIBRARY}:54: this checkout's MetalShaderLibrary::exec_ternary_kernel takes no Scalar: the one "
            "taking the Scalar a ternary op carries (exec_ternary_kernel(iter, name, alpha), as 2.15 calls it) "
            "declaration added after the plain one's") in summary
    assert f"{DEFINITIONS}:" in summary and "definition added after the plain one's" in summary


@needs_compiler
def test_applied_second_run_changes_nothing_and_verify_passes(tmp_path):
    root = applies_its_diff_then_changes_nothing(tmp_path, ARGS, overlay(tmp_path)).root
    after = snapshot(root)
    verify = run_cli(["-C", str(root), "verify", "addcmul", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    assert snapshot(root) == after
    # the next op finds the launcher there: its change adds none of it
    addcdiv = run_cli(["-C", str(root), "migrate", "addcdiv", "--expr", "a + alpha * b / c", "--dtypes", "float",
                       "--dry-run"])
    assert addcdiv.exit_code == 0, addcdiv.stderr
    assert diff_paths(addcdiv.stdout) == {"aten/src/ATen/native/native_functions.yaml",
                                          "aten/src/ATen/native/mps/kernels/PointwiseOps.metal",
                                          "aten/src/ATen/native/mps/operations/PointwiseOps.mm"}


def test_two_ops_in_one_run_add_the_launcher_once(tmp_path):
    root = overlay(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "addcmul", "addcdiv", "--dry-run"])  # the catalog's bodies
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("+void MetalShaderLibrary::exec_ternary_kernel(TensorIteratorBase& iter,") == 1
    assert result.stdout.count("+  void exec_ternary_kernel(") == 1
    assert result.stdout.count("+kernel void ternary_alpha_dense(") == 1


def test_refused_without_the_file_defining_the_launchers(tmp_path):
    root = copy_checkout(tmp_path)  # the miniature has no OperationUtils.mm
    before = every_file(root)
    result = run_cli(["-C", str(root), *ARGS])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert (f"addcmul is ternary with a Scalar (void(*)(TensorIteratorBase&, const Scalar&)), but exec_ternary_kernel in "
            f"this checkout takes no scalar (mpsgen cannot add one that does: {DEFINITIONS} is missing (where "
            "MetalShaderLibrary::exec_ternary_kernel is defined, beside which mpsgen adds the one taking a Scalar); "
            "this checkout's MetalShaderLibrary has no exec_ternary_kernel_with_params either: write the kernel by "
            "hand)") in result.stderr
    assert every_file(root) == before


def test_nothing_is_added_where_the_declared_launcher_takes_a_scalar(tmp_path):
    # 2.15's shape: exec_ternary_kernel declared with an optional alpha, the alpha kernels in
    # c10/metal (tests/data/launcher215's own text)
    root = overlay(tmp_path)
    path = root / LIBRARY
    text = path.read_text(encoding="utf-8")
    plain = "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name);\n"
    assert text.count(plain) == 1
    path.write_text(text.replace(plain, "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name, "
                                        "const std::optional<c10::Scalar> alpha = std::nullopt);\n"), encoding="utf-8")
    indexing = root / "c10/metal/indexing.h"
    text = indexing.read_text(encoding="utf-8")
    end = "} // namespace metal\n} // namespace c10\n"
    part = Path(__file__).resolve().parent / "data" / "launcher215" / "ternary_alpha.part"
    indexing.write_text(text[: -len(end)] + part.read_text(encoding="utf-8") + end, encoding="utf-8")
    result = run_cli(["-C", str(root), *ARGS, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert diff_paths(result.stdout) == {"aten/src/ATen/native/native_functions.yaml",
                                         "aten/src/ATen/native/mps/kernels/PointwiseOps.metal",
                                         "aten/src/ATen/native/mps/operations/PointwiseOps.mm",
                                         "torch/testing/_internal/common_methods_invocations.py",
                                         "torch/testing/_internal/common_mps.py"}
    assert "launcher" not in result.stderr


# What 2.15 compiles for addcmul (float, half, bfloat, the integers, float2, half2) and addcdiv (no
# integers), each with the op-math type of its input type as the alpha's (addcmul_dense_half_half_float,
# addcmul_dense_half2_half2_float2): the host passes the Scalar in at::toOpMathType(common dtype).
# 2.15's kernels: the integer group without bool (catalog.toml's `not_registered`: CPU has no bool
# kernel, 2.15's host refuses bool).
ADDCMUL_TYPES = ("float", "half", "bfloat", "long", "int", "short", "uchar", "char", "float2", "half2")
ADDCDIV_TYPES = ("float", "half", "bfloat", "float2", "half2")


OPMATH = {"half": "float", "bfloat": "float", "half2": "float2"}


def _expected(op: str, types: tuple[str, ...]) -> list[str]:
    return [f"REGISTER_TERNARY_ALPHA_OP({op}, {t}, {OPMATH.get(t, t)}, {t});" for t in types]


def _registrations(diff: str, op: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(f"+REGISTER_TERNARY_ALPHA_OP({op},")]


def test_addcmul_takes_the_catalog_body_with_no_flag(tmp_path):
    # the catalog's ternary body taking the stub's Scalar: no --expr, no placeholder; complex
    # through the checkout's c10::metal::mul (the miniature's utils.h defines it)
    root = overlay(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "addcmul", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, "launcher/addcmul_catalog_213.diff")
    assert snapshot(root) == before
    assert "#error" not in result.stdout and "todo:" not in result.stderr
    assert _registrations(result.stdout, "addcmul") == _expected("addcmul", ADDCMUL_TYPES)
    assert "+    const float2 scaled = c10::metal::mul(value, float2(b));\n" in result.stdout
    assert ("+  lib.exec_ternary_kernel(iter, \"addcmul\", alpha, at::toOpMathType(iter.common_dtype()));\n"
            in result.stdout)
    assert "+#include <ATen/OpMathType.h>\n" in result.stdout


@needs_compiler
def test_catalog_bodies_applied_second_run_changes_nothing_and_verify_passes(tmp_path):
    root = overlay(tmp_path)
    for op, golden, types in (("addcmul", "launcher/addcmul_catalog_213.diff", ADDCMUL_TYPES),
                              ("addcdiv", "launcher/addcdiv_catalog_after_addcmul_213.diff", ADDCDIV_TYPES)):
        diff = run_cli(["-C", str(root), "migrate", op, "--dry-run"])
        assert diff.exit_code == 0, diff.stderr
        assert_golden(diff.stdout, golden)  # addcdiv's: no launcher piece, addcmul's run added them
        assert _registrations(diff.stdout, op) == _expected(op, types)
        before = snapshot(root)
        applied = run_cli(["-C", str(root), "migrate", op])
        assert applied.exit_code == 0, applied.stderr
        after = snapshot(root)
        assert changed_files(before, after) == diff_paths(diff.stdout)
        again = run_cli(["-C", str(root), "migrate", op, "--dry-run"])
        assert again.exit_code == 0 and again.stdout == "", again.stderr
    verify = run_cli(["-C", str(root), "verify", "addcmul", "addcdiv", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    assert snapshot(root) == after


@needs_compiler
@needs_torch
def test_catalog_bodies_match_torch_on_every_registered_dtype(tmp_path):
    # try on the kernels as migrate wrote them, each scalar set against torch's CPU op: skipped only
    # where the value does not fit the dtype (value=-1 for uint8); neither op registers bool
    root = overlay(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "addcmul", "addcdiv"]).exit_code == 0
    for op, types in (("addcmul", ADDCMUL_TYPES), ("addcdiv", ADDCDIV_TYPES)):
        report = try_op(Checkout.find(root), op, TryOptions(reference="torch", samples=8))
        assert report.exit_code == 0
        assert {r.metal_type for r in report.results} == set(types)
        assert not [r for r in report.results if r.status == "failed"]
        for r in report.results:
            assert r.status == "passed" or (r.status == "skipped" and "Scalar::to refuses it" in r.note), (
                r.scalars, r.dtype, r.note)
        assert {r.metal_type for r in report.results if r.status == "passed"} == set(types)
