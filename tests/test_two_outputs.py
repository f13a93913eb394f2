"""Ops whose shared kernel fills two outputs through one TensorIterator (frexp: mantissa and
exponent). mpsgen's functors and the checkout's launchers (`exec_*_kernel`) write one value per
element into `iter.output(0)`, so a generated kernel would fill the mantissa only: `new-op frexp`
(which used to write a one-output placeholder functor, and scan offered as `expr`) is refused in one
line naming the outputs, the stub and the launchers the checkout's MetalShaderLibrary.h declares, and
what 2.15 compiled instead (a kernel of its own: frexp_dense_<T>, frexp_strided_<T>). Nothing is
written; scan no longer offers it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpsgen.facts.resolve import tensor_outputs
from mpsgen.model import Location
from mpsgen.read.nfyaml import YamlEntry

from support import copy_checkout, run_cli, snapshot

DATA = Path(__file__).resolve().parent / "data" / "twooutputs"
YAML = "aten/src/ATen/native/native_functions.yaml"
UNARY_H = "aten/src/ATen/native/UnaryOps.h"
ANCHOR = "DECLARE_DISPATCH(void (*)(TensorIteratorBase&, int64_t), round_decimals_stub)\n"
STUB = "// one iterator, two outputs: the mantissa and the exponent\nDECLARE_DISPATCH(unary_fn, frexp_stub)\n"


def with_frexp(tmp_path):
    root = copy_checkout(tmp_path)
    with open(root / YAML, "a", encoding="utf-8", newline="") as handle:
        handle.write((DATA / "native_functions.append.yaml").read_text(encoding="utf-8"))
    header = (root / UNARY_H).read_text(encoding="utf-8")
    assert header.count(ANCHOR) == 1
    (root / UNARY_H).write_text(header.replace(ANCHOR, ANCHOR + STUB), encoding="utf-8")
    return root


MESSAGE = (
    "{yaml}:{line}: frexp_out writes 2 outputs (mantissa, exponent) through one TensorIterator (frexp_stub: "
    "void(*)(TensorIteratorBase&)); aten/src/ATen/native/mps/MetalShaderLibrary.h declares {launchers}, each writing "
    "one output, so a generated functor would fill mantissa only (write a kernel of its own that stores every output "
    "and a host function launching it for frexp_stub (2.15's frexp kernels are frexp_dense_<T> and frexp_strided_<T> "
    "for float, half and bfloat: the mantissa in T, the exponent as int))"
)


def test_new_op_frexp_is_refused_naming_what_is_missing(tmp_path):
    root = with_frexp(tmp_path)
    line = (root / YAML).read_text(encoding="utf-8").splitlines().index("    CPU, CUDA: frexp_out") + 1
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "frexp"])
    assert result.exit_code == 2
    launchers = "exec_binary_kernel, exec_binary_kernel_with_params, exec_ternary_kernel, exec_unary_kernel, " \
                "exec_unary_kernel_with_params"
    assert result.stderr.strip() == "mpsgen: error: " + MESSAGE.format(yaml=YAML, line=line, launchers=launchers)
    assert snapshot(root) == before
    as_json = run_cli(["-C", str(root), "new-op", "frexp", "--json"])
    assert as_json.exit_code == 2 and "writes 2 outputs (mantissa, exponent)" in json.loads(as_json.stdout)["error"]
    # scan offers it no more (it was an `expr` candidate: a one-output functor)
    scan = run_cli(["-C", str(root), "scan", "--new-op", "--json"])
    assert scan.exit_code == 0 and "frexp" not in {c["op"] for c in json.loads(scan.stdout)["new_op_candidates"]}


@pytest.mark.parametrize(("schema", "names"), [
    ("frexp.Tensor_out(Tensor self, *, Tensor(a!) mantissa, Tensor(b!) exponent) -> (Tensor(a!) mantissa, Tensor(b!) exponent)",
     ("mantissa", "exponent")),
    ("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", ("mantissa", "exponent")),
    ("atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ("out",)),
    ("hypot(Tensor self, Tensor other) -> Tensor", ("out",)),
    ("_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]", ()),
    ("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)", ("min", "max")),
    # unnamed outputs by place (2.15's _prelu_kernel_backward)
    ("_prelu_kernel_backward(Tensor grad_output, Tensor self, Tensor weight) -> (Tensor, Tensor)",
     ("output 1", "output 2")),
])
def test_tensor_outputs(schema, names):
    entry = YamlEntry(schema, schema.split("(")[0], Location("y", 1), 0, 0, (), (), None)
    assert tensor_outputs(entry) == names
