"""Dtypes an op's host function sends elsewhere (mpsgen.facts.rules.host_routing) are served, not lost;
a host function whose branching cannot be read makes dtype-coverage say it cannot tell."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mpsgen.facts.views import HostFunction
from mpsgen.model import Location
from mpsgen.facts.rules import COMPLEX, FLOATS, INTEGERS, HostRouting, host_routing

from support import copy_checkout, run_cli

ALL = FLOATS | INTEGERS | COMPLEX


def routing_of(body: str, kernel: str = "k") -> HostRouting:
    host = HostFunction("k_kernel", ("TensorIteratorBase& iter",), Location("operations/K.mm", 10), body, 10,
                        kernel, 12)
    return host_routing(SimpleNamespace(host=host))


CASES = [
    ("floating-only-else-another-op", """{
  if (isFloatingType(iter.common_dtype())) {
    lib.exec_binary_kernel(iter, "k");
  } else {
    at::maximum_out(const_cast<Tensor&>(iter.output()), iter.input(0), iter.input(1));
  }
}""", ALL - FLOATS),
    ("complex-early-return", """{
  if (isComplexType(iter.common_dtype())) {
    at::mul_out(out, self, at::sigmoid(self));
    return;
  }
  lib.exec_unary_kernel(iter, "k");
}""", COMPLEX),
    ("integral-with-bool-early-return", """{
  // integers have no NaN: another op serves them
  if (c10::isIntegralType(iter.common_dtype(), /*includeBool=*/true)) {
    at::clamp_min_out(out, a, b);
    return;
  }
  lib.exec_binary_kernel(iter, "k");
}""", INTEGERS),
    ("integral-without-bool", """{
  if (isIntegralType(iter.common_dtype(), false)) {
    at::clamp_min_out(out, a, b);
    return;
  }
  lib.exec_binary_kernel(iter, "k");
}""", INTEGERS - {"bool"}),
    ("negated-single-statement", """{
  if (!isFloatingType(iter.common_dtype()))
    return at::other_out(out, a);
  lib.exec_unary_kernel(iter, "k");
}""", ALL - FLOATS),
    ("else-if-chain", """{
  if (isComplexType(iter.common_dtype())) {
    complex_path(iter);
  } else if (isFloatingType(iter.common_dtype()) || isComplexType(iter.dtype(1))) {
    lib.exec_unary_kernel(iter, "k");
  } else {
    integer_path(iter);
  }
}""", ALL - FLOATS),
    ("non-dtype-conditions-route-nothing", """{
  if (iter.numel() == 0)
    return;
  if (alpha.to<double>() == 1.0) {
    lib.exec_binary_kernel(iter, "k");
  } else {
    lib.exec_binary_kernel(iter, "k", alpha);
  }
}""", frozenset()),
    ("straight-line", """{
  lib.exec_unary_kernel(iter, "k");
}""", frozenset()),
]


@pytest.mark.parametrize("body, routed", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_routed_dtypes(body, routed):
    assert routing_of(body) == HostRouting(frozenset(routed), "")


UNREADABLE = [
    ("dtype-compared", """{
  if (iter.common_dtype() == ScalarType::Bool) {
    at::ne_out(out, a, 0);
    return;
  }
  lib.exec_unary_kernel(iter, "k");
}""", "k_kernel (operations/K.mm:10) branches on `iter.common_dtype() == ScalarType::Bool`, "
      "a dtype condition mpsgen does not read"),
    ("switch", """{
  switch (iter.common_dtype()) {
    case ScalarType::Float:
      lib.exec_unary_kernel(iter, "k");
      break;
    default:
      other(iter);
  }
}""", "k_kernel (operations/K.mm:10) calls its kernel after a `switch` mpsgen does not follow"),
]


@pytest.mark.parametrize("body, why", [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_unreadable_host_functions_say_why(body, why):
    assert routing_of(body) == HostRouting(frozenset(), why)


UNARY_MM = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
ABS_HELPER_LINE = "REGISTER_UNARY_TI_DISPATCH(abs);\n"


def abs_host(condition: str) -> str:
    """abs's host function written out, sending the dtypes of `condition` to another op (the
    fixture's abs has no bool kernel and its OpInfo tests bool)."""
    return f"""static void abs_kernel_mps(TensorIteratorBase& iter) {{
  if ({condition}) {{
    at::abs_out_other(const_cast<Tensor&>(iter.output()), iter.input(0));
    return;
  }}
  lib.exec_unary_kernel(iter, "abs");
}}
REGISTER_DISPATCH(abs_stub, &abs_kernel_mps)
"""


def dtype_coverage(root) -> dict:
    result = run_cli(["-C", str(root), "verify", "abs", "--static-only", "--json"])
    doc = json.loads(result.stdout)
    return next(c for c in doc["stages"][0]["checks"] if c["check"] == "dtype-coverage")


def test_fixture_abs_lacks_bool(fixture_checkout):
    check = dtype_coverage(fixture_checkout)
    assert check["status"] == "failed"
    assert check["findings"][0]["message"].startswith("abs_functor is not registered for bool ")


def test_host_routing_bool_elsewhere_makes_abs_complete(tmp_path):
    root = copy_checkout(tmp_path)
    mm = root / UNARY_MM
    text = mm.read_text()
    assert ABS_HELPER_LINE in text
    mm.write_text(text.replace(ABS_HELPER_LINE, abs_host("isIntegralType(iter.common_dtype(), /*includeBool=*/true)")))
    check = dtype_coverage(root)
    assert (check["status"], check["findings"]) == ("passed", [])


def test_an_unreadable_host_branch_is_a_skip_with_the_reason(tmp_path):
    root = copy_checkout(tmp_path)
    mm = root / UNARY_MM
    text = mm.read_text()
    line = text[: text.index(ABS_HELPER_LINE)].count("\n") + 1
    mm.write_text(text.replace(ABS_HELPER_LINE, abs_host("iter.common_dtype() == kBool")))
    check = dtype_coverage(root)
    assert check["status"] == "skipped"
    assert check["reason"] == (
        f"cannot tell whether abs_functor misses bool: abs_kernel_mps ({UNARY_MM}:{line}) "
        "branches on `iter.common_dtype() == kBool`, a dtype condition mpsgen does not read")
