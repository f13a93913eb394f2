"""A ternary params op on a checkout whose library lacks the launcher (issue 36): huber_loss_backward
(`huber_backward_stub`: `(TensorIterator&, const Scalar&, double)`). Where the checkout's c10/metal
instantiates ternary kernels with a value of any type (2.15's REGISTER_TERNARY_ALPHA_OP) and its
library has the binary params launcher, migrate adds `exec_ternary_kernel_with_params` after it,
binding each argument where the kernels take it; the exact diff, nothing else touched, a second
run changes nothing, verify passes; where the kernels do not take the arguments where the launcher
would bind them (the miniature's own 2.13-shaped strided kernels: a 1D grid), it refuses naming that.

tests/data/launcher215 is our own 2.15-shaped text (see its README), overlaid on a copy of the
miniature."""

from __future__ import annotations

import shutil
from pathlib import Path


from mpsgen.edit.clangformat import assumed_suffix
from mpsgen.read.metalhost.compiler import find_compiler
from support import (applies_its_diff_then_changes_nothing, assert_golden, changed_files, copy_checkout, diff_paths,
                     every_file, needs, run_cli, snapshot)

DATA = Path(__file__).resolve().parent / "data" / "launcher215"
INDEXING = "c10/metal/indexing.h"
UTILS = "aten/src/ATen/native/mps/OperationUtils.h"
# the CPU kernel's branches, each product rounded to the input type as CPU's scalar_t arithmetic does
HUBER_BACKWARD = ("T(a - b) <= -T(delta) ? T(T(-T(norm) * c) * T(delta)) : (T(a - b) >= T(delta) ? "
                  "T(T(T(norm) * c) * T(delta)) : T(T(T(norm) * T(a - b)) * c))")
ARGS = ["migrate", "huber_loss_backward", "--expr", HUBER_BACKWARD]

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")


def overlay(tmp_path: Path, *, kernels: bool = True) -> Path:
    """The miniature with 2.15's library shape: the ternary alpha kernels (`kernels`) and the
    params launchers' OperationUtils.h."""
    root = copy_checkout(tmp_path)
    if kernels:
        path = root / INDEXING
        text = path.read_text(encoding="utf-8")
        end = "} // namespace metal\n} // namespace c10\n"
        assert text.endswith(end)
        path.write_text(text[: -len(end)] + (DATA / "ternary_alpha.part").read_text(encoding="utf-8") + end,
                        encoding="utf-8")
    shutil.copy(DATA / UTILS, root / UTILS)
    return root


def test_the_launcher_is_added_after_the_binary_one(tmp_path):
    root = overlay(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), *ARGS, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, "launcher/huber_loss_backward.diff")
    assert snapshot(root) == before
    summary = " ".join(result.stderr.split())
    assert ("this checkout's library has no launcher for a ternary kernel with a params struct: "
            "MetalShaderLibrary::exec_ternary_kernel_with_params added (aten/src/ATen/native/mps/MetalShaderLibrary.h "
            "and aten/src/ATen/native/mps/OperationUtils.h, after the binary one's), binding the arguments where the "
            "kernels REGISTER_TERNARY_ALPHA_OP instantiates take them (c10/metal/indexing.h:") in summary


@needs_compiler
def test_applied_second_run_changes_nothing_and_verify_passes(tmp_path):
    root = applies_its_diff_then_changes_nothing(tmp_path, ARGS, overlay(tmp_path)).root
    after = snapshot(root)
    verify = run_cli(["-C", str(root), "verify", "huber_loss_backward", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    assert snapshot(root) == after


def _refused(root: Path) -> str:
    before = every_file(root)
    result = run_cli(["-C", str(root), *ARGS])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert every_file(root) == before
    return result.stderr


def test_refused_where_the_kernels_take_no_params_struct_where_it_would_be_bound(tmp_path):
    # the miniature's own ternary kernels named as the alpha ones: no `alpha` at buffer 4
    root = overlay(tmp_path, kernels=False)
    path = root / INDEXING
    text = path.read_text(encoding="utf-8")
    line = text[: text.index("kernel void ternary_dense(")].count("\n") + 1
    path.write_text(text.replace("kernel void ternary_strided(", "kernel void ternary_alpha_strided(")
                    .replace("kernel void ternary_dense(", "kernel void ternary_alpha_dense("), encoding="utf-8")
    assert (f"and mpsgen cannot add it: {INDEXING}:{line}: ternary_alpha_dense takes no `alpha` at buffer 4, where "
            "the launcher binds it (write the kernel by hand, or add exec_ternary_kernel_with_params to the library "
            "first)") in _refused(root)


def test_refused_where_the_strided_kernel_reads_no_3d_grid(tmp_path):
    root = overlay(tmp_path)
    path = root / INDEXING
    text = path.read_text(encoding="utf-8")
    assert text.count("uint3 grid_pos [[thread_position_in_grid]]") == 1
    path.write_text(text.replace("uint3 grid_pos [[thread_position_in_grid]]", "uint grid_pos [[thread_position_in_grid]]"),
                    encoding="utf-8")
    assert f"and mpsgen cannot add it: {INDEXING}: ternary_alpha_strided does not read a 3D grid position" in _refused(root)


def test_refused_without_the_binary_launcher_definition_to_follow(tmp_path):
    root = overlay(tmp_path)
    (root / UTILS).unlink()
    assert (f"and mpsgen cannot add it: {UTILS} is missing (where the library's params launchers are defined)"
            in _refused(root))


def test_a_header_holding_objective_c_is_formatted_as_objective_c():
    assert assumed_suffix(UTILS, (DATA / UTILS).read_text(encoding="utf-8")) == ".mm"
    assert assumed_suffix("aten/src/ATen/native/mps/MetalShaderLibrary.h", "class MetalShaderLibrary {};\n") == ".h"
    # in a comment it is not code
    assert assumed_suffix("x.h", "// @autoreleasepool blocks live in the .mm files\n") == ".h"
    assert assumed_suffix("k.metal", "@autoreleasepool") == ".cpp"


@needs_compiler
def test_the_ternary_alpha_kernels_are_added_where_the_c10_headers_have_none(tmp_path):
    # 2.13's c10/metal (the miniature's): plain ternary kernels only. The alpha ones and
    # REGISTER_TERNARY_ALPHA_OP / REGISTER_OPMATH_TERNARY_ALPHA_OP go after REGISTER_TERNARY_OP
    # (issue 42), named as 2.15's are, then the launcher binding them; the kernels compile (verify)
    root = overlay(tmp_path, kernels=False)
    before = snapshot(root)
    dry = run_cli(["-C", str(root), *ARGS, "--dry-run"])
    assert dry.exit_code == 0, dry.stderr
    assert_golden(dry.stdout, "launcher/huber_loss_backward_213.diff")
    assert snapshot(root) == before
    summary = " ".join(dry.stderr.split())
    assert (f"note: {INDEXING}:399: this checkout's c10/metal has no ternary kernels taking a value next to the "
            "tensors: ternary_alpha_dense/ternary_alpha_strided and REGISTER_TERNARY_ALPHA_OP (with "
            "REGISTER_OPMATH_TERNARY_ALPHA_OP) added after REGISTER_TERNARY_OP") in summary
    assert run_cli(["-C", str(root), *ARGS]).exit_code == 0
    after = snapshot(root)
    assert changed_files(before, after) == diff_paths(dry.stdout)
    again = run_cli(["-C", str(root), *ARGS, "--dry-run"])
    assert again.exit_code == 0 and again.stdout == "", again.stderr
    verify = run_cli(["-C", str(root), "verify", "huber_loss_backward", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    assert snapshot(root) == after


def test_the_alpha_kernels_are_not_added_where_the_helpers_they_call_are_missing(tmp_path):
    root = overlay(tmp_path, kernels=False)
    path = root / INDEXING
    path.write_text(path.read_text(encoding="utf-8").replace("pos_from_thread_index", "position_of"), encoding="utf-8")
    assert (f"and mpsgen cannot add it: no c10/metal/*.h defines the ternary alpha kernels, and {INDEXING} lacks "
            "pos_from_thread_index, which mpsgen's would call") in _refused(root)
