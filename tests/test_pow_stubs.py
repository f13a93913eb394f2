"""An op whose overloads' CPU functions call several stubs, all but one already registered for MPS
(pow: pow_tensor_scalar_stub has its REGISTER_DISPATCH, pow_tensor_tensor_stub has none; issue
42): migrate takes the one left for the overloads calling it, names the functor after the op (as
2.15 compiles pow_dense_<T>_<T>), writes it in the binary family's files (Pow.h has no family of
its own: by the kernel's operand count), keeps the MPS function of the overload that calls no stub
(pow.Scalar_out, which only redispatches) and the include it needs; a second run says the op is
native, and verify passes. Where the checkout's c10/metal defines pow the catalog body calls it;
where it does not, the catalog offers none.

tests/data/powstubs is our own text (see its README), overlaid on a copy of the miniature."""

from __future__ import annotations

import shutil
from pathlib import Path

from mpsgen.read.metalhost.compiler import find_compiler
from support import assert_golden, changed_files, copy_checkout, diff_paths, every_file, needs, run_cli, snapshot

DATA = Path(__file__).resolve().parent / "data" / "powstubs"
YAML = "aten/src/ATen/native/native_functions.yaml"
UTILS = "c10/metal/utils.h"
FILES = ("aten/src/ATen/native/Pow.h", "aten/src/ATen/native/Pow.cpp",
         "aten/src/ATen/native/mps/operations/PowKernel.mm", "aten/src/ATen/native/mps/operations/PowOps.mm")

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")


def overlay(tmp_path: Path, *, c10_pow: bool = True) -> Path:
    root = copy_checkout(tmp_path)
    for rel in FILES:
        shutil.copy(DATA / rel, root / rel)
    path = root / YAML
    path.write_text(path.read_text(encoding="utf-8") + (DATA / "pow.yaml.part").read_text(encoding="utf-8"),
                    encoding="utf-8")
    if c10_pow:
        path = root / UTILS
        text = path.read_text(encoding="utf-8")
        end = "} // namespace metal\n} // namespace c10\n"
        assert text.endswith(end)
        path.write_text(text[: -len(end)] + (DATA / "utils.h.part").read_text(encoding="utf-8") + "\n" + end,
                        encoding="utf-8")
    return root


def test_the_unregistered_stub_is_migrated_for_its_overloads(tmp_path):
    root = overlay(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "pow", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, "pow/pow_two_stubs.diff")
    assert snapshot(root) == before
    summary = " ".join(result.stderr.split())
    assert ("stub pow_tensor_tensor_stub: called by pow_Tensor_Tensor_out at aten/src/ATen/native/Pow.cpp:19; "
            "pow_tensor_scalar_stub (aten/src/ATen/native/Pow.cpp:23, in pow_Tensor_Scalar_out) already serves MPS "
            "(REGISTER_DISPATCH at aten/src/ATen/native/mps/operations/PowKernel.mm:12)") in summary
    assert ("the migration is pow_tensor_tensor_stub's overloads (pow.Tensor_Tensor_out, pow.Tensor_Tensor); pow's "
            "other kernels stay as they are (pow_Scalar_out, pow_Scalar_out_mps, pow_Tensor_Scalar_out)") in summary
    assert ("kept #include <ATen/ops/pow_native.h>: the file still uses pow_Scalar_out_mps") in summary


@needs_compiler
def test_applied_second_run_changes_nothing_and_verify_passes(tmp_path):
    root = overlay(tmp_path)
    diff = run_cli(["-C", str(root), "migrate", "pow", "--dry-run"]).stdout
    before = snapshot(root)
    assert run_cli(["-C", str(root), "migrate", "pow"]).exit_code == 0
    after = snapshot(root)
    assert changed_files(before, after) == diff_paths(diff)
    again = run_cli(["-C", str(root), "migrate", "pow"])
    assert again.exit_code == 0, again.stderr
    assert "pow: already native Metal; nothing to change." in again.stdout + again.stderr
    verify = run_cli(["-C", str(root), "verify", "pow", "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    assert snapshot(root) == after


def test_without_c10_pow_the_catalog_offers_no_body(tmp_path):
    root = overlay(tmp_path, c10_pow=False)
    result = run_cli(["-C", str(root), "migrate", "pow", "--body", "catalog", "--dry-run"])
    assert result.exit_code == 2
    assert ("the catalog's pow body calls c10::metal::pow, which this checkout's c10/metal headers do not define"
            in result.stderr)


def test_several_unregistered_stubs_are_still_a_refusal(tmp_path):
    root = overlay(tmp_path)
    (root / FILES[2]).unlink()  # neither stub registered for MPS: which one is the op's is not one to tell
    before = every_file(root)
    result = run_cli(["-C", str(root), "migrate", "pow"])
    assert result.exit_code == 2
    assert ("the CPU functions of pow call several dispatch stubs: pow_tensor_tensor_stub "
            "(aten/src/ATen/native/Pow.cpp:19, in pow_Tensor_Tensor_out), pow_tensor_scalar_stub "
            "(aten/src/ATen/native/Pow.cpp:23, in pow_Tensor_Scalar_out)") in result.stderr
    assert every_file(root) == before


def _pow_candidate(root: Path):
    import json

    result = run_cli(["-C", str(root), "scan", "--json"])
    assert result.exit_code == 0, result.stderr
    record = next(r for r in json.loads(result.stdout)["ops"] if r["op"] == "pow")
    return record["candidate"]


def test_scan_offers_pow_until_its_stub_is_migrated(tmp_path):
    # pow.Scalar_out keeps its MPS line after the migration: scan judges the stub's overloads, as migrate does
    root = overlay(tmp_path)
    assert _pow_candidate(root)["tier"] == "ready"
    assert run_cli(["-C", str(root), "migrate", "pow"]).exit_code == 0
    assert _pow_candidate(root) is None
