"""mpsgen.read.metalread: kernel files read as the compiler reads them (macros expanded, token pasting
included), each functor and registration mapped back to the kernel-file line that writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.read.metalread import Functor, read_kernel, reduce_define

from conftest import FIXTURE_CHECKOUT

KERNELS = "aten/src/ATen/native/mps/kernels"


def reader(root: Path):
    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text() if path.is_file() else None

    return read


def read_fixture(name: str):
    rel = f"{KERNELS}/{name}"
    return read_kernel((FIXTURE_CHECKOUT / rel).read_text(), rel, reader(FIXTURE_CHECKOUT))


def pairs_by_line(reading, functor: str) -> list[tuple[int, str, str]]:
    return sorted((r.line, r.input, r.output) for r in reading.registered(functor))


def test_functors_written_by_a_header_macro_are_found_at_their_call():
    reading = read_fixture("BinaryKernel.metal")
    # DEFINE_BINARY_COMPARISON_FUNCTOR lives in the fixture's c10/metal/indexing.h
    assert reading.functors["lt"] == Functor("lt", 84, "DEFINE_BINARY_COMPARISON_FUNCTOR")
    assert reading.functors["maximum"] == Functor("maximum", 32, "")
    assert list(reading.functors) == ["mul", "div_true", "maximum", "minimum", "logaddexp", "logaddexp2",
                                      "bitwise_and", "lt"]
    assert reading.errors == ()


def test_functors_written_by_the_files_own_macro():
    reading = read_fixture("ActivationKernel.metal")
    assert list(reading.functors.values())[:3] == [
        Functor("hardshrink", 20, "SHRINK_FUNCTOR"), Functor("shrink_backward", 21, "SHRINK_FUNCTOR"),
        Functor("hardsigmoid", 25, "")]
    # registrations under `#if __METAL_VERSION__ >= 310` count, as Metal 3.1 compiles them
    assert [(r.input, r.output, r.alpha, r.line) for r in reading.registered("hardshrink")] == [
        ("float", "float", "float", 65), ("half", "half", "half", 66), ("bfloat", "bfloat", "bfloat", 68)]


def test_registrations_through_the_files_group_macros():
    reading = read_fixture("BinaryKernel.metal")
    assert pairs_by_line(reading, "maximum") == [
        (131, "bfloat", "bfloat"), (131, "float", "float"), (131, "half", "half"),
        (132, "bool", "bool"), (132, "char", "char"), (132, "int", "int"), (132, "long", "long"),
        (132, "short", "short"), (132, "uchar", "uchar")]
    # a comparison: bool out; its castout kernels are not `_dense_` registrations
    assert pairs_by_line(reading, "lt") == [(140, t, "bool") for t in ("bfloat", "float", "half", "int", "long")]
    assert "lt_strided_castout_bool_long" in reading.host_names
    assert not any(r.host_name.startswith("lt_strided") for r in reading.registrations)
    # literal c10 lines still count
    assert pairs_by_line(reading, "mul")[-2:] == [(143, "float2", "float2"), (144, "half2", "half2")]


def test_token_pasting_builds_the_complex_types():
    reading = read_fixture("UnaryKernel.metal")
    # REGISTER_COMPLEX_SIGN_KERNELS(float) registers abs and neg for float##2 on line 119
    assert [p for p in pairs_by_line(reading, "abs") if p[1].endswith("2")] == [
        (119, "float2", "float2"), (120, "half2", "half2")]
    assert [p for p in pairs_by_line(reading, "neg") if p[1].endswith("2")] == [
        (119, "float2", "float2"), (120, "half2", "half2")]


def test_a_macro_instantiated_per_dtype_pair():
    reading = read_fixture("UnaryKernel.metal")
    expected = [(line, dtype_in, dtype_out) for line, (dtype_in, dtype_out) in enumerate(
        [("float", "float"), ("half", "half"), ("bfloat", "bfloat"), ("bool", "float"), ("uchar", "float"),
         ("char", "float"), ("short", "float"), ("int", "float"), ("long", "float")], start=130)]
    for functor in ("angle", "exp", "sin", "cos", "sqrt"):
        assert pairs_by_line(reading, functor) == sorted(expected)
    # an alpha kernel: (input, output) and the alpha type apart
    alpha = reading.registered("round_decimals")
    assert [(r.input, r.output, r.alpha, r.line) for r in alpha] == [
        ("float", "float", "long", 140), ("half", "half", "long", 141), ("bfloat", "bfloat", "long", 142)]


HEADER = """#pragma once
// A header of c10 style: code the reader never needs, and the macros it does.
template <typename T> struct unused { T value; };

#define DECLARE_FUNCTOR(NAME) \\
  struct NAME##_functor {     \\
    template <typename T>     \\
    T operator()(T x) {       \\
      return x;               \\
    }                         \\
  }

#define REGISTER_ONE(NAME, DTYPEI, DTYPEO)                                     \\
  template [[host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI)]] kernel void      \\
  run<DTYPEI, NAME##_functor>(device DTYPEO* out, constant DTYPEI* in, uint i); \\
  template [[host_name(#NAME "_strided_" #DTYPEO                               \\
                             "_" #DTYPEI)]] kernel void                        \\
  run_strided<DTYPEI, NAME##_functor>(device void* out, uint i)
"""

KERNEL = """#include <c10/metal/own.h>
#include <metal_stdlib>

// the file's own functor macro
#define SAME_AS(NAME, OTHER) \\
  struct NAME##_functor : OTHER##_functor {}

DECLARE_FUNCTOR(first);
SAME_AS(second, first);

struct third_functor {
  template <typename T>
  T operator()(T x) {
    return x + 1;
  }
};

#define PER_COMPONENT(C)                  \\
  REGISTER_ONE(first, C##2, C##2);        \\
  REGISTER_ONE(second, C, C)

PER_COMPONENT(float);
#if __METAL_VERSION__ >= 310
PER_COMPONENT(bfloat);
#endif
#if 0
REGISTER_ONE(third, long, long);
#endif
REGISTER_ONE(
    third,
    int,
    float);
"""


def test_a_self_contained_file_every_construct_exact():
    reading = read_kernel(KERNEL, f"{KERNELS}/Own.metal", {"c10/metal/own.h": HEADER}.get, every_kernel=True)
    assert reading.functors == {
        "first": Functor("first", 8, "DECLARE_FUNCTOR"),
        "second": Functor("second", 9, "SAME_AS"),
        "third": Functor("third", 11, ""),
    }
    got = [(r.functor, r.input, r.output, r.line) for r in reading.registrations]
    assert got == [("first", "float2", "float2", 22), ("second", "float", "float", 22),
                   ("first", "bfloat2", "bfloat2", 24), ("second", "bfloat", "bfloat", 24),
                   ("third", "int", "float", 29)]
    assert reading.host_names == (
        "first_dense_float2_float2", "first_strided_float2_float2", "second_dense_float_float",
        "second_strided_float_float", "first_dense_bfloat2_bfloat2", "first_strided_bfloat2_bfloat2",
        "second_dense_bfloat_bfloat", "second_strided_bfloat_bfloat", "third_dense_float_int",
        "third_strided_float_int")
    assert reading.pairs("third") == frozenset({("int", "float")})
    # by default only the _dense_ kernels are expanded: the same registrations, faster
    fast = read_kernel(KERNEL, f"{KERNELS}/Own.metal", {"c10/metal/own.h": HEADER}.get)
    assert (fast.functors, fast.registrations) == (reading.functors, reading.registrations)
    assert fast.host_names == tuple(name for name in reading.host_names if "_dense_" in name)


def test_a_missing_header_reads_nothing_from_it_and_breaks_nothing():
    reading = read_kernel(KERNEL, f"{KERNELS}/Own.metal", {}.get)
    # the file's own SAME_AS still expands; DECLARE_FUNCTOR and REGISTER_ONE are unknown names
    assert reading.functors == {"second": Functor("second", 9, "SAME_AS"), "third": Functor("third", 11, "")}
    assert reading.registrations == ()


def test_reduce_define_keeps_what_the_reader_reads():
    directive = HEADER[HEADER.index("#define REGISTER_ONE"):].rstrip("\n")
    assert " ".join(reduce_define(directive).split()) == (
        '#define REGISTER_ONE(NAME, DTYPEI, DTYPEO) host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI) NAME##_functor;')
    assert " ".join(reduce_define(directive, every_kernel=True).split()) == (
        '#define REGISTER_ONE(NAME, DTYPEI, DTYPEO) host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI) NAME##_functor; '
        'host_name(#NAME "_strided_" #DTYPEO "_" #DTYPEI) NAME##_functor;')


@pytest.mark.realfiles
def test_the_wheels_c10_headers_register_as_the_compiled_library_names(real_torch_files):
    """The 2.13.0 wheel's own c10/metal macros, used by a kernel file of ours: the functor macro and
    the registration macros expand to the names the macOS library lists (e.g. erf_dense_float_float,
    erf_dense_float_int; binary: <name>_dense_<out>_<in>; alpha: ..._<in>_<alpha>)."""
    text = """#include <c10/metal/indexing.h>
#include <c10/metal/special_math.h>
#include <metal_stdlib>
using namespace c10::metal;

DEFINE_UNARY_FLOATING_FUNCTOR(erf);
REGISTER_UNARY_OP(erf, float, float);
REGISTER_UNARY_OP(erf, int, float);

struct both_functor {
  template <typename T>
  T operator()(T a, T b) {
    return a;
  }
};
REGISTER_BINARY_OP(both, half, half);
REGISTER_OPMATH_BINARY_OP(both, long, long);
REGISTER_BINARY_ALPHA_OP(both, float, float, float);
"""
    rel = f"{KERNELS}/Mine.metal"
    reading = read_kernel(text, rel, reader(real_torch_files), every_kernel=True)
    assert reading.errors == ()
    assert reading.functors["erf"] == Functor("erf", 6, "DEFINE_UNARY_FLOATING_FUNCTOR")
    got = [(r.functor, r.input, r.output, r.alpha, r.host_name, r.line) for r in reading.registrations]
    assert got == [
        ("erf", "float", "float", "", "erf_dense_float_float", 7),
        ("erf", "int", "float", "", "erf_dense_float_int", 8),
        ("both", "half", "half", "", "both_dense_half_half", 16),
        ("both", "long", "long", "", "both_dense_long_long", 17),
        ("both", "float", "float", "float", "both_dense_float_float_float", 18),
    ]
    # the other kernels each macro instantiates are there too, by their library names
    assert {"erf_strided_float_int", "erf_dense_castout_int", "both_strided_half_half"} <= set(reading.host_names)


def test_headers_read_once_per_process_while_their_texts_stay():
    import mpsgen.read.metalread as metalread

    headers = {"c10/metal/own.h": HEADER}
    metalread._HEADER_STATES.clear()
    first = read_kernel(KERNEL, f"{KERNELS}/Own.metal", headers.get)
    assert len(metalread._HEADER_STATES) == 1
    again = read_kernel(KERNEL, f"{KERNELS}/Own.metal", headers.get)  # from the kept header state
    assert again == first
    # a header edited (in the Workspace) is read again: its new macro counts
    headers["c10/metal/own.h"] = HEADER.replace("#define DECLARE_FUNCTOR(NAME)", "#define DECLARE_FUNCTOR(NAME_)")
    headers["c10/metal/own.h"] = headers["c10/metal/own.h"].replace("struct NAME##_functor {     \\\n",
                                                                    "struct NAME_##_functor {    \\\n")
    edited = read_kernel(KERNEL, f"{KERNELS}/Own.metal", headers.get)
    assert edited.functors == first.functors  # same expansion through the renamed parameter
    headers["c10/metal/own.h"] = HEADER.replace("DECLARE_FUNCTOR", "DECLARED_FUNCTOR")
    assert "first" not in read_kernel(KERNEL, f"{KERNELS}/Own.metal", headers.get).functors
