"""read/cppsyntax.py: the miniature's cpu/*.cpp and Math.h read by tree-sitter, as plain data."""

from __future__ import annotations

from mpsgen.read.cppsyntax import parse, read_cpu_kernels
from support import FIXTURE_CHECKOUT

CPU = FIXTURE_CHECKOUT / "aten/src/ATen/native/cpu"
MATH = FIXTURE_CHECKOUT / "aten/src/ATen/native/Math.h"


def _binary():
    return read_cpu_kernels((CPU / "BinaryOpsKernel.cpp").read_text(), "BinaryOpsKernel.cpp")


def test_attribute_macros_are_blanked_and_the_files_parse_without_error_nodes():
    for path in (CPU / "BinaryOpsKernel.cpp", CPU / "UnaryOpsKernel.cpp", MATH):
        source = parse(path.read_text())
        assert source.errors() == 0, path.name
        assert "__ubsan_ignore" not in source.text and "C10_HOST_DEVICE" not in source.text
        assert len(source.text) == len(path.read_text())  # offsets kept


def test_registrations_read_both_register_macros_and_qualified_kernels():
    assert _binary().registrations["copysign_stub"] == ("copysign_kernel", 146)
    assert _binary().registrations["atan2_stub"] == ("atan2_kernel", 152)
    unary = read_cpu_kernels((CPU / "UnaryOpsKernel.cpp").read_text(), "UnaryOpsKernel.cpp")
    assert unary.registrations["special_ndtri_stub"] == ("ndtri_kernel", 96)


def test_scalar_lambdas_with_their_dispatch_list_and_branch():
    kernels = _binary()
    (atan2,) = kernels.lambdas("atan2_kernel")  # the Vectorized twin is not a scalar lambda
    assert atan2.params == (("scalar_t", "a"), ("scalar_t", "b")) and atan2.returns == "scalar_t"
    assert (atan2.dispatch.expands_to, atan2.dispatch.extra, atan2.line) == ("AT_DISPATCH_FLOATING_TYPES_AND2",
                                                                             ("kBFloat16", "kHalf"), 28)
    reduced, full = kernels.lambdas("nextafter_kernel")
    assert reduced.condition == "(at::isReducedFloatingType(iter.common_dtype()))"
    assert full.condition.startswith("!") and full.dispatch.expands_to == "AT_DISPATCH_FLOATING_TYPES"
    (hypot,) = kernels.lambdas("hypot_kernel")  # through the file's own #define
    assert (hypot.dispatch.macro, hypot.dispatch.expands_to, hypot.dispatch.extra) == (
        "_MINI_DISPATCH_FLOATING", "AT_DISPATCH_FLOATING_TYPES_AND2", ("kBFloat16", "kHalf"))
    integer, floating = kernels.lambdas("fmod_kernel")
    assert integer.captures == "[=]" and floating.captures == "[]" and floating.returns == "scalar_t"


def test_helper_definitions_with_their_template_heads():
    math = read_cpu_kernels(MATH.read_text(), "Math.h")
    (hypot,) = math.functions["calc_hypot"]
    assert hypot.line == 20 and math.source.text_of(hypot.node).startswith("template <typename T>")
    assert set(math.functions) == {"hypot_sum_of_squares", "calc_hypot", "calc_ndtri"}
