"""Helpers several functors need (complex |z|, log |z|, sqrt, log1p) are written once per kernel
file, before the first functor that calls them, and reused by every later op; log1p comes from
c10/metal where the checkout has it."""

from __future__ import annotations

import re

import pytest

from mpsgen.facts.functor import SHARED_HELPERS, shared_helpers
from mpsgen.edit.templates import Templates
from mpsgen.read.kernelfile import NamespacePrefixes

from support import copy_checkout, pytorch_clang_format, run_cli

UNARY = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
SPELLINGS = {"qualified": NamespacePrefixes(), "short": NamespacePrefixes("", "")}


def definitions(text: str) -> dict[str, int]:
    """helper name -> how many times the text defines it."""
    return {name: len(re.findall(rf"^inline \w+ {name}\(", text, re.M)) for name in SHARED_HELPERS}


def test_helpers_a_functor_calls_with_what_they_call_in_order():
    text = shared_helpers(Templates(), "return complex_sqrt_(z) + complex_log_abs_(z);", "")
    assert definitions(text) == dict.fromkeys(SHARED_HELPERS, 1)
    order = [re.search(rf"^inline \w+ {name}\(", text, re.M).start() for name in SHARED_HELPERS]
    assert order == sorted(order)  # each after what it calls


def test_c10_log1p_is_called_instead_of_a_local_one():
    text = shared_helpers(Templates(), "complex_log_abs_(z)", "", c10_functions=frozenset({"log1p"}))
    assert definitions(text) == {"complex_log1p_": 0, "complex_abs_": 0, "complex_log_abs_": 1, "complex_sqrt_": 0}
    assert "c10::metal::log1p(r * r)" in text


def test_a_file_that_has_them_gets_none_again():
    first = shared_helpers(Templates(), "complex_sqrt_(z) complex_log_abs_(z)", "")
    assert shared_helpers(Templates(), "complex_sqrt_(z) complex_log_abs_(z)", first) == ""
    assert shared_helpers(Templates(), "no helper called", "") == ""


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_helpers_are_clean_under_pytorchs_clang_format(spelling):
    from mpsgen.edit.clangformat import lines_to_rewrite, replacements

    executable, style = pytorch_clang_format()
    text = shared_helpers(Templates(), " ".join(f"{name}(z)" for name in SHARED_HELPERS), "", namespaces=SPELLINGS[spelling])
    assert definitions(text) == dict.fromkeys(SHARED_HELPERS, 1)
    text += "struct f_functor {};\n"  # what they are written before (they end in a blank line)
    found = replacements(text, [(1, text.count("\n"))], executable=executable, style=style, rel="helpers.metal")
    assert lines_to_rewrite(text, found) == []


def test_migrating_three_complex_ops_writes_each_helper_once(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "asinh", "acosh", "atanh"])
    assert result.exit_code == 0, result.stderr
    text = (root / UNARY).read_text(encoding="utf-8")
    assert definitions(text) == dict.fromkeys(SHARED_HELPERS, 1)  # the miniature's c10/metal has no log1p
    # before the first functor calling them
    assert text.index("inline float2 complex_sqrt_(") < text.index("struct asinh_functor")
    for op in ("asinh", "acosh", "atanh"):
        struct = text[text.index(f"struct {op}_functor"):]
        struct = struct[: struct.index("\n};") + 3]
        assert "static inline float log1p_" not in struct and "static inline float abs_" not in struct


@pytest.mark.realfiles
def test_a_checkout_whose_c10_has_log1p_gets_no_log1p_helper(real_checkout):
    result = run_cli(["-C", str(real_checkout), "migrate", "asinh", "acosh", "atanh"])
    assert result.exit_code == 0, result.stderr
    text = (real_checkout / UNARY).read_text(encoding="utf-8")
    assert definitions(text) == {"complex_log1p_": 0, "complex_abs_": 1, "complex_log_abs_": 1, "complex_sqrt_": 1}
    assert "c10::metal::log1p(" in text
