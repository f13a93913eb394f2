"""Out of family (issue 36 item 9): a stub whose kernel is no elementwise functor -- an index stub
taking a tensor besides the iterator (take_stub's `const TensorBase& input`, put_stub), or a stub
over whole tensors with no iterator (sort_stub) -- is refused in one line saying a hand-written
kernel is needed and why, and `scan` puts it in `port` with that line. Fixture: tests/data/outoffamily
(our IndexKernel.h, yaml entries, a legacy MPSGraph take), laid over a copy of the miniature."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mpsgen.facts.resolve import out_of_family
from mpsgen.model import Location
from mpsgen.read.stubs import Stub
from support import copy_checkout, run_cli, snapshot

DATA = Path(__file__).resolve().parent / "data" / "outoffamily"
NATIVE = "aten/src/ATen/native"

TAKE = ("take_stub (void(*)(TensorIterator&, const TensorBase&)) takes const TensorBase& besides the iterator: its "
        "kernel reads or writes that tensor at positions computed from the iterator's values (an index kernel), "
        "which the elementwise launchers (one value per element, from the same position of each operand) cannot "
        "express; a hand-written kernel is needed")
PUT = TAKE.replace("take_stub (void(*)(TensorIterator&, const TensorBase&))",
                   "put_stub (void(*)(TensorIterator&, const TensorBase&, const bool))")
SORT = ("sort_stub (void(*)(const TensorBase&, const TensorBase&, const TensorBase&, int64_t, bool, bool)) takes whole "
        "tensors, not a TensorIterator: its kernel walks them itself (scans, sorts, reductions over a dim with "
        "indices), which no generated elementwise functor does; a hand-written kernel is needed")


def checkout_with_index_stubs(tmp_path: Path) -> Path:
    root = copy_checkout(tmp_path)
    shutil.copyfile(DATA / "IndexKernel.h", root / NATIVE / "IndexKernel.h")
    shutil.copyfile(DATA / "Indexing.mm", root / NATIVE / "mps/operations/Indexing.mm")
    with open(root / NATIVE / "native_functions.yaml", "a", encoding="utf-8", newline="") as handle:
        handle.write((DATA / "native_functions.append.yaml").read_text(encoding="utf-8"))
    return root


@pytest.mark.parametrize("op,line,message", [("take", 14, TAKE), ("put", 15, PUT), ("sort", 16, SORT)])
def test_migrate_refuses_in_one_line_naming_why(tmp_path, op, line, message):
    root = checkout_with_index_stubs(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", op])
    assert result.exit_code == 2
    assert result.stderr == (f"mpsgen: error: {NATIVE}/IndexKernel.h:{line}: {message} (port {op} by hand: a Metal "
                             f"kernel of its own and a host function registered for {op}_stub)\n")
    assert snapshot(root) == before


def test_scan_puts_them_in_port_with_that_reason(tmp_path):
    root = checkout_with_index_stubs(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "scan", "--json"])
    assert result.exit_code == 0, result.stderr
    ops = {o["op"]: o for o in json.loads(result.stdout)["ops"]}
    assert ops["take"]["backing"] == "mpsgraph"
    assert {op: ops[op]["candidate"] for op in ("take", "put", "sort")} == {
        "take": {"tier": "port", "reason": TAKE}, "put": {"tier": "port", "reason": PUT},
        "sort": {"tier": "port", "reason": SORT}}
    assert snapshot(root) == before


def _stub(*params: str) -> Stub:
    return Stub("x_stub", "x_fn", tuple(params), Location(f"{NATIVE}/X.h", 1), None)


def test_elementwise_stubs_stay_in_family():
    assert out_of_family(_stub("TensorIteratorBase&")) is None
    assert out_of_family(_stub("TensorIterator&", "const Scalar&", "double")) is None
    assert out_of_family(_stub("TensorIteratorBase&", "const int64_t")) is None  # polygamma: an int, no tensor
    assert "takes IntArrayRef, IntArrayRef besides the iterator" in out_of_family(
        _stub("TensorIteratorBase&", "IntArrayRef", "IntArrayRef"))  # index_stub: sizes and strides
    assert "takes whole tensors" in out_of_family(_stub("const Tensor&", "const Tensor&", "int64_t"))  # cumsum


# ---- a composite op: what it calls has the kernels ------------------------------------------------

COMPOSITE = Path(__file__).resolve().parent / "data" / "composite"


def _with_prelu(tmp_path: Path, *, cpp: bool) -> Path:
    root = copy_checkout(tmp_path)
    with open(root / NATIVE / "native_functions.yaml", "a", encoding="utf-8", newline="") as handle:
        handle.write((COMPOSITE / "native_functions.append.yaml").read_text(encoding="utf-8"))
    if cpp:
        shutil.copyfile(COMPOSITE / "Prelu.cpp", root / NATIVE / "Prelu.cpp")
    return root


@pytest.mark.parametrize("cpp", [False, True], ids=["wheel-convention", "read-from-cpp"])
def test_a_composite_op_is_refused_naming_the_ops_it_runs_through(tmp_path, cpp):
    root = _with_prelu(tmp_path, cpp=cpp)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "prelu"])
    assert result.exit_code == 2
    line = len((root / NATIVE / "native_functions.yaml").read_text().splitlines()) - 6
    # without the .cpp, ATen's `_<op>_kernel` convention; with it, every op its function calls that has
    # a kernel line (relu for an empty weight, the miniature's `MPS: relu_mps`)
    called = ("relu (MPS: relu_mps), _prelu_kernel (MPS: prelu_mps)" if cpp else "_prelu_kernel (MPS: prelu_mps)")
    hint = ("mpsgen migrate relu / mpsgen migrate _prelu_kernel" if cpp else "mpsgen migrate _prelu_kernel")
    assert result.stderr == (f"mpsgen: error: {NATIVE}/native_functions.yaml:{line}: prelu is a composite op (its "
                             "entry names no dispatch: CompositeImplicitAutograd): MPS runs what it calls, "
                             f"{called}; migrate that instead ({hint})\n")
    assert snapshot(root) == before


# ---- an MPS kernel with no `CPU, CUDA: ...` line to join: the shape that keeps it a port ------------

NO_SHARED = {
    "add": "add's MPS kernel add_out_mps is not a shared stub kernel and its CPU and CUDA kernels are generated from "
           "add.out's ufunc_inner_loop (torchgen's ufunc codegen): no dispatch line to join",
    "permute": "permute's MPS kernel permute_mps is not a shared stub kernel and CPU and CUDA run its composite kernel "
               "(CompositeExplicitAutograd: permute), which MPS overrides: no shared line to join",
    "pixel_shuffle": "pixel_shuffle's MPS kernel pixel_shuffle_mps is not a shared stub kernel and only CPU has a "
                     "kernel of its own (pixel_shuffle_cpu), CUDA runs the composite one "
                     "(CompositeExplicitAutogradNonFunctional: math_pixel_shuffle): no shared line to join",
    "_copy_from": "_copy_from's MPS kernel _copy_from_mps is not a shared stub kernel and it has no CPU or CUDA kernel "
                  "(MPS-only): no shared line to join",
}


def test_scan_names_why_an_mps_kernel_has_no_shared_line(tmp_path):
    root = copy_checkout(tmp_path)
    with open(root / NATIVE / "native_functions.yaml", "a", encoding="utf-8", newline="") as handle:
        handle.write((DATA / "native_functions.noshared.yaml").read_text(encoding="utf-8"))
    result = run_cli(["-C", str(root), "scan", "--json"])
    assert result.exit_code == 0, result.stderr
    ops = {o["op"]: o for o in json.loads(result.stdout)["ops"]}
    assert {op: ops[op]["candidate"] for op in NO_SHARED} == {
        op: {"tier": "port", "reason": reason} for op, reason in NO_SHARED.items()}
    migrate = run_cli(["-C", str(root), "migrate", "permute"])
    assert migrate.exit_code == 2 and NO_SHARED["permute"] in migrate.stderr
