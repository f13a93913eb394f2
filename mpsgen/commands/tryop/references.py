"""Python references for the catalog's functor bodies (double precision, CPU semantics): what
`mpsgen try` compares with when torch is not importable, and what the catalog tests check.

Each takes one element per operand (float, int or complex) and returns the expected value;
`ref_nextafter` also takes the Metal type's name (it steps that type's own grid)."""

from __future__ import annotations

import cmath
import math
import struct
from statistics import NormalDist

NAN = math.nan
INF = math.inf


def _log(x: float) -> float:
    if math.isnan(x) or x < 0:
        return NAN
    return -INF if x == 0 else math.log(x)


def ref_xlogy(x, y):
    if math.isnan(y):
        return NAN
    if x == 0:
        return 0.0
    return x * _log(y)


def ref_logaddexp(a, b):
    if isinstance(a, complex):
        hi, lo = (a, b) if a.real >= b.real else (b, a)
        return hi + cmath.log(1 + cmath.exp(lo - hi))
    if math.isnan(a) or math.isnan(b):
        return NAN
    if math.isinf(a) and a == b:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def ref_hypot(a, b):
    return math.hypot(a, b)


def ref_asinh(x):
    return cmath.asinh(x) if isinstance(x, complex) else math.asinh(x)


def ref_acosh(x):
    if isinstance(x, complex):
        return cmath.acosh(x)
    return NAN if math.isnan(x) or x < 1 else math.acosh(x)


def ref_atanh(x):
    if isinstance(x, complex):
        return cmath.atanh(x)
    if math.isnan(x) or abs(x) > 1:
        return NAN
    if abs(x) == 1:
        return math.copysign(INF, x)
    return math.atanh(x)


def ref_frac(x):
    if math.isnan(x) or math.isinf(x):
        return NAN
    return x - math.copysign(float(math.trunc(x)), x)


def ref_sign(x):
    if isinstance(x, int):
        return (x > 0) - (x < 0)
    return float((x > 0) - (x < 0))


def ref_logical_not(x):
    return x == 0


def ref_sgn(x):
    if isinstance(x, complex):
        return 0j if x == 0 else x / abs(x)
    return ref_sign(x)


def ref_heaviside(x, v):
    if x == 0:
        return v
    return type(x)(x > 0)


def ref_fmod(a, b):
    if isinstance(a, int):
        # C's %: truncated division, the sign of a (exact for 64-bit values, unlike math.fmod).
        remainder = abs(a) % abs(b)
        return remainder if a >= 0 else -remainder
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return NAN
    return math.fmod(a, b)


def ref_ndtri(p):
    if math.isnan(p) or p < 0 or p > 1:
        return NAN
    if p == 0:
        return -INF
    if p == 1:
        return INF
    return NormalDist().inv_cdf(p)


def ref_sigmoid_backward(g, y):
    if isinstance(g, complex):
        return g * ((1 - y) * y).conjugate()
    return g * (1 - y) * y


def ref_tanh_backward(g, y):
    if isinstance(g, complex):
        return g * (1 - y * y).conjugate()
    return g * (1 - y * y)


def _softplus(x):
    return x if x > 700 else math.log1p(math.exp(x))


def ref_mish(x):
    # -inf * tanh(softplus(-inf)) is -inf * 0: NaN, as the CPU computes it.
    if math.isnan(x) or x == -INF:
        return NAN
    return x * math.tanh(_softplus(x))


def ref_mish_backward(g, x):
    t = math.tanh(_softplus(x))
    s = 1 / (1 + math.exp(-x))
    return g * (t + x * s * (1 - t * t))


def ref_hardswish(x):
    if math.isnan(x):
        return NAN
    return x * min(max(x + 3, 0), 6) / 6


_BITS = {"float": ("<f", "<I", 32), "half": ("<e", "<H", 16)}


def _to_bits(x: float, kind: str) -> int:
    if kind == "bfloat":
        return struct.unpack("<I", struct.pack("<f", x))[0] >> 16
    fmt, ifmt, _ = _BITS[kind]
    return struct.unpack(ifmt, struct.pack(fmt, x))[0]


def _from_bits(u: int, kind: str) -> float:
    if kind == "bfloat":
        return struct.unpack("<f", struct.pack("<I", u << 16))[0]
    fmt, ifmt, _ = _BITS[kind]
    return struct.unpack(fmt, struct.pack(ifmt, u))[0]


def ref_nextafter(a, b, kind):
    """One step of `kind`'s own grid from a towards b (C's nextafter, in that format)."""
    if math.isnan(a) or math.isnan(b):
        return NAN
    if a == b:
        return b
    width = 16 if kind in ("half", "bfloat") else 32
    if a == 0:
        return _from_bits((_to_bits(b, kind) & (1 << (width - 1))) | 1, kind)
    bits = _to_bits(a, kind)
    away = (a < b) == (a > 0)
    return _from_bits(bits + 1 if away else bits - 1, kind)


# op -> reference for every catalog body. `KIND_ARGUMENT` lists those that also take the type name.
def ref_pow(a, b):
    """pow as CPU computes it: complex exp(b log a) (a zero base 0 where Re(b) > 0, else NaN);
    integers exactly, a negative exponent 0 but for bases 1 and -1 (Pow.h's powi); floats as C's
    pow (a negative base with a non-integer exponent NaN, a zero base with a negative one inf)."""
    if isinstance(a, complex) or isinstance(b, complex):
        a, b = complex(a), complex(b)
        if a == 0:
            return 0j if b.real > 0 else complex(NAN, NAN)
        return cmath.exp(b * cmath.log(a))
    if isinstance(a, int) and isinstance(b, int):
        if b < 0:
            return 1 if a == 1 else ((-1 if b % 2 else 1) if a == -1 else 0)
        return int(a) ** int(b)
    odd = math.isfinite(b) and float(b).is_integer() and int(b) % 2 == 1
    try:
        return math.pow(a, b)
    except OverflowError:
        return -INF if a < 0 and odd else INF
    except ValueError:
        if a == 0:
            return math.copysign(INF, a) if odd else INF
        return NAN


REFERENCES = {
    "atan2": math.atan2,
    "hypot": ref_hypot,
    "copysign": math.copysign,
    "xlogy": ref_xlogy,
    "logaddexp": ref_logaddexp,
    "nextafter": ref_nextafter,
    "fmod": ref_fmod,
    "heaviside": ref_heaviside,
    "asinh": ref_asinh,
    "acosh": ref_acosh,
    "atanh": ref_atanh,
    "logical_not": ref_logical_not,
    "frac": ref_frac,
    "sgn": ref_sgn,
    "sign": ref_sign,
    "special_ndtri": ref_ndtri,
    "sigmoid_backward": ref_sigmoid_backward,
    "tanh_backward": ref_tanh_backward,
    "mish": ref_mish,
    "mish_backward": ref_mish_backward,
    "hardswish": ref_hardswish,
    "pow": ref_pow,
}
KIND_ARGUMENT = frozenset({"nextafter"})


def _fdiv(a: float, b: float) -> float:
    """a / b in IEEE arithmetic (Python raises where the kernel gives inf or NaN)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)


def _cdiv(x: complex, y: complex) -> complex:
    """x / y as CPU divides c10::complex (numpy's: y scaled by its larger part; y == 0 gives
    x.real / |0|, x.imag / |0|)."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    if abs(c) >= abs(d):
        if c == 0 and d == 0:
            return complex(_fdiv(a, abs(c)), _fdiv(b, abs(d)))
        r = d / c
        s = 1.0 / (c + d * r)
        return complex((a + b * r) * s, (b - a * r) * s)
    r = c / d
    s = 1.0 / (d + c * r)
    return complex((a * r + b) * s, (b * r - a) * s)


def ref_addcmul(a, b, c, value):
    """a + value * b * c, the product in CPU's order."""
    return a + value * b * c


def ref_addcdiv(a, b, c, value):
    """a + value * b / c in CPU's order; complex by CPU's complex division."""
    scaled = value * b
    if isinstance(scaled, complex) or isinstance(c, complex):
        return a + _cdiv(complex(scaled), complex(c))
    return a + _fdiv(float(scaled), float(c))


# The catalog's bodies taking the stub's Scalar as their last operand (`alpha = true`): the catalog
# tests check them; `mpsgen try` compares a kernel taking scalars with torch's CPU op only (its
# catalog reference takes none), so they are kept apart from REFERENCES.
SCALAR_REFERENCES = {
    "addcmul": ref_addcmul,
    "addcdiv": ref_addcdiv,
}
