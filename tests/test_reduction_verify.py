"""verify's checks of a reduction op (`reduce-variants`, and kernel-name read through the
launcher) on the reduction overlay: a native reduction passes; a registration missing a routing
variant, or a host function passing a prefix the kernel file never registers, fails at the line,
naming the kernels that would be missing at run time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reduction_support import REDUCE_METAL, REDUCE_MM, reduction_checkout
from support import run_cli


def edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    (root / rel).write_text(text.replace(old, new), encoding="utf-8")


def static_checks(root: Path, op: str) -> tuple[int, dict[str, dict]]:
    result = run_cli(["-C", str(root), "verify", op, "--static-only", "--json"])
    doc = json.loads(result.stdout)
    return result.exit_code, {c["check"]: c for c in doc["stages"][0]["checks"]}


@pytest.fixture
def root(tmp_path) -> Path:
    return reduction_checkout(tmp_path)


def test_a_native_reduction_passes(root):
    code, checks = static_checks(root, "sum")
    assert code == 0
    status = {name: c["status"] for name, c in checks.items()}
    assert status["kernel-name"] == status["reduce-variants"] == "passed"
    # the dtype rules judge the input dtypes of sum's registered pairs (what the overlay's OpInfo
    # tests on MPS)
    assert status["dtype-coverage"] == status["test-lists"] == "passed"
    # the elementwise readings say why they do not apply
    for name in ("format", "metal-compile"):
        assert status[name] == "skipped" and checks[name]["reason"].startswith("reduction:")


def test_a_tested_dtype_no_pair_takes_fails_dtype_coverage(root):
    edit(root, REDUCE_METAL, "REGISTER_SUM(long, long);\n", "")
    code, checks = static_checks(root, "sum")
    assert code == 1
    (finding,) = checks["dtype-coverage"]["findings"]
    assert finding["message"].startswith("sum_reduction* kernels take no int64 input (the OpInfo at "
                                         "torch/testing/_internal/opinfo/definitions/reductions.py:")


def test_a_variant_missing_from_the_registration_macro_fails_every_op(root):
    edit(root, REDUCE_METAL, '''  INSTANTIATE_KERNEL(                                  \\
      PREFIX "reduction_narrow_" #TI "_" #TO,          \\
      reduction_narrow,                                \\
      __VA_ARGS__,                                     \\
      TI,                                              \\
      TO);                                             \\
''', "")
    code, checks = static_checks(root, "sum")
    assert code == 1
    (finding,) = checks["reduce-variants"]["findings"]
    assert finding["path"] == REDUCE_METAL
    assert (root / REDUCE_METAL).read_text().splitlines()[finding["line"] - 1] == "REGISTER_SUM(float, float);"
    assert finding["message"] == (
        "sum_reduction_narrow_<in>_<out> is not registered for bfloat->bfloat, bfloat->float, bool->long, "
        "float->float, half->float, half->half, int->long, long->long (the launcher can pick the _narrow "
        'variant: "no such kernel" at run time on those shapes)')


def test_a_pair_registered_for_some_variants_only_fails_at_its_line(root):
    edit(root, REDUCE_METAL, "REGISTER_SUM(bool, long);\n",
         'REGISTER_SUM(bool, long);\nINSTANTIATE_KERNEL("sum_reduction_short_long", reduction_generic, SumOp<long>, short, long);\n')
    code, checks = static_checks(root, "sum")
    assert code == 1
    findings = checks["reduce-variants"]["findings"]
    assert len(findings) == 7  # every variant but the generic one
    line = (root / REDUCE_METAL).read_text().splitlines()[findings[0]["line"] - 1]
    assert line.startswith('INSTANTIATE_KERNEL("sum_reduction_short_long"')
    assert {f["message"].split(" ")[0] for f in findings} == {
        f"sum_reduction{v}_<in>_<out>" for v in ("_flat", "_flat_strided", "_outer", "_outer_small_dim", "_narrow",
                                                  "_innermost", "_innermost_chunk")}
    assert all("short->long" in f["message"] for f in findings)


def test_a_prefix_without_kernels_fails_kernel_name(root):
    edit(root, REDUCE_MM, 'sum_mean_kernel_mps(iter, "sum_", std::nullopt);', 'sum_mean_kernel_mps(iter, "total_", std::nullopt);')
    code, checks = static_checks(root, "sum")
    assert code == 1
    (finding,) = checks["kernel-name"]["findings"]
    assert finding["path"] == REDUCE_MM
    assert "launches total_reduction* kernels" in finding["message"]
    assert checks["reduce-variants"]["status"] == "passed"
