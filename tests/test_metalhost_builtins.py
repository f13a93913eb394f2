"""The Metal prelude's builtins against the Metal specification, where the host could differ (issue
47): a finding of `mpsgen audit` must come from the kernel, not from mpsgen's emulation of Metal.

One host program (the prelude, g++ with try's own build flags) prints each builtin's value on the
inputs where Metal's rules are specific: NaN/inf/signed-zero rules of min/max/fmin/fmax/clamp, sign,
fract; powr's domain; sinpi/cospi/tanpi exact at integers and half-integers; integer overflow
(wraps in Metal); float -> half and float -> bfloat conversion (round to nearest even, overflow to
inf, NaN kept), bfloat's implicit conversion from float (`return NAN;` in a function returning a
template's T = bfloat, c10/metal/igamma.h's construct); metal:: equal to precise:: (PyTorch builds
its kernels with -fno-fast-math); vector (float2) arithmetic element-wise. Expected values are the
specification's, compared bit for bit (the sign of a zero, a NaN)."""

from __future__ import annotations

import math
import struct
import subprocess
from pathlib import Path

import pytest

from mpsgen.read.metalhost.check import compile_metal_file
from mpsgen.read.metalhost.compiler import find_compiler
from support import needs

COMPILER = find_compiler()[0]
needs_compiler = needs(None if COMPILER is not None else "no C++ compiler (g++/clang++) on PATH")

INF, NAN = math.inf, math.nan
FLT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
ALMOST_ONE = struct.unpack("<f", struct.pack("<I", 0x3F7FFFFF))[0]

# (name, C++ expression evaluated as float, expected value per the Metal specification)
FLOAT_CASES = [
    # fmax/fmin/max/min: "If one argument is a NaN, returns the other argument; both NaN: NaN"
    ("fmax_nan_first", "metal::fmax(NAN, 1.0f)", 1.0),
    ("fmax_nan_second", "metal::fmax(1.0f, NAN)", 1.0),
    ("fmax_both_nan", "metal::fmax(NAN, NAN)", NAN),
    ("fmin_nan_first", "metal::fmin(NAN, -1.0f)", -1.0),
    ("fmin_nan_second", "metal::fmin(-1.0f, NAN)", -1.0),
    ("max_nan", "metal::max(NAN, 2.0f)", 2.0),
    ("min_nan", "metal::min(2.0f, NAN)", 2.0),
    ("max_inf", "metal::max(-INFINITY, -FLT_MAX)", -FLT_MAX),
    # clamp(x, lo, hi) = fmin(fmax(x, lo), hi)
    ("clamp_nan", "metal::clamp(NAN, 0.0f, 1.0f)", 0.0),
    ("clamp_high", "metal::clamp(INFINITY, 0.0f, 1.0f)", 1.0),
    ("clamp_low", "metal::clamp(-2.0f, -1.0f, 1.0f)", -1.0),
    ("saturate_nan", "metal::saturate(NAN)", 0.0),
    # sign: 1 / -1, a zero keeps its sign, NaN gives 0
    ("sign_neg_zero", "metal::sign(-0.0f)", -0.0),
    ("sign_pos_zero", "metal::sign(0.0f)", 0.0),
    ("sign_nan", "metal::sign(NAN)", 0.0),
    ("sign_neg", "metal::sign(-3.5f)", -1.0),
    # fract: fmin(x - floor(x), 0x1.fffffep-1f); NaN stays NaN
    ("fract_neg", "metal::fract(-0.25f)", 0.75),
    ("fract_tiny_neg", "metal::fract(-1e-30f)", ALMOST_ONE),
    ("fract_nan", "metal::fract(NAN)", NAN),
    # powr: x >= 0 only (a negative x gives NaN, where pow gives a value for an integer y)
    ("powr_negative", "metal::powr(-2.0f, 2.0f)", NAN),
    ("pow_negative_integer_power", "metal::pow(-2.0f, 2.0f)", 4.0),
    ("powr_positive", "metal::powr(2.0f, 10.0f)", 1024.0),
    # sinpi/cospi/tanpi: exact at integers and half-integers
    ("sinpi_one", "metal::sinpi(1.0f)", 0.0),
    ("sinpi_minus_one", "metal::sinpi(-1.0f)", -0.0),
    ("sinpi_large_integer", "metal::sinpi(1048577.0f)", 0.0),
    ("sinpi_half", "metal::sinpi(0.5f)", 1.0),
    ("sinpi_three_halves", "metal::sinpi(1.5f)", -1.0),
    ("sinpi_minus_half", "metal::sinpi(-0.5f)", -1.0),
    ("sinpi_neg_zero", "metal::sinpi(-0.0f)", -0.0),
    ("cospi_half", "metal::cospi(0.5f)", 0.0),
    ("cospi_three_halves", "metal::cospi(-1.5f)", 0.0),
    ("cospi_one", "metal::cospi(1.0f)", -1.0),
    ("tanpi_quarter", "metal::tanpi(0.25f)", 1.0),
    ("sinpi_inf", "metal::sinpi(INFINITY)", NAN),
    # rsqrt, log, exp, sqrt at their special values
    ("rsqrt_zero", "metal::rsqrt(0.0f)", INF),
    ("rsqrt_neg_zero", "metal::rsqrt(-0.0f)", -INF),
    ("sqrt_neg_zero", "metal::sqrt(-0.0f)", -0.0),
    ("log_zero", "metal::log(0.0f)", -INF),
    ("log_negative", "metal::log(-1.0f)", NAN),
    ("exp_overflow", "metal::exp(89.0f)", INF),
    ("tanh_inf", "metal::tanh(-INFINITY)", -1.0),
    ("atan2_neg_zero_neg_zero", "metal::atan2(-0.0f, -0.0f)", -struct.unpack("<f", struct.pack("<f", math.pi))[0]),
    ("atan2_neg_zero_pos_zero", "metal::atan2(-0.0f, 0.0f)", -0.0),
    ("copysign_neg_zero", "metal::copysign(1.0f, -0.0f)", -1.0),
    ("fmod_sign_of_x", "metal::fmod(-5.0f, 3.0f)", -2.0),
    ("fmod_by_zero", "metal::fmod(5.0f, 0.0f)", NAN),
    ("ceil_neg_half", "metal::ceil(-0.5f)", -0.0),
    ("round_half_away", "metal::round(-2.5f)", -3.0),
    ("rint_half_even", "metal::rint(2.5f)", 2.0),
    # float -> half: round to nearest even, overflow to inf, NaN kept, subnormals kept
    ("half_largest", "float(half(65519.0f))", 65504.0),
    ("half_overflow", "float(half(65520.0f))", INF),
    ("half_tie_even", "float(half(1.0f + 0x1p-11f))", 1.0),
    ("half_tie_odd", "float(half(1.0f + 0x1p-10f + 0x1p-11f))", 1.0 + 2 ** -9),
    ("half_subnormal", "float(half(0x1p-24f))", 2.0 ** -24),
    ("half_nan", "float(half(NAN))", NAN),
    ("half_neg_zero", "float(half(-0.0f))", -0.0),
    # float -> bfloat: round to nearest even, overflow to inf, NaN kept
    ("bfloat_tie_even", "float(bfloat(1.0f + 0x1p-8f))", 1.0),
    ("bfloat_tie_odd", "float(bfloat(1.0f + 0x1p-7f + 0x1p-8f))", 1.0 + 2 ** -6),
    ("bfloat_flt_max", "float(bfloat(FLT_MAX))", INF),
    ("bfloat_nan", "float(bfloat(NAN))", NAN),
    ("bfloat_neg_zero", "float(bfloat(-0.0f))", -0.0),
    ("bfloat_largest", "float(bfloat(0x1.fep+127f))", float.fromhex("0x1.fep+127")),
    # bfloat from float implicitly, as Metal converts (c10/metal/igamma.h: `return NAN;`, `return 0.0;`)
    ("bfloat_implicit_nan", "float(implicit_bfloat(0))", NAN),
    ("bfloat_implicit_zero", "float(implicit_bfloat(1))", 0.0),
    ("bfloat_implicit_float_expression", "float(implicit_bfloat(2))", 0.333984375),
    # half arithmetic rounds each operation to half (no excess precision)
    ("half_no_excess_precision", "float(half_square_minus())", 0.0),
    # metal:: is precise:: (PyTorch compiles its kernels with -fno-fast-math)
    ("metal_exp_is_precise", "metal::exp(0.7f) - metal::precise::exp(0.7f)", 0.0),
    ("metal_pow_is_precise", "metal::pow(1.5f, 7.25f) - metal::precise::pow(1.5f, 7.25f)", 0.0),
    # float2 arithmetic is element-wise (a complex product is c10/metal's own function)
    ("float2_product_x", "(float2(1.0f, 2.0f) * float2(3.0f, 4.0f)).x", 3.0),
    ("float2_product_y", "(float2(1.0f, 2.0f) * float2(3.0f, 4.0f)).y", 8.0),
]

# (name, C++ expression evaluated as long, expected value): Metal's integers wrap on overflow
INT_CASES = [
    ("int_add_wraps", "(long)(int_max() + 1)", -2 ** 31),
    ("int_mul_wraps", "(long)(int_max() * 2)", -2),
    ("long_neg_wraps", "-long_min()", -2 ** 63),
    ("char_narrowing_wraps", "(long)(char)(char_max() + 1)", -128),
    ("uchar_wraps", "(long)(uchar)(uchar_max() + 1)", 0),
    ("int_abs_of_min", "(long)metal::abs(-int_max() - 1)", -2 ** 31),
    ("int_max_of", "(long)metal::max(-3, 2)", 2),
    ("int_clamp", "(long)metal::clamp(7, 0, 5)", 5),
    ("mulhi", "(long)metal::mulhi(0x40000000u, 8u)", 2),
]

PROGRAM_HEAD = """\
#include <cstdio>
#include <metal_stdlib>
using namespace metal;
// volatile sources keep the compiler from folding the arithmetic at compile time
static volatile int v_int_max = 2147483647;
static volatile long v_long_min = (-9223372036854775807L - 1);
static volatile char v_char_max = 127;
static volatile uchar v_uchar_max = 255;
int int_max() { return v_int_max; }
long long_min() { return v_long_min; }
char char_max() { return v_char_max; }
uchar uchar_max() { return v_uchar_max; }
template <typename T> T implicit_from_float(int which) {
  if (which == 0) return NAN;
  if (which == 1) return 0.0;
  float third = 1.0f / 3.0f;
  return third;
}
bfloat implicit_bfloat(int which) { return implicit_from_float<bfloat>(which); }
half half_square_minus() {
  volatile half x = half(1.0f + 0x1p-10f);
  volatile half c = half(1.0f + 0x1p-9f);
  return half(x * x) - c;
}
int main() {
"""


def _bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, str]:
    if COMPILER is None:
        pytest.skip("no C++ compiler (g++/clang++) on PATH")
    work = tmp_path_factory.mktemp("builtins")
    lines = [PROGRAM_HEAD]
    for name, expr, _ in FLOAT_CASES:
        lines.append(f'  std::printf("{name} %a\\n", static_cast<float>({expr}));')
    for name, expr, _ in INT_CASES:
        lines.append(f'  std::printf("{name} %ld\\n", static_cast<long>({expr}));')
    lines.append("  return 0;\n}\n")
    source = work / "builtins.cpp"
    source.write_text("\n".join(lines), encoding="utf-8")
    binary = work / "builtins"
    command = COMPILER.build_command(source, (), binary)
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=True)
    return dict(line.split(" ", 1) for line in ran.stdout.splitlines())


@needs_compiler
@pytest.mark.parametrize(("name", "expr", "expected"), FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_builtin_follows_the_metal_specification(printed, name, expr, expected):
    got = float.fromhex(printed[name])
    if math.isnan(expected):
        assert math.isnan(got), f"{expr} = {got!r}, Metal gives NaN"
    else:
        assert _bits(got) == _bits(float(expected)), f"{expr} = {got!r}, Metal gives {expected!r}"


@needs_compiler
@pytest.mark.parametrize(("name", "expr", "expected"), INT_CASES, ids=[c[0] for c in INT_CASES])
def test_integer_builtin_follows_the_metal_specification(printed, name, expr, expected):
    assert int(printed[name]) == expected, f"{expr}"


@needs_compiler
def test_build_flags_make_signed_overflow_wrap():
    assert "-fwrapv" in COMPILER.build_command(Path("x.cpp"), (), Path("x"))


# ---- bfloat's two Metal rules the host class cannot hold at once -----------------------------------

_CHOICE = """#include <metal_stdlib>
using namespace metal;
template <typename T> T phase(T x) { return T(isnan(x) ? x : x < 0 ? M_PI_F : 0.0); }
template bfloat phase(bfloat);
"""
_FROM_FLOAT = """#include <metal_stdlib>
using namespace metal;
template <typename T> T undefined_at(T x) { if (x < 0) { return NAN; } return 0.0; }
template bfloat undefined_at(bfloat);
"""


def _check(tmp_path: Path, text: str):
    rel = "aten/src/ATen/native/mps/kernels/Choice.metal"
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text, encoding="utf-8")
    return compile_metal_file(tmp_path, rel)


@needs_compiler
def test_a_file_choosing_between_bfloat_and_float_compiles_with_the_conversion_explicit(tmp_path):
    # 2.13's UnaryKernel.metal angle_functor: `isnan(x) ? x : x < 0 ? M_PI_F : 0.0` with x bfloat is float in Metal
    done = _check(tmp_path, _CHOICE)
    assert done.status == "passed", done.diagnostics
    assert "-DMPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT" in done.command


# the same choice through a typedef, as a derived body writes it (`using scalar_t = T;`): g++ names the
# operand `‘scalar_t’ {aka ‘bfloat’}` (logit's graph body on the miniature)
_CHOICE_TYPEDEF = """#include <metal_stdlib>
using namespace metal;
template <typename T> T clipped(T x, float lo) { using scalar_t = T; const scalar_t v = x; return T(v < lo ? lo : v); }
template bfloat clipped(bfloat, float);
"""


@needs_compiler
def test_a_choice_through_a_typedef_of_bfloat_compiles_with_the_conversion_explicit(tmp_path):
    done = _check(tmp_path, _CHOICE_TYPEDEF)
    assert done.status == "passed", done.diagnostics
    assert "-DMPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT" in done.command


def test_the_refusal_is_recognised_whatever_g_plus_plus_calls_the_bfloat_type():
    from mpsgen.read.metalhost.compiler import mixed_bfloat_choice

    typedef = "k.metal:7:9: error: operands to ‘?:’ have different types ‘scalar_t’ {aka ‘bfloat’} and ‘const float’"
    assert mixed_bfloat_choice(typedef)
    assert mixed_bfloat_choice("error: operands to ‘?:’ have different types ‘bfloat’ and ‘const float’")
    assert not mixed_bfloat_choice(typedef.replace("bfloat", "half"))
    assert not mixed_bfloat_choice("error: operands to ‘?:’ have different types ‘float’ and ‘int’")


@needs_compiler
def test_a_file_converting_float_to_bfloat_implicitly_compiles_as_it_is(tmp_path):
    done = _check(tmp_path, _FROM_FLOAT)
    assert done.status == "passed", done.diagnostics
    assert "-DMPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT" not in done.command


@needs_compiler
def test_a_file_needing_both_is_refused_with_the_choice_the_host_cannot_make(tmp_path):
    both = _FROM_FLOAT + _CHOICE.replace("#include <metal_stdlib>\nusing namespace metal;\n", "")
    done = _check(tmp_path, both)
    assert done.status == "failed"
    assert any("have different types" in message for _, message in done.diagnostics), done.diagnostics
