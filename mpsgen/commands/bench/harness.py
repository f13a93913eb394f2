"""`bench`'s harness: the op through the installed torch on a device, timed per (dtype, layout) and
swept over new shapes for memory growth. torch is imported when a run starts (`import_torch`).

Timing: the inputs are made once per case; `warmup` calls, then `repeat` timed calls, each timed
region opened and closed by the device's synchronisation (`torch.mps.synchronize()` on mps: the
kernels a call queues have finished when the clock stops; nothing on cpu, whose kernels return
finished); the median is the figure, the minimum is kept beside it.

Memory: for each dtype, the op runs once on each of `sweep` shapes it has not seen (contiguous
operands, sizes all different); after each, its tensors are dropped, the device's cache released
(`torch.mps.empty_cache()`) and the readings taken: on mps the Metal driver's allocated memory (what
MPSGraph's per-shape graph cache keeps grows it) and the live tensors' memory, on both devices the
process's resident set (Linux: the current one, /proc/self/statm; elsewhere the peak, getrusage)."""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable

from mpsgen.commands.bench.layouts import (BROADCAST, CONTIGUOUS, DEFAULT_SHAPES, STRIDED, Case, bytes_moved, cases,
                                           operand_shapes, shape_text)
from mpsgen.commands.bench.model import OpModel, op_model
from mpsgen.commands.bench.record import Memory, Record, Row
from mpsgen.commands.trace.recorder import INSTALL_HINT
from mpsgen.commands.tryop import reference
from mpsgen.commands.tryop.reference import schema_type, torch_scalar_reference
from mpsgen.commands.tryop.scalars import scalar_sets, schema_scalars
from mpsgen.errors import MpsgenError
from mpsgen.read.checkout import Checkout

SWEEP = 8  # new shapes of the memory sweep


def import_torch():
    """torch, or one line saying how to get it (exit 2)."""
    try:
        return reference.import_torch()
    except ImportError as exc:
        raise MpsgenError(f"mpsgen bench needs torch ({exc})", hint=f"install it with: {INSTALL_HINT}") from None


_STATM = "/proc/self/statm"


def rss_measure() -> str:
    if os.path.exists(_STATM):
        return "the process's resident set, /proc/self/statm (current)"
    return "the process's peak resident set, getrusage ru_maxrss (a peak: it only grows)"


def rss() -> int:
    if os.path.exists(_STATM):
        with open(_STATM, encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if platform.system() == "Darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Device:
    """Where the op runs and the device calls the harness makes: `place` is the torch device the
    tensors are made on, `synchronize` closes a timed region, `release` frees cached blocks before
    a memory reading, `readings` the memory figures (name -> bytes) that `measures` describes."""

    name: str  # "mps" | "cpu"
    place: str
    synchronize: Callable[[], None]
    release: Callable[[], None]
    readings: Callable[[], dict]
    measures: dict  # reading name -> what it measures


def open_device(torch, name: str) -> Device:
    """The device `name`; mps where torch has no MPS device is one line (exit 2)."""
    if name == "mps":
        if not torch.backends.mps.is_available():
            raise MpsgenError(f"no MPS device is present (torch {torch.__version__}: torch.backends.mps.is_available() "
                              "is False)", hint="`--device cpu` runs the same harness on the CPU")
        mps = torch.mps

        def readings() -> dict:
            return {"device": mps.driver_allocated_memory(), "allocated": mps.current_allocated_memory(), "rss": rss()}

        return Device("mps", "mps", mps.synchronize, mps.empty_cache, readings, {
            "device": "torch.mps.driver_allocated_memory() after torch.mps.empty_cache(): what the Metal driver holds "
                      "for the process (MPSGraph's cached graphs included)",
            "allocated": "torch.mps.current_allocated_memory(): the live tensors",
            "rss": rss_measure()})
    return Device("cpu", "cpu", _nothing, _nothing, lambda: {"rss": rss()}, {"rss": rss_measure()})


@dataclass(frozen=True)
class TorchCall:
    """How the op is called: `run(tensors, dim)`."""

    label: str
    run: Callable
    scalars: dict


def torch_call(torch, model: OpModel) -> TorchCall:
    """A reduction: `torch.<op>(input, dim)`; otherwise the aten overload taking the op's tensors and
    scalars (try's `torch_scalar_reference`) with the schema's defaults (try's first scalar set), the
    tensors passed by name."""
    if model.reduction:
        function = getattr(torch, model.op, None) or getattr(torch.ops.aten, model.op, None)
        if function is None:
            raise MpsgenError(f"torch {torch.__version__} has no {model.op}", hint="check the op's name")
        return TorchCall(f"torch {torch.__version__}: torch.{model.op}(input, dim)", lambda t, dim: function(t[0], dim), {})
    overload, label = torch_scalar_reference(model.op, model.arity)
    if overload is None:
        raise MpsgenError(f"torch cannot call {model.op}: {label}", hint="bench calls the aten op taking its tensors and scalars")
    args = schema_scalars(overload._schema)
    scalars = scalar_sets(model.op, args, model.call)[0].as_dict() if args else {}
    names = tuple(a.name for a in overload._schema.arguments if not a.is_out and schema_type(a) == "Tensor")
    return TorchCall(label.replace(" CPU:", ":"), lambda t, dim: overload(**dict(zip(names, t)), **scalars), scalars)


def _values(torch, shape, dtype, generator):
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype.is_complex:
        parts = (torch.rand(shape, generator=generator) + 0.5, torch.rand(shape, generator=generator) + 0.5)
        return torch.complex(*parts).to(dtype)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=generator) + 0.5).to(dtype)
    return torch.randint(1, 8, shape, generator=generator).to(dtype)


def make_operands(torch, case: Case, arity: int, dtype_name: str, place: str, generator) -> list:
    """The case's operands on `place`: dense, strided views, broadcast rows expanded, 0-dim scalars."""
    dtype = getattr(torch, dtype_name)
    out = []
    for storage in operand_shapes(case, arity):
        if case.layout == STRIDED and len(case.shape) >= 2:
            swapped = case.shape[:-2] + (case.shape[-1], case.shape[-2])
            out.append(_values(torch, swapped, dtype, generator).to(place).transpose(-1, -2))
        elif case.layout == STRIDED:
            out.append(_values(torch, (2 * case.shape[0],), dtype, generator).to(place)[::2])
        elif case.layout == BROADCAST and storage != case.shape:
            out.append(_values(torch, storage, dtype, generator).to(place).expand(case.shape))
        else:
            out.append(_values(torch, storage, dtype, generator).to(place))
    return out


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


_REFUSALS = (RuntimeError, NotImplementedError, TypeError, ValueError)


def time_case(torch, device: Device, call: TorchCall, case: Case, arity: int, dtype: str, warmup: int, repeat: int,
              generator, clock=time.perf_counter_ns) -> Row:
    """One row: the median of `repeat` timed calls after `warmup`, each synchronised on both sides."""
    try:
        inputs = make_operands(torch, case, arity, dtype, device.place, generator)
        result = call.run(inputs, case.dim)
        device.synchronize()
    except _REFUSALS as exc:
        return Row(case.layout, case.shape, case.dim, dtype, note=f"not run: torch refuses it ({_why(exc)})")
    for _ in range(warmup):
        call.run(inputs, case.dim)
        device.synchronize()
    times = []
    for _ in range(repeat):
        device.synchronize()
        start = clock()
        call.run(inputs, case.dim)
        device.synchronize()
        times.append(clock() - start)
    moved = bytes_moved(case, arity, inputs[0].element_size(), result.element_size())
    return Row(case.layout, case.shape, case.dim, dtype, str(result.dtype).removeprefix("torch."),
               statistics.median(times) / 1000, min(times) / 1000, repeat, moved)


def sweep_shapes(count: int) -> tuple[tuple[int, int], ...]:
    """`count` 2-D shapes, no two alike (nor like the timing's defaults)."""
    return tuple((64 + 8 * k, 96 + 8 * k) for k in range(count))


def memory_sweep(torch, device: Device, call: TorchCall, model: OpModel, dtype: str, shapes, generator) -> Memory:
    readings: dict[str, list] = {name: [] for name in device.measures}
    for shape in shapes:
        case = Case(CONTIGUOUS, shape, len(shape) - 1 if model.reduction else None)
        try:
            inputs = make_operands(torch, case, model.arity, dtype, device.place, generator)
            result = call.run(inputs, case.dim)
            device.synchronize()
        except _REFUSALS as exc:
            return Memory(dtype, tuple(shapes), {}, f"not run: torch refuses it ({_why(exc)})")
        del inputs, result
        gc.collect()
        device.release()
        device.synchronize()
        for name, value in device.readings().items():
            readings.setdefault(name, []).append(value)
    return Memory(dtype, tuple(shapes), {name: tuple(values) for name, values in readings.items()})


def no_mps_kernel(torch, device: Device, call: TorchCall, model: OpModel, dtype: str, generator) -> str | None:
    """On mps: one line when the installed torch has no MPS kernel for the op (its call raises
    NotImplementedError), else None."""
    case = Case(CONTIGUOUS, (4, 8), 1 if model.reduction else None)
    try:
        call.run(make_operands(torch, case, model.arity, dtype, device.place, generator), case.dim)
        device.synchronize()
    except NotImplementedError as exc:
        return f"torch {torch.__version__} has no MPS kernel for {model.op} ({_why(exc)}); nothing timed"
    except _REFUSALS:
        return None  # a refusal of this dtype: its rows say so
    return None


@dataclass(frozen=True)
class BenchOptions:
    device: str = "mps"
    shapes: tuple[tuple[int, ...], ...] = DEFAULT_SHAPES
    dtypes: tuple[str, ...] | None = None  # default: the op model's
    repeat: int = 20
    warmup: int = 3
    sweep: int = SWEEP
    seed: int = 0


def bench_op(checkout: Checkout, op: str, options: BenchOptions = BenchOptions(), progress=None, *,
             device: Device | None = None, clock=time.perf_counter_ns) -> Record:
    """Time `op` on every (dtype, layout, shape) and sweep shapes for memory; `device` and `clock`
    replace the real ones (tests run the MPS path with its calls stubbed)."""
    progress = progress or (lambda *args: None)
    model = op_model(checkout, op)
    torch = import_torch()
    device = device or open_device(torch, options.device)
    call = torch_call(torch, model)
    dtypes = options.dtypes or model.dtypes
    generator = torch.Generator().manual_seed(options.seed)
    notes = []
    where = f"{platform.system()} {platform.release()} {platform.machine()}, Python {platform.python_version()}"
    if device.name == "cpu":
        where += f", {torch.get_num_threads()} torch threads"
        notes.append(f"a CPU run: torch's CPU kernel for {op}, not an MPS one. MPS in the checkout: {model.mps}")
    record = Record(op, device.name, torch.__version__, where, call.label, call.scalars, model.scalars_from,
                    model.dtypes_from, model.dim, model.mps, options.warmup, options.repeat, device.measures)
    if device.name == "mps" and dtypes:
        missing = no_mps_kernel(torch, device, call, model, dtypes[0], generator)
        if missing:
            return replace(record, notes=tuple(notes + [missing]))
    planned = cases(options.shapes, model.arity, model.reduction)
    total = len(planned) * len(dtypes)
    rows, memory = [], []
    for dtype in dtypes:
        for case in planned:
            progress("timing", len(rows), total, f"{dtype} {case.layout} {shape_text(case.shape)}")
            rows.append(time_case(torch, device, call, case, model.arity, dtype, options.warmup, options.repeat,
                                  generator, clock))
    progress("timing", total, total, "done")
    for dtype in dtypes:
        progress("memory", len(memory), len(dtypes), f"{dtype}: {options.sweep} new shapes")
        memory.append(memory_sweep(torch, device, call, model, dtype, sweep_shapes(options.sweep), generator))
    progress("memory", len(dtypes), len(dtypes), "done")
    return replace(record, rows=tuple(rows), memory=tuple(memory), notes=tuple(notes))
