"""`try` on a reduction (the reduction overlay after `migrate prod`): each registered pair's op struct,
read from the kernel file's instantiations, runs on the host through the serial driver against
torch's CPU op over the innermost, outer, all, none and empty cases, with and without keepdim; a wrong
combine fails; the variant kernels are said not to run here; the checkout is left byte-identical."""

from __future__ import annotations

import json

import pytest

from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.read.metalhost.compiler import find_compiler
from reduction_support import REDUCE_METAL, reduction_checkout
from support import needs, run_cli, snapshot

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())

PROD_PAIRS = ("float->float", "half->half", "half->float", "bfloat->bfloat", "bfloat->float", "int->long", "long->long")
CASES = ("innermost", "innermost keepdim", "outer", "outer keepdim", "all", "none (reduced dim of size 1)",
         "empty (reduced dim of size 0)")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = reduction_checkout(tmp_path_factory.mktemp("reduce"))
    assert run_cli(["-C", str(root), "migrate", "prod"]).exit_code == 0
    return root


def try_json(root, op, *args):
    result = run_cli(["-C", str(root), "try", op, "--json", *args])
    return result.exit_code, json.loads(result.stdout)


@needs_compiler
@needs_torch
def test_prod_op_struct_matches_torch_on_every_pair_and_case(migrated):
    before = snapshot(migrated)
    code, doc = try_json(migrated, "prod")
    assert code == 0, doc
    assert doc["functor"] == "prod_reduction* op structs" and doc["backend"] == "host"
    assert doc["reference"].endswith("CPU: torch.prod")
    assert "need a Mac with MPS" in doc["not_run"][0] and "serial host driver" in doc["not_run"][0]
    ran = [(r["scalars"], r["status"]) for r in doc["dtypes"]]
    assert ran == [(f"prod {pair}, {case}", "passed") for pair in PROD_PAIRS for case in CASES]
    counts = {r["scalars"].split(", ", 1)[1]: r["cases"] for r in doc["dtypes"]}
    # (2, 5, 3): 10 outputs reducing the innermost dim, 15 the outer; all: 1; size 1 and size 0: 6
    assert counts == {"innermost": 10, "innermost keepdim": 10, "outer": 15, "outer keepdim": 15, "all": 1,
                      "none (reduced dim of size 1)": 6, "empty (reduced dim of size 0)": 6}
    assert snapshot(migrated) == before


@needs_compiler
@needs_torch
def test_sum_runs_its_bool_pair_exactly(migrated):
    code, doc = try_json(migrated, "sum")
    assert code == 0
    bool_rows = [r for r in doc["dtypes"] if r["metal_type"] == "bool"]
    assert len(bool_rows) == len(CASES) and all(r["status"] == "passed" and r["tolerance"] is None for r in bool_rows)


@needs_compiler
@needs_torch
def test_a_wrong_combine_fails(migrated, tmp_path):
    import shutil

    root = tmp_path / "broken"
    shutil.copytree(migrated, root)
    path = root / REDUCE_METAL
    text = path.read_text()
    start = text.index("struct ProdOp")
    at = text.index("return a * b;", start)
    path.write_text(text[:at] + "return a * b + static_cast<acc_t>(1);" + text[at + len("return a * b;"):])
    code, doc = try_json(root, "prod")
    assert code == 1
    failed = {r["scalars"] for r in doc["dtypes"] if r["status"] == "failed"}
    # every pair fails wherever an output combines at least one element (the empty case's output is
    # identity() finalized, the lanes' combination adds the error there too)
    assert {f"prod long->long, {case}" for case in CASES} <= failed


def test_backend_mps_is_refused_for_a_reduction(migrated):
    result = run_cli(["-C", str(migrated), "try", "prod", "--backend", "mps"])
    assert result.exit_code == 2
    assert "--backend mps does not run reductions yet" in result.output
