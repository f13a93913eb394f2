"""`mpsgen new-op` on the miniature checkout: exact diffs, idempotency, untouched bytes."""

from __future__ import annotations

import subprocess

import pytest

from support import assert_golden, changed_files, copy_checkout, run_cli, snapshot

LERP_FILES = ["--kernel-file", "PointwiseOps.metal", "--host-file", "PointwiseOps.mm"]

CASES = {
    # name: (argv after `new-op`, files expected to change)
    "hypot_catalog_binary": (["hypot"], 3),
    "nextafter_catalog_binary": (["nextafter"], 3),
    "heaviside_catalog_integer": (["heaviside"], 3),
    "special_ndtri_catalog_unary_helper_macro": (["special_ndtri"], 3),
    "laguerre_placeholder_stub_name_differs": (["special_laguerre_polynomial_l"], 3),
    "copysign_expr_int2float": (["copysign", "--expr", "copysign(a, b)", "--dtypes", "float,int2float"], 3),
    "lerp_scalar_binary_alpha": (["lerp", "--overload", "Scalar_out", "--stub", "lerp_kernel_scalar_weight",
                                  "--expr", "a + alpha * (b - a)", *LERP_FILES], 3),
    "lerp_tensor_ternary": (["lerp", "--overload", "Tensor_out", "--stub", "lerp_kernel_tensor_weight",
                             "--expr", "a + c * (b - a)", *LERP_FILES], 3),
    "glu_jvp_activation_ternary": (["glu_jvp", "--expr", "a * (1 - a) * b * c"], 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_diff_matches_golden_and_writes_nothing(tmp_path, case):
    argv, n_files = CASES[case]
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", *argv, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, f"newop/{case}.diff")
    for family in ("native_functions.yaml", ".metal", ".mm"):
        assert f"{family} b/" in result.stdout
    assert snapshot(root) == before


@pytest.mark.parametrize("case", sorted(CASES))
def test_apply_changes_exactly_what_the_diff_shows_and_is_idempotent(tmp_path, case):
    argv, _ = CASES[case]
    root = copy_checkout(tmp_path)
    diff = run_cli(["-C", str(root), "new-op", *argv, "--dry-run"]).stdout
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", *argv])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    # the applied tree equals `git apply` of the dry-run diff on a pristine copy
    other = copy_checkout(tmp_path / "other")
    subprocess.run(["git", "apply", "--unsafe-paths", f"--directory={other.name}", "-"], input=diff.encode(),
                   cwd=other.parent, check=True)
    assert snapshot(other) == after
    touched = changed_files(before, after)
    assert touched == {line.split(" b/")[1] for line in diff.splitlines() if line.startswith("diff --git ")}
    # second run: nothing to do
    again = run_cli(["-C", str(root), "new-op", *argv])
    assert again.exit_code == 0, again.stderr
    assert "already native Metal" in again.stdout
    assert snapshot(root) == after


def test_json_output_is_one_document_with_files_and_changes(tmp_path):
    import json

    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["command"] == "new-op" and doc["ops"] == ["hypot"] and doc["applied"] is False
    assert sorted(f["path"] for f in doc["files"]) == [
        "aten/src/ATen/native/mps/kernels/BinaryKernel.metal",
        "aten/src/ATen/native/mps/operations/BinaryKernel.mm",
        "aten/src/ATen/native/native_functions.yaml",
        "torch/testing/_internal/common_mps.py",
    ]
    kinds = [c["kind"] for c in doc["changes"]]
    assert kinds.count("dispatch") == 1 and "functor" in kinds and "host-stub" in kinds


def test_placeholder_names_the_line_to_fill_in(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l"])
    assert result.exit_code == 0
    metal = (root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text()
    line = next(i for i, text in enumerate(metal.splitlines(), 1) if text.startswith("#error"))  # not the comment
    assert f"BinaryKernel.metal:{line}: fill in the body of laguerre_polynomial_l_functor" in result.stdout


def test_template_override_in_checkout_wins(tmp_path):
    root = copy_checkout(tmp_path)
    override = root / ".mpsgen" / "templates"
    override.mkdir(parents=True)
    (override / "host_kernel.mm.j2").write_text(
        "// ours\nstatic void {{ function }}({{ iterator_type }} iter) {\n  lib.{{ exec_function }}(iter, \"{{ kernel_name }}\");\n}\n"
    )
    result = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert result.exit_code == 0
    assert "+// ours\n+static void hypot_mps_kernel(TensorIteratorBase& iter) {\n" in result.stdout


def test_crlf_kernel_file_keeps_crlf(tmp_path):
    root = copy_checkout(tmp_path)
    metal = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    metal.write_bytes(metal.read_bytes().replace(b"\n", b"\r\n"))
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    data = metal.read_bytes()
    assert b"struct hypot_functor {\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_runs_from_a_subdirectory_by_searching_upward(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["new-op", "hypot", "--dry-run"], cwd=root / "aten" / "src")
    assert result.exit_code == 0
    assert "+    CPU, CUDA, MPS: hypot_out\n" in result.stdout
