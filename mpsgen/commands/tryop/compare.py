"""Kernel outputs against the reference: per-dtype error statistics and the mismatching cases."""

from __future__ import annotations

import cmath
import math
from dataclasses import dataclass

from mpsgen.commands.tryop.lookup import METAL_TO_TORCH
from mpsgen.commands.tryop.values import COMPONENT, LARGEST, SAMPLED_RANGE, Inputs, kind

# (rtol, atol) by output type: torch.testing's defaults for float32/float16/bfloat16 (complex like
# its component type). Integer and bool outputs must match exactly.
TOLERANCES = {
    "float": (1.3e-6, 1e-5),
    "half": (1e-3, 1e-5),
    "bfloat": (1.6e-2, 1e-5),
    "float2": (1.3e-6, 1e-5),
    "half2": (1e-3, 1e-5),
}
MAX_EXAMPLES = 10
_KNOWN = frozenset(METAL_TO_TORCH)


@dataclass(frozen=True)
class Mismatch:
    inputs: tuple
    got: object
    want: object


@dataclass(frozen=True)
class DtypeResult:
    """One registered input type: how many cases ran, the largest errors, what did not match."""

    metal_type: str
    dtype: str  # torch name of the input dtype
    out_type: str  # Metal output type of the kernel
    cases: int
    max_abs: float
    max_rel: float
    mismatches: int
    examples: tuple[Mismatch, ...]
    tolerance: tuple[float, float] | None  # (rtol, atol); None: exact
    status: str  # passed / failed / skipped
    note: str = ""
    scalars: str = ""  # the scalar set it ran with (alpha and params kernels): "beta=2, threshold=20"
    cpu_overflows: int = 0  # cases matched by the rule for CPU overflowing in an intermediate (`compare`)
    # cases matched by the rule for CPU rounding an intermediate (`compare`): the kernel's value nearer
    # the op computed in float64 than CPU's, each (inputs, kernel's value, CPU's, float64's)
    nearer_float64: tuple[tuple[tuple, object, object, object], ...] = ()
    # cases matched by the rule for an operand at the top of the type's range (`compare`): the kernel
    # overflows an intermediate where CPU, fusing a multiply-add, gives the float64 value; each
    # (inputs, kernel's value, CPU's)
    edge_overflows: tuple[tuple[tuple, object, object], ...] = ()
    # cases matched by the rule for complex values upstream's test never feeds (`compare`): an operand
    # with an inf or NaN part, or a part at least the square root of the type's largest value where the
    # kernel's value is not finite; each (inputs, kernel's value, CPU's)
    beyond_samples: tuple[tuple[tuple, object, object], ...] = ()


def _close(got, want, rtol: float, atol: float) -> bool:
    if isinstance(want, complex) or isinstance(got, complex):
        got, want = complex(got), complex(want)
        # A NaN in either part makes the whole value NaN (CPU kernels differ, even between their
        # vectorised and scalar loops, on which part holds it).
        if cmath.isnan(want) or cmath.isnan(got):
            return cmath.isnan(want) and cmath.isnan(got)
        # as torch.isclose (what test_output_match's assertEqual calls) compares complex values: equal,
        # or the modulus of the difference within atol + rtol * |want| (an inf part equal only exactly)
        if got == want:
            return True
        try:
            error = abs(got - want)
        except OverflowError:
            return False
        return math.isfinite(error) and error <= atol + rtol * abs(want)
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= atol + rtol * abs(want)


def _errors(got, want) -> tuple[float, float] | None:
    """(abs, rel) error where both are finite, else None."""
    try:
        if isinstance(want, complex) or isinstance(got, complex):
            if not (cmath.isfinite(complex(got)) and cmath.isfinite(complex(want))):
                return None
        elif not (math.isfinite(got) and math.isfinite(want)):
            return None
        error = abs(got - want)
    except (TypeError, OverflowError):
        return None
    return error, (error / abs(want) if want else (0.0 if error == 0 else math.inf))


def _finite(value) -> bool:
    try:
        return cmath.isfinite(complex(value)) if isinstance(value, complex) else math.isfinite(value)
    except (TypeError, OverflowError):
        return False


def overflow_note(count: int) -> str:
    return (f"matches CPU except where CPU overflows in an intermediate: {count} case{'s' if count != 1 else ''} "
            "(the CPU op gives inf or NaN; computed in float64 from the same inputs and rounded, its value is "
            "finite and the kernel gives it)")


def nearer_note(cases: tuple) -> str:
    """The note naming the cases matched because the kernel is nearer the float64 value than CPU."""
    shown = "; ".join(f"{tuple(inputs)} gave {got}, CPU {want}, float64 {wide}" for inputs, got, want, wide in cases[:3])
    more = f"; {len(cases) - 3} more" if len(cases) > 3 else ""
    return (f"{len(cases)} case{'s' if len(cases) != 1 else ''} nearer the op computed in float64 than CPU "
            f"(CPU rounds an intermediate to the input type; the kernel computes at opmath): {shown}{more}")


# An operand at least this fraction of the type's largest finite value is at the top of its range: a
# product by one of try's scalars (up to 3) or a sum of two such operands overflows there.
EDGE_FRACTION = 0.25


def _count(cases: tuple) -> str:
    return f"{len(cases)} case{'s' if len(cases) != 1 else ''}"


def _shown(cases: tuple) -> str:
    """The first three cases with both values, and how many more."""
    shown = "; ".join(f"{tuple(inputs)} gave {got}, CPU {want}" for inputs, got, want in cases[:3])
    return shown + (f"; {len(cases) - 3} more" if len(cases) > 3 else "")


def _at_top(cases: tuple) -> str:
    return (f"{_count(cases)} with an operand at the top of the type's range, beyond what upstream's test samples "
            f"([{SAMPLED_RANGE[0]:g}, {SAMPLED_RANGE[1]:g}])")


def edge_note(cases: tuple) -> str:
    return (f"{_at_top(cases)}, where the kernel overflows an intermediate and CPU (a fused multiply-add, one "
            f"rounding) gives the op's value: {_shown(cases)}")


def beyond_samples_note(cases: tuple) -> str:
    """All the cases try's rules for what upstream's test never samples matched (`DtypeResult.beyond_samples`)."""
    return (f"{_count(cases)} beyond what upstream's test samples, where the kernel's value differs from CPU's and "
            "neither is judged (an infinite operand where both values are not finite, both overflowing at the top "
            f"of the range, a complex inf or NaN part, an operand at the OpInfo's domain end: docs/try.md): {_shown(cases)}")


def edge_both_note(cases: tuple) -> str:
    return (f"{_at_top(cases)}, where the kernel and CPU both overflow an intermediate, to different values that "
            f"are not finite: {_shown(cases)}")


def beyond_note(cases: tuple) -> str:
    return (f"beyond what upstream's test samples: {_count(cases)} with an operand whose real or imaginary part is inf "
            "or NaN, or at least the square root of the type's largest value where the kernel's value is not finite "
            f"(the OpInfo's samples draw finite parts with make_tensor and add none such): {_shown(cases)}")


def domain_edge_note(cases: tuple) -> str:
    return (f"beyond what upstream's test samples: {_count(cases)} within the OpInfo's domain eps (1e-5) of a domain "
            "end, which its samples never come nearer than, where the kernel's value is the op's value at a real "
            f"input that rounds to the operand: {_shown(cases)}")


def infinite_note(cases: tuple) -> str:
    return (f"beyond what upstream's test samples: {_count(cases)} with an infinite operand and none NaN, where the "
            "kernel and CPU both give a value that is not finite, but not the same one (the OpInfo's samples draw "
            f"finite values with make_tensor and add none such): {_shown(cases)}")


def _infinite_not_nan(case: tuple) -> bool:
    """An operand is inf and none is NaN."""
    floats = [v for v in case if isinstance(v, float)]
    return any(math.isinf(v) for v in floats) and not any(math.isnan(v) for v in floats)


def _within_span(got, span) -> bool:
    """`got` (finite) lies between the two values of `span` (float64 values of the op halfway to the
    operand's neighbours; an inf end bounds nothing on its side, a NaN end refuses)."""
    if not span or len(span) != 2 or any(isinstance(v, float) and math.isnan(v) for v in span):
        return False
    lo, hi = min(span), max(span)
    return lo <= got <= hi


def _beyond_complex(inputs: Inputs, i: int, got) -> bool:
    """Case i of complex operands is one upstream's test never feeds, and the kernel's value there is
    not judged: an operand has an inf or NaN part (C's complex special-value rules, which CPU follows,
    against a body's exp(w * log(z))), or has a part at least the square root of the component type's
    largest value (a product of two parts, |z|^2, overflows there) and the kernel's value is not finite.
    A finite wrong value there, and every value on operands of smaller parts, is still judged."""
    parts = [p for v in inputs.case(i) for p in (complex(v).real, complex(v).imag)]
    if not all(math.isfinite(p) for p in parts):
        return True
    largest = LARGEST.get(COMPONENT.get(inputs.metal_type, ""))
    return largest is not None and not _finite(got) and any(abs(p) >= math.sqrt(largest) for p in parts)


def _at_edge(inputs: Inputs, i: int) -> bool:
    largest = LARGEST.get(inputs.metal_type)
    return largest is not None and any(
        isinstance(v, float) and math.isfinite(v) and abs(v) >= EDGE_FRACTION * largest for v in inputs.case(i))


def compare(inputs: Inputs, got: tuple, want: tuple, out_type: str, note: str = "", alone=None,
            override: tuple[float, float] | None = None, wide=None, examples: int = MAX_EXAMPLES,
            finite_samples: bool = False, edge_noted: bool = True, unsampled=None) -> DtypeResult:
    """Kernel outputs `got` against reference values `want` (None: no reference for that case).
    `alone(i)`, when given, is the reference for case i from the CPU's scalar loop (a value, or a
    tuple of them: computed by itself, and within the whole tensor laid out with a stride): a kernel
    value that matches one counts as a match (CPU kernels' vectorised and scalar loops can differ at
    special values, and both are the CPU's answer); the note says how many.
    `wide(i)`, when given, is the reference for case i computed in float64 and rounded to the output
    type. Where the reference is inf or NaN, the kernel's value is finite and `wide(i)` is finite
    and matches it within the tolerance, CPU overflowed in an intermediate (a * z / (z + 1) with a
    near the type's largest value) where the op's value does not: a match, counted in the note. A
    kernel value that is wrong, or finite where the op's value itself overflows, is still a mismatch.
    Where both values are finite and the kernel's is within the tolerance of `wide(i)` and strictly
    nearer to it than the reference's, CPU rounded an intermediate to the input type (mse_loss in
    half: `a - b` rounded before squaring) where the kernel kept opmath precision, as upstream's MPS
    kernels do and `test_output_match` accepts: a match, each case named in the note. So is a kernel's
    inf or NaN that is the float64 value itself where CPU's value is another inf or NaN (CPU held a
    scalar in the input type: smooth_l1_loss's beta 1e6 is inf in half); never where CPU's is finite. A wrong constant or a flipped branch is far
    from the float64 value too: still a mismatch.
    `finite_samples`: every value upstream's test feeds the op has finite parts (`samples_finite_parts`).
    A complex case it never feeds (`_beyond_complex`) then matches, each named in the note; so does a
    real case with an infinite operand (and none NaN) where both values are not finite but differ (inf
    against NaN: the two formulas resolve inf - inf differently). A finite value on either side, or a
    NaN operand (C says when inf wins over it: hypot(inf, nan) is inf), is still judged.
    `edge_noted`: an overflow with an operand at the top of the type's range is noted (False: audit,
    which reports what upstream's test never samples too).
    `unsampled(i)`, when given, is None for a case upstream's test can feed, and for one it never
    feeds (an operand within the OpInfo's domain eps of a domain end: `branchvalues.unsampled_domain`)
    the op's float64 values halfway to the type's next value below and above the operand. A finite
    kernel value there that lies between them (the op's value at a real input that rounds to the
    operand: erfinv's steep ends, where half an ulp of x moves the value by 2%) matches, each case
    named in the note; one outside them (a wrong constant, a flipped branch) is still a mismatch."""
    # Outputs of a type mpsgen does not know (a struct, a vector) are compared exactly.
    exact = kind(out_type) not in ("float", "complex") if out_type in _KNOWN else True
    tolerance = None if exact else (override or TOLERANCES[out_type])
    max_abs = max_rel = 0.0
    bad: list[Mismatch] = []
    count = scalar_loop = overflowed = 0
    nearer: list[tuple] = []
    edge: list[tuple] = []
    beyond: list[tuple] = []
    domain_edge: list[tuple] = []
    infinite: list[tuple] = []
    edge_both: list[tuple] = []
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue  # the reference has no value here (its note says why)
        count += 1
        if exact:
            ok = g == w or (isinstance(w, float) and math.isnan(w) and isinstance(g, float) and math.isnan(g))
        else:
            ok = _close(g, w, *tolerance)
            errors = _errors(g, w)
            if errors is not None:
                max_abs, max_rel = max(max_abs, errors[0]), max(max_rel, errors[1])
        if not ok and alone is not None:
            answers = alone(i)
            answers = answers if isinstance(answers, tuple) else (answers,)
            ok = any((g == single) if exact else (single is not None and _close(g, single, *tolerance))
                     for single in answers)
            scalar_loop += ok
        if not ok and wide is not None and not exact and not _finite(w) and _finite(g):
            value = wide(i)
            ok = value is not None and _finite(value) and _close(g, value, *tolerance)
            overflowed += ok
        if not ok and wide is not None and not exact and _finite(w) and _finite(g):
            value = wide(i)
            if value is not None and _finite(value) and _close(g, value, *tolerance) and abs(g - value) < abs(w - value):
                ok = True
                nearer.append((inputs.case(i), g, w, value))
        if not ok and wide is not None and not exact and not _finite(g) and not _finite(w):
            # the kernel's inf (or NaN) is the op's own value in float64, where CPU's is another inf or NaN:
            # CPU rounded an intermediate (smooth_l1_loss in half holds beta = 1e6 as inf: inf - inf, NaN,
            # where |d| is inf). A finite CPU value is never passed over (nextafter's half step is 65504,
            # where metal::nextafter steps float's ulp and gives inf, as float64 rounded to half does)
            value = wide(i)
            if value is not None and not _finite(value) and _close(g, value, 0.0, 0.0):
                ok = True
                nearer.append((inputs.case(i), g, w, value))
        if (not ok and edge_noted and wide is not None and not exact and kind(inputs.metal_type) == "float"
                and not _finite(g) and _at_edge(inputs, i)):
            # the kernel's inf or NaN where CPU gives the op's float64 value, an operand at the top of
            # the type's range (sub's a - alpha * b at a = b = 3.4e38: alpha * b overflows in the kernel,
            # CPU's fused multiply-add rounds once): beyond what upstream's test samples, noted
            value = wide(i)
            if value is not None and _close(w, value, 0.0, 0.0):
                ok = True
                edge.append((inputs.case(i), g, w))
            elif not _finite(w):  # CPU overflows there too, to another inf or NaN (lerp's a + w * (b - a)
                ok = True         # at a = -b = 3.4e38: b - a is inf in both formulas)
                edge_both.append((inputs.case(i), g, w))
        if not ok and unsampled is not None and not exact and _finite(g) and _within_span(g, unsampled(i)):
            ok = True
            domain_edge.append((inputs.case(i), g, w))
        if (not ok and finite_samples and not exact and kind(inputs.metal_type) == "float" and not _finite(g)
                and not _finite(w) and _infinite_not_nan(inputs.case(i))):
            # an infinite operand, never fed: both give a non-finite value and resolve inf - inf
            # differently (lerp's CPU formula end - (end - self) * (1 - w) where the kernel's is
            # self + w * (end - self): NaN against inf). With a NaN operand C says when inf wins
            # (hypot(inf, nan) is inf): judged
            ok = True
            infinite.append((inputs.case(i), g, w))
        if (not ok and finite_samples and not exact and kind(inputs.metal_type) == "complex"
                and _beyond_complex(inputs, i, g)):
            ok = True
            beyond.append((inputs.case(i), g, w))
        if not ok:
            bad.append(Mismatch(inputs.case(i), g, w))
    if len(got) != len(want):
        note = (note + "; " if note else "") + f"{len(got)} outputs for {len(want)} reference values"
    if scalar_loop:
        note = (note + "; " if note else "") + (
            f"{scalar_loop} cases match the CPU's scalar loop (the case computed alone, or the tensor laid out "
            "with a stride), not its vectorised loop: the two differ there")
    if overflowed:
        note = (note + "; " if note else "") + overflow_note(overflowed)
    for cases, describe in ((nearer, nearer_note), (edge, edge_note), (edge_both, edge_both_note),
                            (beyond, beyond_note), (domain_edge, domain_edge_note), (infinite, infinite_note)):
        if cases:  # each rule's matched cases, named
            note = (note + "; " if note else "") + describe(tuple(cases))
    status = "failed" if bad or len(got) != len(want) else "passed"
    notes = "; ".join(n for n in (inputs.note, note) if n)
    return DtypeResult(inputs.metal_type, METAL_TO_TORCH[inputs.metal_type], out_type, count, max_abs, max_rel,
                       len(bad), tuple(bad[:examples]), tolerance, status, notes, cpu_overflows=overflowed,
                       nearer_float64=tuple(nearer), edge_overflows=tuple(edge),
                       beyond_samples=tuple(beyond) + tuple(domain_edge) + tuple(infinite) + tuple(edge_both))
