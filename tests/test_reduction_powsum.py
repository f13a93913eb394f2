"""`new-op linalg__powsum` on the reduction overlay (its SumOp takes a LoadMode, as 2.15's does): the
orders a load mode serves (1: LOAD_ABS, 2: LOAD_SQUARE) are registered under their own prefixes and
routed by the host function to the launcher sum's host function calls; every other order is |x|^ord
elementwise then the sum kernels. Goldens of the exact edits, the kernels the edited file
instantiates, verify passes, clang-format clean, a second run changes nothing; the refusals when the
file lacks a mode; an order whose kernels the file already instantiates is never instantiated twice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mpsgen.read.metalread import read_kernel
from mpsgen.read.reduction import order_routes, reduction_instantiations
from reduction_support import REDUCE_METAL, REDUCE_MM, YAML, assert_edit_goldens, header_reader, reduction_checkout
from support import changed_files, pytorch_clang_format, run_cli, snapshot

VARIANTS = ("", "_flat", "_flat_strided", "_outer", "_outer_small_dim", "_narrow", "_innermost", "_innermost_chunk")
# sum's pairs with a floating input and an output no narrower than it
POWSUM_PAIRS = (("float", "float"), ("half", "half"), ("half", "float"), ("bfloat", "bfloat"), ("bfloat", "float"))


def edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    (root / rel).write_text(text.replace(old, new), encoding="utf-8")


def test_new_op_powsum(tmp_path):
    root = reduction_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 0, result.output
    after = snapshot(root)
    # no test list names linalg__powsum (neither does 2.15's common_mps.py): nothing else changes
    assert changed_files(before, after) == {YAML, REDUCE_METAL, REDUCE_MM}
    assert_edit_goldens(before, after, (YAML, REDUCE_METAL, REDUCE_MM), "new_op_powsum_")

    reading = read_kernel((root / REDUCE_METAL).read_text(), REDUCE_METAL, header_reader(root), every_kernel=True)
    powsum = {name for name in reading.host_names if name.startswith("powsum_")}
    assert powsum == {f"powsum_{m}_reduction{v}_{i}_{o}" for m in ("l1", "l2") for v in VARIANTS
                      for i, o in POWSUM_PAIRS}
    # each instantiates the sum op's struct with its load mode, no kernel twice
    found = reduction_instantiations((root / REDUCE_METAL).read_text(), REDUCE_METAL)
    assert {i.args[0] for i in found if i.name.startswith("powsum_l1_")} == {f"SumOp<{o}, LOAD_ABS>" for _, o in POWSUM_PAIRS}
    assert {i.args[0] for i in found if i.name.startswith("powsum_l2_")} == {f"SumOp<{o}, LOAD_SQUARE>" for _, o in POWSUM_PAIRS}
    assert len({i.key for i in found}) == len(found)

    executable, style = pytorch_clang_format()
    for rel in (REDUCE_METAL, REDUCE_MM):
        formatted = subprocess.run([executable, f"--style=file:{style}", f"--assume-filename={rel}"],
                                   input=(root / rel).read_text(), capture_output=True, text=True, check=True).stdout
        assert formatted == (root / rel).read_text(), rel

    verify = run_cli(["-C", str(root), "verify", "linalg__powsum", "--static-only", "--json"])
    assert verify.exit_code == 0, verify.output
    checks = {c["check"]: c["status"] for c in json.loads(verify.stdout)["stages"][0]["checks"]}
    assert checks["reduce-variants"] == checks["kernel-name"] == checks["yaml-dispatch"] == "passed"
    again = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert again.exit_code == 0 and snapshot(root) == after
    assert "already native Metal" in again.output


def test_the_host_function_routing_is_read_back():
    body = '''{
  const auto p = ord.to<double>();
  if (p == 1.0) {
    launch(iter, "powsum_l1_");
    return;
  }
  if (p == 2.0) {
    launch(iter, "powsum_l2_"); // squares
    return;
  }
  Tensor output = iter.output(0);
  const auto powered = input.abs().to(output.scalar_type()).pow(ord);
  launch(sum_iter, "sum_");
}'''
    routes = order_routes(body)
    assert routes.routes == ((1.0, "powsum_l1"), (2.0, "powsum_l2"))
    assert (routes.fallthrough, routes.elementwise, routes.in_output_type) == ("sum", True, True)
    assert routes.route(2.0) == "powsum_l2" and routes.route(3.0) is None
    assert order_routes("{ launch(iter, \"sum_\"); }") is None


def test_a_missing_load_mode_is_refused_at_the_enum(tmp_path):
    root = reduction_checkout(tmp_path)
    edit(root, REDUCE_METAL, "  LOAD_ABS = 3,\n  LOAD_SQUARE = 4\n", "  LOAD_ABS = 3\n")
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 2
    line = (root / REDUCE_METAL).read_text().splitlines().index("enum LoadMode : uint {") + 1
    assert result.stderr.splitlines()[0] == (
        f"mpsgen: error: {REDUCE_METAL}:{line}: enum LoadMode has no LOAD_SQUARE, the load mode linalg__powsum's "
        "order 2 needs (it has LOAD_ABS, LOAD_IDENTITY, LOAD_NAN_TO_ZERO, LOAD_NONZERO) (write linalg__powsum's "
        "kernel by hand)")
    assert snapshot(root) == before
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum", "--json"])
    assert result.exit_code == 2 and "LOAD_SQUARE" in json.loads(result.stdout)["error"]


def test_a_sum_op_without_load_modes_is_refused_at_the_struct(tmp_path):
    root = reduction_checkout(tmp_path)
    edit(root, REDUCE_METAL, "template <typename T, LoadMode MODE = LOAD_IDENTITY>\nstruct SumOp {",
         "template <typename T>\nstruct SumOp {\n  static constexpr LoadMode MODE = LOAD_IDENTITY;")
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 2
    line = (root / REDUCE_METAL).read_text().splitlines().index("struct SumOp {")
    assert (f"{REDUCE_METAL}:{line}: SumOp takes no LoadMode template argument, so it has no load modes for "
            "linalg__powsum's orders") in result.stderr


NORM_L1_INNERMOST = '''
#define REGISTER_NORM_L1_INNERMOST(TI, TO) \\
  INSTANTIATE_KERNEL(                      \\
      "norm_l1_reduction_innermost_" #TI "_" #TO, reduction_innermost, SumOp<TO, LOAD_ABS>, TI, TO)

REGISTER_NORM_L1_INNERMOST(float, float);
'''


def test_an_order_whose_kernels_exist_in_part_takes_the_general_path(tmp_path):
    """2.15's file instantiates reduction_innermost<SumOp<T, LOAD_ABS>, T, T> as norm_l1's innermost
    kernel only: registering powsum_l1_ would instantiate it a second time (a compile error)."""
    root = reduction_checkout(tmp_path)
    edit(root, REDUCE_METAL, "REGISTER_MAX(long);\n", "REGISTER_MAX(long);\n" + NORM_L1_INNERMOST)
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 0, result.output
    metal, mm = (root / REDUCE_METAL).read_text(), (root / REDUCE_MM).read_text()
    assert "powsum_l1_" not in metal and "powsum_l1_" not in mm and "p == 1.0" not in mm
    assert "#define REGISTER_POWSUM(TI, TO) \\\n  REGISTER_REDUCTION(\"powsum_l2_\", TI, TO, SumOp<TO, LOAD_SQUARE>)" in metal
    line = metal.splitlines().index("REGISTER_NORM_L1_INNERMOST(float, float);") + 1
    assert (f"note: {REDUCE_METAL}:{line}: ord 1 takes the general path: norm_l1_reduction_innermost_float_float "
            "already instantiates reduction_innermost<SumOp<float, LOAD_ABS>, float, float>") in " ".join(result.output.split())
    found = reduction_instantiations(metal, REDUCE_METAL)
    assert len({i.key for i in found}) == len(found)


def test_an_order_whose_kernels_exist_in_full_reuses_them(tmp_path):
    root = reduction_checkout(tmp_path)
    register = "".join(f"REGISTER_REDUCTION(\"norm_l1_\", {i}, {o}, SumOp<{o}, LOAD_ABS>);\n" for i, o in POWSUM_PAIRS)
    edit(root, REDUCE_METAL, "REGISTER_MAX(long);\n", "REGISTER_MAX(long);\n\n" + register)
    result = run_cli(["-C", str(root), "new-op", "linalg__powsum"])
    assert result.exit_code == 0, result.output
    metal, mm = (root / REDUCE_METAL).read_text(), (root / REDUCE_MM).read_text()
    assert "powsum_l1_" not in metal
    assert "  if (p == 1.0) {\n    sum_mean_kernel_mps(iter, \"norm_l1_\", std::nullopt);\n    return;\n  }\n" in mm
    assert "ord 1 reuses the norm_l1_reduction* kernels" in " ".join(result.output.split())
    verify = run_cli(["-C", str(root), "verify", "linalg__powsum", "--static-only"])
    assert verify.exit_code == 0, verify.output


ORDERS = ("0", "1", "2", "3", "0.5", "-1", "inf", "-inf")


@pytest.fixture(scope="module")
def powsum(tmp_path_factory):
    root = reduction_checkout(tmp_path_factory.mktemp("powsum"))
    assert run_cli(["-C", str(root), "new-op", "linalg__powsum"]).exit_code == 0
    return root


def try_json(root, *args):
    result = run_cli(["-C", str(root), "try", "linalg__powsum", "--json", *args])
    return result.exit_code, json.loads(result.stdout)


def _needs_compiler_and_torch():
    from mpsgen.commands.tryop.reference import torch_unavailable
    from mpsgen.read.metalhost.compiler import find_compiler
    from support import missing

    if find_compiler()[0] is None:
        missing("no C++ compiler (g++/clang++) on PATH")
    if torch_unavailable():
        missing(torch_unavailable())


def test_try_runs_every_order_through_the_path_the_host_function_takes(powsum):
    _needs_compiler_and_torch()
    before = snapshot(powsum)
    code, doc = try_json(powsum)
    assert code == 0, doc
    assert doc["reference"].endswith("CPU: torch.ops.aten.linalg__powsum")
    assert any("|x|^ord was computed by torch's CPU abs and pow" in n for n in doc["not_run"])
    rows = [r["scalars"] for r in doc["dtypes"]]
    assert len(rows) == len(ORDERS) * len(POWSUM_PAIRS) * 7 and all(r["status"] == "passed" for r in doc["dtypes"])
    # orders 1 and 2 through their load-mode kernels, the others through |x|^ord (in the output's
    # type) and the sum kernels
    assert "ord=1 half->float: powsum_l1, innermost" in rows
    assert "ord=2 bfloat->bfloat: powsum_l2, empty (reduced dim of size 0)" in rows
    assert "ord=0 half->float: |x|^ord as float, then sum, outer keepdim" in rows
    assert "ord=-inf bfloat->bfloat: |x|^ord as bfloat, then sum, all" in rows
    assert {r.split(" ", 1)[0] for r in rows} == {f"ord={o}" for o in ORDERS}
    assert snapshot(powsum) == before


def test_try_catches_swapped_load_modes(powsum, tmp_path):
    _needs_compiler_and_torch()
    import shutil

    root = tmp_path / "swapped"
    shutil.copytree(powsum, root)
    edit(root, REDUCE_METAL, 'REGISTER_REDUCTION("powsum_l1_", TI, TO, SumOp<TO, LOAD_ABS>)',
         'REGISTER_REDUCTION("powsum_l1_", TI, TO, SumOp<TO, LOAD_SQUARE>)')
    edit(root, REDUCE_METAL, 'REGISTER_REDUCTION("powsum_l2_", TI, TO, SumOp<TO, LOAD_SQUARE>)',
         'REGISTER_REDUCTION("powsum_l2_", TI, TO, SumOp<TO, LOAD_ABS>)')
    code, doc = try_json(root)
    assert code == 1
    failed = {r["scalars"].split(" ", 1)[0] for r in doc["dtypes"] if r["status"] == "failed"}
    assert failed == {"ord=1", "ord=2"}


def test_verify_fails_a_duplicate_explicit_instantiation(powsum, tmp_path):
    """What mpsgen never writes, verify finds: a second host name for a kernel the file already
    instantiates (here norm_l1's innermost kernel, added after powsum_l1's)."""
    import shutil

    root = tmp_path / "dup"
    shutil.copytree(powsum, root)
    edit(root, REDUCE_METAL, "REGISTER_POWSUM(bfloat, float);\n", "REGISTER_POWSUM(bfloat, float);\n" + NORM_L1_INNERMOST)
    result = run_cli(["-C", str(root), "verify", "linalg__powsum", "--static-only", "--json"])
    assert result.exit_code == 1
    (check,) = [c for c in json.loads(result.stdout)["stages"][0]["checks"] if c["check"] == "reduce-variants"]
    (finding,) = check["findings"]
    lines = (root / REDUCE_METAL).read_text().splitlines()
    assert lines[finding["line"] - 1] == "REGISTER_POWSUM(float, float);"
    assert finding["message"] == (
        "powsum_l1_reduction_innermost_float_float instantiates reduction_innermost<SumOp<float, LOAD_ABS>, float, "
        f"float>, which norm_l1_reduction_innermost_float_float (line {lines.index('REGISTER_NORM_L1_INNERMOST(float, float);') + 1}) "
        "already instantiates: a duplicate explicit instantiation does not compile")
