"""Catalog bodies call the checkout's c10::metal functions where its headers declare them, and keep
a local helper (with a note) only where they do not; no `fast::` math anywhere."""

from __future__ import annotations

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
