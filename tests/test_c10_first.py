"""Catalog bodies call the checkout's c10::metal functions where its headers declare them, and keep
a local helper (with a note) only where they do not; no `fast::` math anywhere."""

from __future__ import annotations

import math
import re

import pytest

from mpsgen.read.c10lib import declared_functions
from mpsgen.read.metalhost.compiler import find_compiler
from support import REPO, copy_checkout, run_cli

MPS = "aten/src/ATen/native/mps"
UTILS = "c10/metal/utils.h"
# a c10::metal::log1p of our own, in the shape the c10 headers define their functions
LOG1P = """
inline float log1p(float x) {
  const float u = 1.0f + x;
  if (u == 1.0f) {
    return x;
  }
  return ::metal::precise::log(u) * (x / (u - 1.0f));
}
"""
OPS = ["mish", "mish_backward", "softplus"]
KERNEL = f"{MPS}/kernels/ActivationKernel.metal"


def with_log1p(root):
    path = root / UTILS
    text = path.read_text(encoding="utf-8")
    close = re.search(r"^} // namespace metal$", text, re.M)
    assert close, "the fixture's utils.h closes its namespace with a comment"
    path.write_text(text[: close.start()] + LOG1P.lstrip("\n") + "\n" + text[close.start():], encoding="utf-8")
    return root


def test_declared_functions_reads_definitions_not_calls():
    text = "namespace c10 {\ninline float log1p(float x) {\n  return x;\n}\ntemplate <typename T>\ninline T twice(T x) {\n  return log1p(x);\n}\n// inline float gone(float x) {\n}\n"
    assert declared_functions([text]) == {"log1p", "twice"}


def test_with_c10_log1p_the_bodies_call_it_and_carry_no_helper(tmp_path):
    root = with_log1p(copy_checkout(tmp_path))
    result = run_cli(["-C", str(root), "migrate", *OPS])
    assert result.exit_code == 0, result.output
    text = (root / KERNEL).read_text(encoding="utf-8")
    assert text.count("c10::metal::log1p(e)") == 3
    assert "log1p_" not in text and "softplus_(" not in text and "log1p_exp_" not in text
    assert "carries a local helper" not in result.output


def test_without_c10_log1p_a_local_helper_and_a_note(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "mish"])
    assert result.exit_code == 0, result.output
    assert "static inline float log1p_(const float t) {" in (root / KERNEL).read_text(encoding="utf-8")
    assert "mish_functor carries a local helper: this checkout's c10/metal headers declare no c10::metal::log1p" \
        in result.output


@pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")
def test_the_c10_spelling_compiles(tmp_path):
    root = with_log1p(copy_checkout(tmp_path))
    assert run_cli(["-C", str(root), "migrate", *OPS]).exit_code == 0
    for op in OPS:
        result = run_cli(["-C", str(root), "verify", op, "--static-only", "--require-metal-compile", "--format", "plain"])
        lines = [line for line in result.output.splitlines() if "metal-compile" in line]
        assert lines and all("passed" in line for line in lines), result.output


def test_no_fast_math_in_templates_or_catalog():
    found = [str(p.relative_to(REPO)) for p in sorted((REPO / "templates").rglob("*.j2"))
             if "fast::" in p.read_text(encoding="utf-8")]
    assert found == []
    assert "fast::" not in (REPO / "mpsgen" / "facts" / "catalog.toml").read_text(encoding="utf-8")


BINARY = f"{MPS}/kernels/BinaryKernel.metal"


def without_function(root, header: str, name: str):
    """The checkout's c10/metal `header` without its definition of `name` (a checkout lacking it)."""
    path = root / "c10/metal" / header
    text = path.read_text(encoding="utf-8")
    m = re.search(rf"\n(?://[^\n]*\n)*(?:template <typename T>\n)?inline float {name}\(.*?\n}}\n", text, re.S)
    assert m, f"the fixture's {header} defines {name}"
    path.write_text(text[: m.start()] + text[m.end() - 1:], encoding="utf-8")
    return root


def test_hypot_and_xlogy_call_the_checkouts_c10_functions(tmp_path):
    root = copy_checkout(tmp_path)
    for argv in (["new-op", "hypot"], ["migrate", "xlogy"]):
        result = run_cli(["-C", str(root), *argv])
        assert result.exit_code == 0, result.output
        assert "carries a local helper" not in result.output
    text = (root / BINARY).read_text(encoding="utf-8")
    # hypot: inf and NaN settled first, then c10's function on the magnitudes (it takes max/min as given)
    assert "    const float x = fabs(a);\n    const float y = fabs(b);\n" in text
    assert "    return c10::metal::hypot(x, y);\n" in text
    assert "precise::sqrt" not in text
    assert text.count("c10::metal::xlogy(float(x), float(y))") == 2
    assert "xlogy_(" not in text


def test_without_c10_hypot_or_xlogy_the_local_helpers_and_notes(tmp_path):
    root = without_function(without_function(copy_checkout(tmp_path), "utils.h", "hypot"), "special_math.h", "xlogy")
    outputs = [run_cli(["-C", str(root), *argv]) for argv in (["new-op", "hypot"], ["migrate", "xlogy"])]
    assert all(r.exit_code == 0 for r in outputs), [r.output for r in outputs]
    text = (root / BINARY).read_text(encoding="utf-8")
    assert "c10::metal::hypot" not in text and "c10::metal::xlogy" not in text
    assert "    return hi * precise::sqrt(1.0f + r * r);\n" in text
    assert "  static inline float xlogy_(const float x, const float y) {\n" in text
    assert "hypot_functor carries a local helper: this checkout's c10/metal headers declare no c10::metal::hypot" \
        in outputs[0].output
    assert "xlogy_functor carries a local helper: this checkout's c10/metal headers declare no c10::metal::xlogy" \
        in outputs[1].output


@pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")
def test_hypot_and_xlogy_with_c10_compile(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    assert run_cli(["-C", str(root), "migrate", "xlogy"]).exit_code == 0
    for op in ("hypot", "xlogy"):
        result = run_cli(["-C", str(root), "verify", op, "--static-only", "--require-metal-compile", "--format", "plain"])
        lines = [line for line in result.output.splitlines() if "metal-compile" in line]
        assert lines and all("passed" in line for line in lines), result.output


@pytest.mark.skipif(find_compiler()[0] is None, reason="no C++ compiler (g++/clang++) on PATH")
def test_c10_hypot_on_signed_operands_is_why_the_body_passes_magnitudes(tmp_path):
    # what catalog.toml's hypot note says: c10::metal::hypot takes max/min of its arguments as
    # given, so called on a, b themselves it is wrong where CPU's hypot is not (hypot(0, -1) = 1)
    from mpsgen.read.checkout import Checkout
    from mpsgen.commands.tryop.api import TryOptions, try_op

    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    good = try_op(Checkout.find(root), "hypot", TryOptions(reference="catalog", backend="host", samples=8))
    assert all(r.status == "passed" for r in good.results), [(r.dtype, r.status) for r in good.results]
    path = root / BINARY
    text = path.read_text(encoding="utf-8")
    start = text.index("    const float x = fabs(a);")
    end = text.index("    return c10::metal::hypot(x, y);\n")
    path.write_text(text[:start] + "    return c10::metal::hypot(a, b);\n" + text[end + len("    return c10::metal::hypot(x, y);\n"):],
                    encoding="utf-8")
    bad = try_op(Checkout.find(root), "hypot", TryOptions(reference="catalog", backend="host", samples=8))
    float32 = next(r for r in bad.results if r.dtype == "float32")
    assert float32.status == "failed"
    assert any(m.inputs == (0.0, -1.0) and math.isnan(m.got) for m in float32.examples)
