"""A CPU lambda that reads its operands only as truth values (`a && b`, `bool(a) != bool(b)`)
serves complex inputs with the same body: the functor's complex overload reads each operand as
c10::complex converts to bool (either part nonzero). Read by tree-sitter (`truth_operands`), tried
against torch's CPU op on a real-size 2.13 checkout with the fixture kernels of fixtures/bodies
laid over (upstream's logical_and/or/xor were `expr` on 2.13: their complex tests were lost)."""

from __future__ import annotations

import re
import shutil

import pytest

from mpsgen.commands.migrate import plan_migrate
from mpsgen.facts.resolve import Options
from mpsgen.read.checkout import Checkout
from mpsgen.read.cppsyntax import read_cpu_kernels, truth_operands
from support import REPO
from test_bodies import needs_try

BODIES = REPO / "fixtures" / "bodies"


def _lambda(body: str):
    text = (f"void k(TensorIteratorBase& iter) {{\n  AT_DISPATCH_ALL_TYPES_AND_COMPLEX(iter.dtype(), \"k\", [&]() {{\n"
            f"    cpu_kernel(iter, [](scalar_t a, scalar_t b) -> bool {{ {body} }});\n  }});\n}}\n")
    kernels = read_cpu_kernels(text, "k.cpp")
    return kernels.source, kernels.lambdas("k")[0]


@pytest.mark.parametrize(("body", "truth"), [
    ("return a && b;", True),
    ("return a || b;", True),
    ("return bool(a) != bool(b);", True),
    ("return static_cast<bool>(a) == static_cast<bool>(b);", True),
    ("return static_cast<scalar_t>(a && b);", True),
    ("return !a && !(b);", True),
    ("return a ? true : bool(b);", True),
    ("return a == b;", False),  # compares values: complex equality is not truth
    ("return a ? b : a;", False),  # a value is returned, not a truth
    ("return bool(a + b);", False),
    ("if (a) { return b; } return false;", False),
])
def test_truth_operands(body, truth):
    source, lam = _lambda(body)
    assert truth_operands(source, lam) is truth


def _lay_over(root):
    for path in BODIES.rglob("*"):
        if path.is_file() and path.name != "README.md":
            target = root / path.relative_to(BODIES)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root


@needs_try
@pytest.mark.parametrize("op", ["logical_and", "logical_xor"])
def test_logical_ops_get_the_cpu_body_with_complex_and_pass_try(real_checkout_older, op):
    root = _lay_over(real_checkout_older)
    plan = plan_migrate(Checkout(root), (op,), Options())
    notes = [n.message for n in plan.notes]
    assert any(re.fullmatch(rf"{op}: checked: \d+ values match torch's CPU op", n) for n in notes), notes
    assert any(n.startswith("body: from aten/src/ATen/native/cpu/LogicalOpsKernel.cpp:") for n in notes), notes
    kernel = next(e for e in plan.edits if e.path.endswith("BinaryKernel.metal"))
    added = [line for line in kernel.after.splitlines() if line not in kernel.before.splitlines()]
    assert f"REGISTER_BINARY_OP({op}, float2, bool);" in added and f"REGISTER_BINARY_OP({op}, half2, bool);" in added
    functor = kernel.after[kernel.after.index(f"struct {op}_functor"):]
    functor = functor[:functor.index("};")]
    assert "    const bool a = a_.x != 0 || a_.y != 0;\n    const bool b = b_.x != 0 || b_.y != 0;\n" in functor
