"""Inputs for `try`: edge values and seeded random samples per Metal type, exactly representable in
that type, combined so that every operand meets every other (broadcast)."""

from __future__ import annotations

import itertools
import math
import random
import struct
import zlib
from dataclasses import dataclass

INF = math.inf
NAN = math.nan

# Metal type -> (kind, bits): kind is "float", "int", "bool" or "complex".
KINDS = {
    "float": ("float", 32), "half": ("float", 16), "bfloat": ("float", 16),
    "long": ("int", 64), "int": ("int", 32), "short": ("int", 16), "char": ("int", 8), "uchar": ("uint", 8),
    "bool": ("bool", 1), "float2": ("complex", 32), "half2": ("complex", 16),
}
# The component type of complex types.
COMPONENT = {"float2": "float", "half2": "half"}


def kind(metal_type: str) -> str:
    return KINDS[metal_type][0]


def int_range(metal_type: str) -> tuple[int, int]:
    k, bits = KINDS[metal_type]
    if k == "bool":
        return 0, 1
    if k == "uint":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


# ---- rounding to a type ----------------------------------------------------------------------------


def to_float32(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def to_half(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def to_bfloat(x: float) -> float:
    """Round to bfloat16 (8 significant bits, float's exponent range), to nearest, ties to even."""
    f = to_float32(x)
    if math.isnan(f):
        return f
    u = struct.unpack("<I", struct.pack("<f", f))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", u))[0]


ROUND = {"float": to_float32, "half": to_half, "bfloat": to_bfloat}


def float32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_float32_bits(u: int) -> float:
    return struct.unpack("<f", struct.pack("<I", u))[0]


# ---- edge values -----------------------------------------------------------------------------------

# (smallest subnormal, a larger subnormal, smallest normal, largest finite, a large magnitude)
_EXTREMES = {
    "float": (1.401298464324817e-45, 1.0e-40, 1.1754943508222875e-38, 3.4028234663852886e38, 1.0e30),
    "half": (5.960464477539063e-08, 3.0e-6, 6.103515625e-05, 65504.0, 3.0e4),
    "bfloat": (9.183549615799121e-41, 1.0e-39, 1.1754943508222875e-38, 3.3895313892515355e38, 1.0e30),
}
# the largest finite value of each float type
LARGEST = {t: extremes[3] for t, extremes in _EXTREMES.items()}
_COMMON_FLOATS = (0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 0.5, -2.5, 3.0, 1.0e-3, -100.0)


def float_edges(metal_type: str) -> list[float]:
    tiny, sub, normal, biggest, large = _EXTREMES[metal_type]
    values = list(_COMMON_FLOATS) + [tiny, -sub, normal, biggest, -biggest, large]
    return _unique([ROUND[metal_type](v) for v in values])


def int_edges(metal_type: str) -> list[int]:
    lo, hi = int_range(metal_type)
    values = [0, 1, -1, 2, -2, 7, -7, 100, lo, hi]
    return _unique([v for v in values if lo <= v <= hi])


def complex_edges(metal_type: str) -> list[complex]:
    parts = [0.0, 1.0, -1.0, 0.5, INF, NAN]
    component = ROUND[COMPONENT[metal_type]]
    return [complex(component(re), component(im)) for re in parts for im in parts]


def edges(metal_type: str) -> list:
    k = kind(metal_type)
    if k == "float":
        return float_edges(metal_type)
    if k == "complex":
        return complex_edges(metal_type)
    return int_edges(metal_type)


def random_values(metal_type: str, count: int, rng: random.Random) -> list:
    k = kind(metal_type)
    if k in ("int", "uint", "bool"):
        lo, hi = int_range(metal_type)
        return [rng.randint(max(lo, -1000), min(hi, 1000)) for _ in range(count)]
    component = COMPONENT.get(metal_type, metal_type)
    biggest = math.log10(_EXTREMES[component][3])

    def one() -> float:
        # Half the samples near the unit range, half spread over the type's magnitudes.
        if rng.random() < 0.5:
            return ROUND[component](rng.uniform(-10.0, 10.0))
        return ROUND[component](rng.choice((-1.0, 1.0)) * 10.0 ** rng.uniform(-6.0, min(biggest, 30.0)))

    if k == "complex":
        return [complex(one(), one()) for _ in range(count)]
    return [one() for _ in range(count)]


def _unique(values: list) -> list:
    seen, out = set(), []
    for v in values:
        key = repr(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


@dataclass(frozen=True)
class Inputs:
    """The operands of one Metal input type: `columns[k][i]` is operand k of case i."""

    metal_type: str
    columns: tuple[tuple, ...]
    note: str = ""

    @property
    def count(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def case(self, i: int) -> tuple:
        return tuple(column[i] for column in self.columns)


# Ternary ops take every combination of a smaller edge set (8^3 cases rather than 18^3).
_TERNARY_EDGES = 8


# The other operands' values beside a branch value (`special`) in one operand.
COMPANIONS = (1.0, -2.5, 0.5)


def make_inputs(metal_type: str, arity: int, seed: int, samples: int, special: tuple = ()) -> Inputs:
    """Every combination of the type's edge values over the operands (the broadcast of one edge
    vector against the other), then `samples` seeded random cases, then each of `special` (the values
    where the functor's branches switch: `branchvalues`) in each operand, the others at each of
    COMPANIONS (and at the same value)."""
    rng = random.Random(seed * 1_000_003 + zlib.crc32(metal_type.encode()))
    base = edges(metal_type)
    if arity == 3:
        base = base[:_TERNARY_EDGES]
    cases = list(itertools.product(base, repeat=arity))
    columns = [random_values(metal_type, samples, rng) for _ in range(arity)]
    cases += list(zip(*columns))
    if special:
        cases += special_cases(metal_type, arity, special)
    return Inputs(metal_type, tuple(tuple(column) for column in zip(*cases)))


def special_cases(metal_type: str, arity: int, special) -> list[tuple]:
    if arity == 1:
        return [(v,) for v in special]
    if kind(metal_type) == "float":
        companions = [ROUND[metal_type](c) for c in COMPANIONS]
    else:
        lo, hi = int_range(metal_type)
        companions = [int(c) for c in COMPANIONS if lo <= int(c) <= hi]
    out = []
    for v in special:
        out.append((v,) * arity)
        for k in range(arity):
            for c in companions:
                out.append(tuple(v if j == k else c for j in range(arity)))
    return _unique_cases(out)


def _unique_cases(cases: list[tuple]) -> list[tuple]:
    seen, out = set(), []
    for c in cases:
        key = repr(c)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def traps(inputs: Inputs, i: int) -> bool:
    """Whether integer division in case i would trap on a CPU: a later operand is 0, or -1 with the
    type's minimum first. (The host driver does not run such cases when the output is an integer.)"""
    case = inputs.case(i)
    if len(case) < 2 or kind(inputs.metal_type) not in ("int", "uint", "bool"):
        return False
    lo, _ = int_range(inputs.metal_type)
    return any(v == 0 for v in case[1:]) or (case[0] == lo and -1 in case[1:])


def keep(inputs: Inputs, indices: list[int], why: str) -> Inputs:
    """`inputs` restricted to the cases at `indices`, noting why the others were left out."""
    if len(indices) == inputs.count:
        return inputs
    columns = tuple(tuple(column[i] for i in indices) for column in inputs.columns)
    note = f"{inputs.count - len(indices)} cases left out: {why}"
    return Inputs(inputs.metal_type, columns, "; ".join(n for n in (inputs.note, note) if n))


# The range test_output_match's sample inputs draw from where the OpInfo sets none: make_tensor's
# default for floating and integer tensors (sample_inputs_elementwise_binary passes no low/high).
SAMPLED_RANGE = (-9.0, 9.0)


def within_sampled_range(inputs: Inputs, bounded: tuple[int, ...], low: float = SAMPLED_RANGE[0],
                         high: float = SAMPLED_RANGE[1]) -> Inputs:
    """For a functor looping as many times as the operands `bounded` hold (laguerre's n), `inputs`
    restricted to the cases upstream's test samples: every operand finite and within [low, high]. The
    loop would run as long as try's extremes (3.4e38; n = 1e15 where the recurrence stays finite), and
    CPU's own kernel is undefined on others (laguerre at x = NaN returns its uninitialised result)."""
    if not bounded or kind(inputs.metal_type) == "complex":
        return inputs
    kept = [i for i in range(inputs.count) if all(math.isfinite(v) and low <= v <= high for v in inputs.case(i))]
    names = ", ".join(f"operand {k + 1}" for k in bounded)
    return keep(inputs, kept, f"beyond [{low:g}, {high:g}], the range upstream's test samples (make_tensor's "
                f"default): the functor loops as many times as {names} holds")
