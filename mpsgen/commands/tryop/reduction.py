"""`try` for a reduction: the op struct each registered (input, output) pair instantiates, run on the
host with mpsgen's Metal prelude by a serial driver, against torch's CPU op.

What runs is read from the checkout, never assumed: the kernel file is preprocessed by the host
compiler (its registration macros expanded as the Metal compiler would) and each
`[[host_name("<op>_reduction_<in>_<out>")]]` instantiation gives the op struct type the kernels are
instantiated with (`ProdOp<float>`) and the pair. The variant kernels (simdgroup and threadgroup
collectives) need a GPU: on this path they are compiled with the file but not run; the driver
(`templates/try_reduction_main.cpp.j2`) follows their order instead -- each output's elements into
32 lane partials (element k into lane k % 32) by `combine(acc, load(x))` from `identity()`, the
lanes combined in order, then `finalize(acc, 0)`.

Cases, per pair, on a (2, 5, 3) input (float values uniform in [-2, 2) rounded to the dtype, integers
in [-2, 2]): the innermost dim, the outer dim (each with and without keepdim), all dims (a (2, 3, 2)
input, integers in [-1, 1] so that products stay in range), none (a reduced dim of size 1: each
output is one element through load/combine/finalize), and empty (a reduced dim of size 0: every
output is the identity finalized)."""

from __future__ import annotations

import math
import random
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpsgen.commands.tryop.compare import DtypeResult, Mismatch
from mpsgen.commands.tryop.lookup import METAL_TO_TORCH
from mpsgen.commands.tryop.reference import import_torch, torch_unavailable
from mpsgen.commands.tryop.run import COMPILE_TIMEOUT, RUN_TIMEOUT, _compile_failure, mps_unavailable, parse_outputs
from mpsgen.commands.tryop.source import _HOST_HEADERS, bundle
from mpsgen.commands.tryop.values import float32_bits
from mpsgen.facts.templates import Templates
from mpsgen.errors import CheckFailed, MpsgenError
from mpsgen.facts.reduction import ReductionFacts
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.cpp import split_top_level
from mpsgen.read.metalhost.compiler import Compiler, find_compiler
from mpsgen.read.metalhost.rewrite import rewrite_metal
from mpsgen.read.reduction import OrderRoutes, parse_reduction_name

LANES = 32
_INSTANCE = re.compile(r"host_name\s*\(\s*((?:\"[^\"\n]*\"\s*)+)\)\s*\]\]\s*(?:\[\[[^\]]*\]\]\s*)*"
                       r"(?:decltype\s*\(\s*)?(?:kernel\s+void\s+)?(\w+)\s*<")
_FLOATS = ("float", "half", "bfloat")
_INTS = ("long", "int", "short", "char", "uchar", "bool")
NOT_RUN_VARIANTS = ("the routing variants (simdgroup and threadgroup collectives) need a Mac with MPS: "
                    "their op struct ran through a serial host driver in the same accumulate/combine/finalize order")


@dataclass(frozen=True)
class OpStruct:
    prefix: str
    input: str
    output: str
    op_type: str  # as instantiated: `ProdOp<float>`


@dataclass(frozen=True)
class Case:
    label: str
    shape: tuple[int, ...]
    dim: int | None  # None: all dims
    keepdim: bool


CASES = (
    Case("innermost", (2, 5, 3), 2, False),
    Case("innermost keepdim", (2, 5, 3), 2, True),
    Case("outer", (2, 5, 3), 0, False),
    Case("outer keepdim", (2, 5, 3), 0, True),
    Case("all", (2, 3, 2), None, False),
    Case("none (reduced dim of size 1)", (2, 1, 3), 1, False),
    Case("empty (reduced dim of size 0)", (2, 0, 3), 1, False),
)


def op_structs(checkout: Checkout, reduction: ReductionFacts, compiler: Compiler) -> list[OpStruct]:
    """Each (prefix, input, output) the kernel file instantiates for the op's prefixes, with the op
    struct type of its generic (first) kernel, from the host compiler's preprocessing of the file."""
    # the prelude first, as the driver program has it: the c10/metal headers take their Metal branch
    # (`__METAL__`), not the host one that includes c10/util headers a wheel's checkout lacks
    source = "#include <metal_stdlib>\n" + bundle(checkout, reduction.kernel_file)
    with tempfile.TemporaryDirectory(prefix="mpsgen-try-") as tmp:
        path = Path(tmp) / "reduce.metal"
        path.write_text(source, encoding="utf-8")
        command = [compiler.path, *compiler.base_flags(()), *compiler.prelude_first(), "-E", "-P", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    if done.returncode != 0:
        raise _compile_failure(done.stderr, reduction.kernel_file, root=checkout.root, compiler=compiler)
    found: dict[tuple[str, str, str], OpStruct] = {}
    wanted = {p.rstrip("_") for p in reduction.prefixes}
    text = done.stdout
    for m in _INSTANCE.finditer(text):
        name = "".join(re.findall(r"\"([^\"]*)\"", m.group(1)))
        parsed = parse_reduction_name(name)
        if parsed is None or parsed.op not in wanted:
            continue
        args = _template_args(text, m.end() - 1)
        if len(args) < 3:
            continue
        found.setdefault((parsed.op, parsed.input, parsed.output), OpStruct(parsed.op, parsed.input, parsed.output, args[0]))
    return list(found.values())


def _template_args(text: str, open_at: int) -> list[str]:
    depth = 0
    for i in range(open_at, min(len(text), open_at + 2000)):
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return [a.strip() for a in split_top_level(text[open_at + 1 : i], "(<[", ")>]")]
    return []


def _values(metal_type: str, count: int, rng: random.Random, small: bool) -> list:
    if metal_type == "bool":
        return [rng.random() < 0.7 for _ in range(count)]
    if metal_type in _INTS:
        low = 0 if metal_type == "uchar" else (-1 if small else -2)
        high = 1 if small else 2
        return [rng.randint(low, high) for _ in range(count)]
    return [rng.uniform(-2.0, 2.0) for _ in range(count)]


def _bits(metal_type: str, v) -> str:
    if metal_type in _FLOATS:
        return f"0x{float32_bits(v):08x}u"
    return f"{int(v) & 0xFFFFFFFF}u"


def _prerequisites(op: str, location: Location):
    """(host compiler, torch, torch's op: `torch.<op>`, else `torch.ops.aten.<op>`), or why not."""
    compiler, why = find_compiler()
    if compiler is None:
        raise MpsgenError(f"cannot run {op}'s op struct on the host: {why}", hint="install g++ or clang++")
    why_torch = torch_unavailable()
    if why_torch:
        raise MpsgenError(f"nothing to compare {op} with: {why_torch}", hint="install torch (pip install torch==2.13.0)")
    torch = import_torch()
    function = getattr(torch, op, None) or getattr(torch.ops.aten, op, None)
    if function is None:
        raise MpsgenError(f"torch has no {op} to compare with", location=location)
    return compiler, torch, function


def try_reduction(checkout: Checkout, op: str, reduction: ReductionFacts, seed: int, location: Location):
    """(results, compiler detail, not_run notes, reference label, source): one DtypeResult per
    (pair, case)."""
    compiler, torch, function = _prerequisites(op, location)
    structs = op_structs(checkout, reduction, compiler)
    if not structs:
        raise _none_instantiated(reduction.prefixes, reduction, location)
    rng = random.Random(seed)
    runs, plans = [], []
    for s in structs:
        if s.input not in METAL_TO_TORCH or s.input in ("float2", "half2"):
            plans.append((s, None, f"{s.input} inputs are not sampled by try"))
            continue
        for case in CASES:
            values = [_round(torch, v, s.input) for v in _values(s.input, math.prod(case.shape), rng, case.dim is None)]
            label = _add_run(runs, s, case, values)
            plans.append((s, case, (label, values)))
    by_label, shown = _drive(checkout, reduction, compiler, runs)
    results = []
    for s, case, data in plans:
        dtype = METAL_TO_TORCH.get(s.input, s.input)
        if case is None:
            results.append(DtypeResult(s.input, dtype, s.output, 0, 0.0, 0.0, 0, (), None, "skipped", data,
                                       f"{s.prefix} {s.input}->{s.output}"))
            continue
        label, values = data
        results.append(_compare(torch, function, s, case, values, _printed(by_label, label)))
    return results, compiler.path, shown


def _none_instantiated(prefixes, reduction: ReductionFacts, location: Location) -> MpsgenError:
    return MpsgenError(f"no {'/'.join(p + '_reduction*' for p in prefixes)} instantiation found in "
                       f"{reduction.kernel_file} after preprocessing", location=location)


def _add_run(runs: list[dict], s: OpStruct, case: Case, kernel_in: list) -> str:
    """One run of the driver (`try_reduction_main.cpp.j2`): op struct `s` over `kernel_in`, viewed
    as `case` reduces it; its label."""
    outer, size, inner = _view(case)
    label = f"{s.prefix}_{s.input}_{s.output}#{len(runs)}"
    runs.append({"op_type": s.op_type, "input": s.input, "output": s.output, "count": math.prod(case.shape),
                 "data": ", ".join(_bits(s.input, v) for v in kernel_in), "outer": outer, "size": size,
                 "inner": inner, "label": label})
    return label


def _drive(checkout: Checkout, reduction: ReductionFacts, compiler, runs: list[dict]) -> tuple[dict, str]:
    """Compile and run the driver over `runs` with the kernel file: each run's printed values by
    label, and the source shown (`--show-source`)."""
    shown = bundle(checkout, reduction.kernel_file) + '#line 1 "<mpsgen try reduction driver>"\n' + \
        Templates(checkout.root).render("try_reduction_main.cpp.j2", runs=runs, lanes=LANES)
    outputs = _run(compiler, _HOST_HEADERS + shown, reduction.kernel_file, checkout.root)
    return {o.metal_type: o for o in outputs}, shown


def _printed(by_label: dict, label: str):
    got = by_label.get(label)
    if got is None:
        raise MpsgenError(f"the try program printed no results for {label}", hint="run with --debug; this is a bug in mpsgen")
    return got.values


ORDERS = (0.0, 1.0, 2.0, 3.0, 0.5, -1.0, float("inf"), float("-inf"))
ORDERS_NOT_RUN = ("orders the host function sends down its fall-through path: |x|^ord was computed by torch's CPU "
                  "abs and pow (on MPS, MPS's own abs/pow kernels, not run here), then summed by the op struct "
                  "the fall-through launch names")


def _order_label(order: float) -> str:
    return {float("inf"): "inf", float("-inf"): "-inf"}.get(order, f"{order:g}")


def try_reduction_orders(checkout: Checkout, op: str, reduction: ReductionFacts, routing: OrderRoutes, seed: int,
                         location: Location):
    """A reduction whose host function picks its kernels by an order (`OrderRoutes`): for each of
    `ORDERS` and each pair the served orders' kernels register, the op struct the host function's
    branch names, on the input as it is (a served order) or on |x|^ord (the fall-through path, when
    it raises |x| to the order elementwise), against torch's CPU op with that order."""
    compiler, torch, function = _prerequisites(op, location)
    if routing.fallthrough and not routing.elementwise:
        raise MpsgenError(f"{reduction.function}'s other orders launch {routing.fallthrough}_reduction* kernels "
                          "without raising |x| to the order first: try does not model that path", location=location,
                          hint="check it with the MPS tests")
    structs = {(s.prefix, s.input, s.output): s for s in op_structs(checkout, reduction, compiler)}
    served = [prefix for _, prefix in routing.routes]
    pairs = sorted({(i, o) for prefix, i, o in structs if prefix in served},
                   key=lambda p: next(k for k, s in enumerate(structs) if (s[1], s[2]) == p))
    if not pairs:
        raise _none_instantiated(served, reduction, location)
    rng = random.Random(seed)
    runs, plans = [], []
    for order in ORDERS:
        prefix = routing.route(order)
        path = prefix if prefix is not None else routing.fallthrough
        for pair in pairs:
            # the fall-through path sums |x|^ord as the host function computes it: in the output's
            # type when it converts first, else in the input's
            kernel_pair = pair if prefix is not None or not routing.in_output_type else (pair[1], pair[1])
            s = structs.get((path, *kernel_pair))
            name = prefix if prefix is not None else f"|x|^ord as {kernel_pair[0]}, then {path}"
            label_text = f"ord={_order_label(order)} {pair[0]}->{pair[1]}: {name}"
            if s is None or pair[0] not in _FLOATS:
                why_not = (f"no {path}_reduction_{kernel_pair[0]}_{kernel_pair[1]} kernel" if s is None
                           else f"{pair[0]} inputs")
                plans.append((None, None, order, label_text, why_not))
                continue
            for case in CASES:
                values = [_round(torch, v, pair[0]) for v in _values(pair[0], math.prod(case.shape), rng, False)]
                kernel_in = values
                if prefix is None:
                    x = torch.tensor(values, dtype=getattr(torch, METAL_TO_TORCH[pair[0]])).abs()
                    kernel_in = x.to(getattr(torch, METAL_TO_TORCH[s.input])).pow(order).tolist()
                label = _add_run(runs, s, case, kernel_in)
                reference = OpStruct(s.prefix, pair[0], pair[1], s.op_type)  # the op's own pair, for torch
                plans.append((reference, case, order, f"{label_text}, {case.label}", (label, values)))
    by_label, shown = _drive(checkout, reduction, compiler, runs)
    results = []
    for s, case, order, scalars, data in plans:
        if case is None:
            results.append(DtypeResult("", "", "", 0, 0.0, 0.0, 0, (), None, "skipped", data, scalars))
            continue
        label, values = data
        results.append(_compare(torch, function, s, case, values, _printed(by_label, label), (order,), scalars))
    return results, compiler.path, shown


def _round(torch, v, metal_type: str):
    if metal_type in _FLOATS:
        return torch.tensor(v, dtype=getattr(torch, METAL_TO_TORCH[metal_type])).item()
    return v


def _view(case: Case) -> tuple[int, int, int]:
    shape = case.shape
    if case.dim is None:
        return 1, math.prod(shape), 1
    return math.prod(shape[: case.dim]), shape[case.dim], math.prod(shape[case.dim + 1 :])


def _reference(torch, function, s: OpStruct, case: Case, values, args: tuple = ()):
    dtype = getattr(torch, METAL_TO_TORCH[s.input])
    out_dtype = getattr(torch, METAL_TO_TORCH[s.output])
    x = torch.tensor(values, dtype=dtype).reshape(case.shape)
    kwargs = {} if case.dim is None else {"dim": case.dim, "keepdim": case.keepdim}
    try:
        result = function(x, *args, dtype=out_dtype, **kwargs)
    except TypeError:
        result = function(x, *args, **kwargs)
    if isinstance(result, tuple):
        result = result[0]
    expect_shape = tuple(n for i, n in enumerate(case.shape) if i != case.dim) if case.dim is not None else ()
    if case.keepdim and case.dim is not None:
        expect_shape = tuple(1 if i == case.dim else n for i, n in enumerate(case.shape))
    if tuple(result.shape) != expect_shape:
        raise RuntimeError(f"the reference's shape is {tuple(result.shape)}, not {expect_shape}")
    return result.to(out_dtype).reshape(-1).tolist()


def _compare(torch, function, s: OpStruct, case: Case, values, got, args: tuple = (),
             scalars: str = "") -> DtypeResult:
    dtype = METAL_TO_TORCH[s.input]
    scalars = scalars or f"{s.prefix} {s.input}->{s.output}, {case.label}"
    try:
        want = _reference(torch, function, s, case, values, args)
    except (RuntimeError, TypeError, IndexError) as exc:
        why = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        return DtypeResult(s.input, dtype, s.output, 0, 0.0, 0.0, 0, (), None, "skipped", f"no reference: {why}", scalars)
    if len(want) != len(got):
        return DtypeResult(s.input, dtype, s.output, len(got), 0.0, 0.0, len(want), (), None, "failed",
                           f"{len(got)} outputs, the reference has {len(want)}", scalars)
    floating = s.output in _FLOATS
    rtol, atol = {"float": (1.3e-6, 1e-5), "half": (1e-3, 1e-5), "bfloat": (1.6e-2, 1e-5)}.get(s.output, (0.0, 0.0))
    max_abs = max_rel = 0.0
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        if floating:
            if (g != g and w != w) or g == w:  # both NaN, or equal (the same infinity)
                continue
            diff = abs(g - w)
            max_abs = max(max_abs, diff)
            max_rel = max(max_rel, diff / abs(w) if w else 0.0)
            ok = diff <= atol + rtol * abs(w)
        else:
            ok = int(g) == int(w)
        if not ok:
            bad.append(Mismatch((i,), g, w))
    note = "" if floating else "exact"
    return DtypeResult(s.input, dtype, s.output, len(got), max_abs, max_rel, len(bad), tuple(bad[:3]),
                       (rtol, atol) if floating else None, "failed" if bad else "passed", note, scalars)


def _run(compiler: Compiler, program: str, kernel_file: str, root: Path | None = None):
    with tempfile.TemporaryDirectory(prefix="mpsgen-try-") as tmp:
        source = Path(tmp) / "try.cpp"
        binary = Path(tmp) / "try"
        source.write_text(rewrite_metal(program), encoding="utf-8")
        built = subprocess.run(compiler.build_command(source, (), binary), capture_output=True, text=True,
                               timeout=COMPILE_TIMEOUT)
        if built.returncode != 0:
            raise _compile_failure(built.stderr, kernel_file, root=root, compiler=compiler)
        ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if ran.returncode != 0:
        raise CheckFailed(f"the reduction driver crashed on the host (exit status {ran.returncode})",
                          hint="run with --debug")
    return parse_outputs(_with_types(ran.stdout))


def _with_types(stdout: str) -> str:
    """The driver prints `mpsgen-try <label> values...`: give parse_outputs its (type, out type)
    columns (the output type is in the label: `prod_float_float#3`)."""
    lines = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "mpsgen-try":
            out_type = parts[1].split("#")[0].rsplit("_", 1)[-1]
            lines.append(" ".join([parts[0], parts[1], out_type, *parts[2:]]))
    return "\n".join(lines)


def not_run_note() -> tuple[str, ...]:
    no_mps = mps_unavailable()
    return ((f"mps: {no_mps}; " if no_mps else "mps: ") + NOT_RUN_VARIANTS,)

