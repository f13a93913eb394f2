"""`mpsgen audit [OP ...]`: try's comparison (`tryop.api.try_op`) on each native elementwise and
params kernel of a checkout, in parallel processes, with the mismatches sorted by kind and a Python
reproducer for each finding that a Mac user pastes as is.

A finding is the kernel's: the host emulation of the Metal builtins it calls is checked against the
Metal specification by tests (tests/test_metalhost_builtins.py). Where Metal itself is allowed to
give another answer than the host (a builtin whose accuracy bound is looser than the host's libm,
fast:: math, float subnormals Metal may flush, the zero fmax/fmin pick between -0 and +0), the
finding says so (`Finding.uncertain`) instead of asserting a bug."""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.commands.confirm import kernel_hint
from mpsgen.commands.tryop.api import TryOptions, TryReport, try_op
from mpsgen.commands.tryop.compare import DtypeResult, Mismatch
from mpsgen.commands.tryop.lookup import native_reduction
from mpsgen.commands.tryop.reference import import_torch, torch_unavailable
from mpsgen.commands.tryop.values import KINDS as TYPE_KINDS, int_range
from mpsgen.errors import CheckFailed, MpsgenError
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.cpp import mask_code, match_brace

# Finding kinds, in the order reports list them.
OVERFLOW = "overflow"
INF_NAN = "inf-nan"
SIGNED_ZERO = "signed-zero"
COMPLEX_SPECIAL = "complex-special"
PRECISION = "precision"
INTEGER = "integer"
OUTPUT_TYPE = "output-type"
KINDS = (OVERFLOW, INF_NAN, SIGNED_ZERO, COMPLEX_SPECIAL, PRECISION, INTEGER, OUTPUT_TYPE)
KIND_LABELS = {
    OVERFLOW: "overflow of an intermediate (finite inputs and finite CPU value, inf or NaN from the kernel)",
    INF_NAN: "inf/NaN handling (an inf or NaN input or expected value)",
    SIGNED_ZERO: "signed zero (the sign of a zero input decides the value)",
    COMPLEX_SPECIAL: "complex special values (a complex inf or NaN component)",
    PRECISION: "precision beyond the tolerance test_output_match applies",
    INTEGER: "integer result differs",
    OUTPUT_TYPE: "output type or count differs from CPU's",
}

# Metal builtins whose result Metal only bounds (not correctly rounded): the MSL specification's
# accuracy tables give each a ulp bound, and the host's libm may differ from the GPU within it.
# Calls through fast:: use the fast-math table, which is looser still and leaves inf/NaN undefined.
TRANSCENDENTAL = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "cospi", "exp", "exp2",
    "exp10", "log", "log2", "log10", "pow", "powr", "rsqrt", "sin", "sincos", "sinh", "sinpi", "tan", "tanh",
    "tanpi",
})
_CALL = re.compile(r"(?<![\w.])(?:(?:::)?metal::)?(precise::|fast::)?(\w+)\s*\(")
_ZERO_PICK = re.compile(r"(?<![\w.])(?:(?:::)?metal::)?(?:precise::|fast::)?(fmax|fmin|max|min|clamp)\s*\(")

# mismatches try keeps per dtype for audit (its own default is 10): every one, to sort them all by kind
KEPT_CASES = 100_000
SHOWN_CASES = 10  # cases a finding keeps (its count is all of them); the reproducer takes the first


@dataclass(frozen=True)
class AuditOptions:
    jobs: int = 0  # worker processes; 0: one per core
    seed: int = 0
    samples: int = 32
    backend: str = "auto"  # try's backends: "auto" (MPS where it runs, else the host), "host", "mps"


@dataclass(frozen=True)
class Case:
    inputs: tuple
    got: object
    want: object


@dataclass(frozen=True)
class Finding:
    """The cases of one op, dtype (and scalar set) that mismatch CPU in one way."""

    op: str
    functor: str  # `hypot_functor`
    location: Location  # the functor's struct
    dtype: str  # torch dtype of the inputs: float32
    metal_type: str
    out_type: str
    scalars: str  # the scalar set (alpha and params kernels), "" otherwise
    kind: str
    count: int  # the dtype's mismatching cases of this kind
    cases: tuple[Case, ...]  # the first SHOWN_CASES of them
    tolerance: tuple[float, float] | None
    reproducer: str  # one Python line for a Mac: the op on MPS and on CPU
    uncertain: str = ""  # why Metal itself may give the kernel's value here; "" when it may not
    note: str = ""  # try's note for the dtype
    unclassified: int = 0  # the dtype's mismatches beyond the examples try keeps (compare.MAX_EXAMPLES)


@dataclass(frozen=True)
class OpAudit:
    """One op's outcome: `ran` (compared; findings if any mismatch), or `not-run` with the reason."""

    op: str
    status: str  # "clean", "findings", "not-run"
    reason: str = ""  # not-run: try's one-line refusal or failure
    functor: str = ""
    location: Location | None = None
    dtypes: tuple[str, ...] = ()  # the dtypes compared (with scalar sets: dtype [scalars])
    findings: tuple[Finding, ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True)
class AuditReport:
    root: str
    ops: tuple[OpAudit, ...]
    jobs: int
    seconds: float
    skipped: tuple[tuple[str, str], ...] = field(default=())  # (op, why it is not audited): reductions

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for o in self.ops for f in o.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.findings else 0

    def by_kind(self) -> dict[str, int]:
        counts = {k: 0 for k in KINDS}
        for f in self.findings:
            counts[f.kind] += 1
        return {k: n for k, n in counts.items() if n}


# ---- classification --------------------------------------------------------------------------------


def _parts(value) -> tuple[float, ...]:
    if isinstance(value, complex):
        return (value.real, value.imag)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value),)
    return ()


def _finite(value) -> bool:
    return all(math.isfinite(p) for p in _parts(value))


def _is_zero(value) -> bool:
    return isinstance(value, float) and value == 0.0


def classify(metal_type: str, out_type: str, case: Mismatch) -> str:
    """The kind of one mismatching case (`KINDS`)."""
    inputs, got, want = case.inputs, case.got, case.want
    complex_case = TYPE_KINDS.get(metal_type, ("",))[0] == "complex" or isinstance(got, complex) or isinstance(want, complex)
    if complex_case:
        values = [*inputs, got, want]
        if not all(_finite(v) for v in values):
            return COMPLEX_SPECIAL
    elif not isinstance(got, float) and not isinstance(want, float):
        return INTEGER
    if not complex_case and any(_is_zero(v) for v in inputs) and isinstance(got, float) and isinstance(want, float):
        # the sign of a zero input decides: 1/-0 = -inf, atan2(-0, -1) = -pi, copysign(x, -0)
        if got == -want and got != want:
            return SIGNED_ZERO
    inputs_finite = all(_finite(v) for v in inputs)
    if inputs_finite and _finite(want) and not _finite(got):
        return OVERFLOW
    if not inputs_finite or not _finite(want) or not _finite(got):
        return INF_NAN
    return PRECISION


def calls(source: str) -> tuple[set[str], set[str]]:
    """(builtins called, those called through fast::) in a shader source."""
    called, fast = set(), set()
    for m in _CALL.finditer(source):
        called.add(m.group(2))
        if m.group(1) == "fast::":
            fast.add(m.group(2))
    return called, fast


# words before a `(` that name no function of the source: keywords, casts, the functor's call operator
_NOT_CALLS = frozenset({"operator", "if", "for", "while", "switch", "return", "sizeof", "decltype", "static_cast",
                        "reinterpret_cast", "const_cast", "as_type", "enable_if_t", "T", "U", "float", "half",
                        "bfloat", "int", "long", "bool"})


# a call through one of these is Metal's builtin, never a function of the source of the same name
_BUILTIN_QUALIFIERS = frozenset({"metal::", "::metal::", "precise::", "fast::", "metal::precise::", "metal::fast::",
                                 "::metal::precise::", "::metal::fast::"})
_QUALIFIED_CALL = re.compile(r"(?<![\w:])((?:::)?(?:\w+::)*)(\w+)\s*\(")


def functor_code(source: str, functor: str) -> str:
    """The functor's struct in `source` and the bodies of the functions of `source` it calls (three
    levels deep): the code whose builtins decide its value. The whole source when the struct is not
    found."""
    masked = mask_code(source)
    m = re.search(rf"\bstruct\s+{re.escape(functor)}\s*\{{", masked)
    if m is None:
        return source
    end = match_brace(masked, m.end() - 1)
    if end < 0:
        return source
    spans, seen, todo = [(m.start(), end + 1)], {functor}, [masked[m.start():end + 1]]
    for _ in range(3):
        names = {m.group(2) for code in todo for m in _QUALIFIED_CALL.finditer(code)
                 if m.group(1) not in _BUILTIN_QUALIFIERS} - seen - _NOT_CALLS
        todo = []
        for name in sorted(names):
            seen.add(name)
            for d in re.finditer(rf"\b{re.escape(name)}\s*\([^;{{}}]*\)\s*(?:const\s*)?\{{", masked):
                close = match_brace(masked, d.end() - 1)
                if close > 0:
                    spans.append((d.start(), close + 1))
                    todo.append(masked[d.start():close + 1])
    return "\n".join(source[a:b] for a, b in spans)


def uncertainty(kind: str, metal_type: str, cases: tuple[Case, ...], code: str) -> str:
    """Why Metal itself may give the kernel's value (the emulation cannot be sure), or "". `code`:
    the functor's own code (`functor_code`)."""
    called, fast = calls(code)
    reasons = []
    if fast & TRANSCENDENTAL or (fast and kind in (INF_NAN, OVERFLOW, COMPLEX_SPECIAL)):
        reasons.append(f"the kernel calls fast::{', fast::'.join(sorted(fast))}: under fast math Metal's accuracy "
                       "table bounds these loosely and leaves inf/NaN handling undefined")
    loose = sorted((called & TRANSCENDENTAL) - fast)
    if kind == PRECISION and loose:
        reasons.append(f"the kernel calls {', '.join(loose)}, which Metal computes within its accuracy table's ulp "
                       "bound and the host's libm within its own: an error this size after them can be either's")
    if kind == PRECISION and metal_type in ("half", "bfloat", "half2") and loose:
        reasons.append(f"Metal's {metal_type} math has its own (looser) bounds; the host computes in float and rounds")
    if kind == SIGNED_ZERO and _ZERO_PICK.search(code):
        reasons.append("the kernel calls fmax/fmin/max/min/clamp, and Metal does not say which zero "
                       "they return for -0 and +0")
    if metal_type in ("float", "float2") and any(_subnormal(v) for c in cases for v in (*c.inputs, c.got, c.want)):
        reasons.append("a float subnormal is involved, which Metal may flush to zero")
    if kind == INTEGER and TYPE_KINDS.get(metal_type, ("",))[0] in ("int", "uint") and any(c.got == int_range(metal_type)[0] for c in cases):
        reasons.append("the kernel gives the type's minimum: a float converted to an integer out of its range "
                       "gives that on x86, where the Metal specification leaves the result undefined")
    if kind == OUTPUT_TYPE:
        reasons.append("try compares the functor's own output type with CPU's; the host function may view or cast "
                       "the output (a complex kernel writing the real part of a float2) before the user sees it")
    return "; ".join(reasons)


def _subnormal(value) -> bool:
    return any(p != 0.0 and math.isfinite(p) and abs(p) < 2.0 ** -126 for p in _parts(value))


# ---- reproducers -----------------------------------------------------------------------------------

_TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int64": "int64",
                 "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
                 "complex64": "complex64", "complex32": "complex32"}
_NAMES = "abc"


def _literal(value) -> str:
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, complex):
        return f"complex({_literal(value.real)}, {_literal(value.imag)})"
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    return repr(value)


def _scalar_arguments(label: str) -> list[str]:
    """`beta=2, threshold=20` -> Python keyword arguments (a value that is not a number is a string)."""
    out = []
    for part in (p.strip() for p in label.split(",") if p.strip()):
        name, _, value = part.partition("=")
        if value in ("True", "False", "None"):
            out.append(f"{name}={value}")
            continue
        try:
            float(value)
            out.append(f"{name}={value}")
        except ValueError:
            out.append(f"{name}={value!r}")
    return out


def call_of(report_reference: str, op: str, has_torch_function: bool) -> str:
    """The Python callable the reproducer uses: `torch.hypot`, else the overload try compared with
    (`torch.ops.aten.logit_backward.default`)."""
    m = re.search(r"aten::(\w+)(?:\.(\w+))?", report_reference)
    name, overload = (m.group(1), m.group(2) or "default") if m else (op, "default")
    if has_torch_function and overload in ("default", "Tensor") and name == op:
        return f"torch.{op}"
    return f"torch.ops.aten.{name}.{overload}"


def reproducer(call: str, dtype: str, case: Case, scalars: str, held: tuple[str, ...] = ()) -> str:
    """One line: the case's tensors on MPS, the op on them and on their CPU copies, both printed."""
    torch_dtype = _TORCH_DTYPES.get(dtype, dtype)
    names = _NAMES[: len(case.inputs)]
    parts = ["import torch"]
    for name, value in zip(names, case.inputs):
        parts.append(f'{name} = torch.tensor([{_literal(value)}], dtype=torch.{torch_dtype}, device="mps")')
    extra = _scalar_arguments(scalars) + list(held)
    mps = ", ".join([*names, *extra])
    cpu = ", ".join([*(f"{n}.cpu()" for n in names), *extra])
    parts.append(f"print({call}({mps}).cpu(), {call}({cpu}))")
    return "; ".join(parts)


# ---- one op ----------------------------------------------------------------------------------------


def _dtype_findings(report: TryReport, result: DtypeResult, call: str, held: tuple[str, ...]) -> list[Finding]:
    groups: dict[str, list[Case]] = {}
    for m in result.examples:
        groups.setdefault(classify(result.metal_type, result.out_type, m), []).append(Case(m.inputs, m.got, m.want))
    if not groups:  # failed without a mismatching value: the output type, or the count of outputs
        groups[OUTPUT_TYPE] = []
    code = functor_code(report.source, report.functor + "_functor")
    findings = []
    for kind in KINDS:
        if kind not in groups:
            continue
        found = groups[kind]
        cases = tuple(found[:SHOWN_CASES])
        line = reproducer(call, result.dtype, cases[0], result.scalars, held) if cases else ""
        findings.append(Finding(report.op, report.ran, report.location, result.dtype, result.metal_type, result.out_type,
                                result.scalars, kind, len(found), cases, result.tolerance, line,
                                uncertainty(kind, result.metal_type, cases, code), result.note,
                                max(0, result.mismatches - len(result.examples))))
    return findings


def _held_arguments(op: str) -> tuple[str, ...]:
    """What try holds fixed for the CPU op besides the scalar sets: a loss's reduction=0 (none)."""
    if torch_unavailable():
        return ()
    packet = getattr(import_torch().ops.aten, op, None)
    if packet is None or "default" not in packet.overloads():
        return ()
    schema = packet.default._schema
    return tuple("reduction=0" for a in schema.arguments if a.name == "reduction" and str(a.type) == "int")


def _has_torch_function(op: str) -> bool:
    return not torch_unavailable() and callable(getattr(import_torch(), op, None))


def audit_op(root: str, op: str, options: AuditOptions) -> OpAudit:
    """try's comparison on one op, its mismatches sorted into findings (runs in a worker process)."""
    started = time.perf_counter()
    checkout = Checkout(Path(root))
    try:
        report = try_op(checkout, op, TryOptions(backend=options.backend, reference="torch", seed=options.seed,
                                                 samples=options.samples, examples=KEPT_CASES,
                                                 note_beyond_samples=False),
                        suggest=kernel_hint)
    except CheckFailed as exc:  # the kernel did not compile on the host, crashed or did not finish
        return OpAudit(op, "not-run", _one_line(exc), seconds=time.perf_counter() - started)
    except MpsgenError as exc:  # what try refuses (no functor, arity, no reference)
        return OpAudit(op, "not-run", _one_line(exc), seconds=time.perf_counter() - started)
    held = _held_arguments(op) if not report.scalar_sets else ()
    call = call_of(report.reference, op, _has_torch_function(op) and not held)
    findings = []
    for result in report.results:
        if result.status == "failed":
            findings += _dtype_findings(report, result, call, held)
    compared = tuple(r.dtype + (f" [{r.scalars}]" if r.scalars else "") for r in report.results if r.status != "skipped")
    return OpAudit(op, "findings" if findings else "clean", "", report.ran, report.location, compared,
                   tuple(findings), time.perf_counter() - started)


def _one_line(exc: MpsgenError) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# ---- all ops ---------------------------------------------------------------------------------------

Progress = Callable[[str, int, int | None, str], None]


def audit_ops(checkout: Checkout, ops: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The ops audit runs (elementwise and params kernels) and those it leaves out with the reason."""
    run, skipped = [], []
    for op in ops:
        if native_reduction(checkout, op) is not None:
            skipped.append((op, "a reduction: not an elementwise kernel"))
        else:
            run.append(op)
    return tuple(run), tuple(skipped)


def audit(checkout: Checkout, ops: tuple[str, ...], options: AuditOptions = AuditOptions(),
          progress: Progress | None = None) -> AuditReport:
    """Audit `ops` (already checked to exist) over `options.jobs` processes."""
    progress = progress or (lambda *args: None)
    started = time.perf_counter()
    run, skipped = audit_ops(checkout, ops)
    jobs = options.jobs or os.cpu_count() or 1
    jobs = max(1, min(jobs, len(run) or 1))
    root = str(checkout.root)
    outcomes: dict[str, OpAudit] = {}
    progress("audit", 0, len(run), "")
    if jobs == 1:
        for i, op in enumerate(run, 1):
            outcomes[op] = audit_op(root, op, options)
            progress("audit", i, len(run), op)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(audit_op, root, op, options): op for op in run}
            for i, future in enumerate(as_completed(futures), 1):
                op = futures[future]
                outcomes[op] = future.result()
                progress("audit", i, len(run), op)
    return AuditReport(root, tuple(outcomes[op] for op in run), jobs, time.perf_counter() - started, skipped)


__all__ = ["AuditOptions", "AuditReport", "Case", "Finding", "KINDS", "KIND_LABELS", "OpAudit", "audit", "audit_op",
           "classify", "reproducer", "uncertainty"]
