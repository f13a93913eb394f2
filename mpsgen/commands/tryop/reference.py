"""What `try` compares the kernel with: torch's CPU op when torch is importable, else the catalog's
Python reference."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

from mpsgen.commands.tryop.branchvalues import next_float
from mpsgen.commands.tryop.lookup import METAL_TO_TORCH, TORCH_TO_METAL
from mpsgen.commands.tryop.references import KIND_ARGUMENT, REFERENCES
from mpsgen.commands.tryop.values import COMPONENT, ROUND, Inputs, kind
from mpsgen.facts.catalog import lookup

# When the CPU op has no kernel for a reduced-precision dtype, it is computed in this one instead.
_WIDER = {"float16": "float32", "bfloat16": "float32", "complex32": "complex64"}
_OVERLOADS = ("default", "Tensor", "Tensor_Tensor", "self")
_REAL_FLOATING = frozenset({"float32", "float16", "bfloat16"})
_COMPLEX = frozenset({"complex64", "complex32"})


@dataclass(frozen=True)
class Expected:
    """The reference's values for one input type, the Metal type of its output, and how it was had."""

    values: tuple
    out_type: str
    note: str = ""
    # The reference for case i computed alone (torch: its scalar loop rather than the vectorised
    # one, which can differ at special values), or None.
    alone: Callable[[int], object] | None = field(default=None, compare=False)
    # The reference for case i computed in float64 (complex128 for complex inputs) from the same inputs
    # and rounded to the output type (None where that does not apply: integer inputs): where the CPU op gives inf
    # or NaN and this is finite, the CPU op overflowed in an intermediate (`compare`'s rule).
    wide: Callable[[int], object] | None = field(default=None, compare=False)
    # The op's values in float64 (unrounded) at the real numbers halfway between case i's operand and
    # its type's next value down and up (a one-operand real floating case; else None): the op's values
    # over every real input that rounds to the operand (`compare`'s rule for values upstream's test
    # never samples).
    span: Callable[[int], tuple | None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Reference:
    name: str  # what it is, for the report: "torch 2.13.0 CPU: aten::hypot" / "catalog: ref_hypot"
    compute: Callable[[Inputs, str | None], Expected]  # (inputs, kernel's output type if known)


def import_torch():
    """torch, imported without its warnings about optional extras (NumPy) that try does not use."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
    return torch


def torch_unavailable() -> str | None:
    try:
        import_torch()
    except ImportError:
        return "torch is not importable (pip install torch==2.13.0 gives a CPU build)"
    return None


def _required_tensor_args(schema) -> int | None:
    required = [a for a in schema.arguments if not a.kwarg_only and not a.has_default_value()]
    if not all(str(a.type) == "Tensor" for a in required):
        return None
    return len(required)


# An op's tensor argument that CPU reads as another op made it: log_sigmoid_backward's `buffer` is
# what the CPU forward writes for `self` (MPS's kernel never reads it: its forward leaves it empty),
# so the CPU reference gets that one instead of an arbitrary tensor.
# op -> (argument index, producing op, index of the argument it is made from, output index)
DERIVED_ARGUMENTS = {"log_sigmoid_backward": (2, "log_sigmoid_forward", 1, 1)}


def torch_reference(op: str, arity: int) -> tuple[Reference | None, str]:
    """torch's CPU op as a reference, or None and why not."""
    overload, label = _cpu_overload(op, _OVERLOADS, lambda schema: _required_tensor_args(schema) == arity,
                                    f"{arity} tensors")
    if overload is None:
        return None, label
    if op in DERIVED_ARGUMENTS:
        index, producer, source, output = DERIVED_ARGUMENTS[op]
        make = getattr(import_torch().ops.aten, producer)
        label += f" (its {overload._schema.arguments[index].name} made by aten::{producer})"

        def derived(*tensors, f=overload, **kwargs):
            tensors = list(tensors)
            tensors[index] = make(tensors[source])[output]
            return f(*tensors, **kwargs)

        return Reference(label, lambda inputs, _out, f=derived: _run_torch(f, inputs, None)), ""
    # a loss (mse_loss): its stub takes no reduction, the shared function reduces after the kernel;
    # the elementwise values it reduces are the op's with reduction=None (at::Reduction::None, 0)
    held = {a.name: 0 for a in overload._schema.arguments
            if a.name == "reduction" and schema_type(a) == "int" and not a.is_out}
    return Reference(label, lambda inputs, _out, f=overload: _run_torch(f, inputs, held or None)), ""


def _cpu_overload(op: str, names_in_order: tuple[str, ...], takes, what: str):
    """The first of `names_in_order` among aten::op's overloads whose schema `takes`, with its label
    (`torch 2.13.0 CPU: aten::op.name`), or None and why not (no torch, no such op, no such overload)."""
    why = torch_unavailable()
    if why:
        return None, why
    torch = import_torch()
    packet = getattr(torch.ops.aten, op, None)
    if packet is None:
        return None, f"torch.ops.aten has no {op}"
    names = packet.overloads()
    for name in names_in_order:
        if name in names and takes(getattr(packet, name)._schema):
            return getattr(packet, name), f"torch {torch.__version__} CPU: aten::{op}" + ("" if name == "default" else f".{name}")
    return None, f"no overload of aten::{op} takes exactly {what} ({', '.join(names)})"


def _tensor(torch, column: tuple, dtype_name: str):
    if dtype_name == "complex32":
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")
            return torch.tensor(list(column), dtype=torch.complex64).to(torch.complex32)
    return torch.tensor(list(column), dtype=getattr(torch, dtype_name))


# torch's spelling of a schema argument's type -> native_functions.yaml's.
SCHEMA_TYPES = {"number": "Scalar", "Optional[number]": "Scalar?", "float": "float", "Optional[float]": "float?",
                "int": "int", "bool": "bool", "Tensor": "Tensor"}


def schema_type(argument) -> str:
    return SCHEMA_TYPES.get(str(argument.type), str(argument.type))


def _scalar_overload(schema, arity: int) -> bool:
    """`arity` tensors first, then only scalar arguments (Scalar, float, float?, int, bool, and a str an
    enum helper takes: gelu's `approximate`)."""
    args = [a for a in schema.arguments if not a.is_out]
    tensors = [a for a in args if schema_type(a) == "Tensor"]
    others = [a for a in args if schema_type(a) != "Tensor"]
    return (len(tensors) == arity
            and all(schema_type(a) in ("Scalar", "float", "float?", "int", "bool", "Scalar?", "str") for a in others))


def torch_scalar_reference(op: str, arity: int):
    """torch's CPU op taking `arity` tensors and scalars: (overload, label) or (None, why not)."""
    return _cpu_overload(op, ("Scalar", *_OVERLOADS), lambda schema: _scalar_overload(schema, arity),
                         f"{arity} tensors and scalars")


def scalar_reference(overload, label: str, scalars: dict) -> Reference:
    """torch's CPU op with the scalar arguments `scalars` (by name); the tensors are passed by name
    too, so that an op whose tensors and scalars interleave (elu_backward) takes them."""
    names = tuple(a.name for a in overload._schema.arguments if not a.is_out and schema_type(a) == "Tensor")
    numbers = {a.name for a in overload._schema.arguments if schema_type(a) in ("Scalar", "Scalar?")}

    def compute(inputs: Inputs, _out):
        chosen = scalars
        if kind(inputs.metal_type) in ("int", "uint", "bool"):
            # a whole Scalar as an int for integer tensors, as their sample inputs pass it (alpha=2):
            # torch refuses a floating alpha there
            chosen = {k: int(v) if k in numbers and isinstance(v, float) and v.is_integer() else v
                      for k, v in scalars.items()}
        return _run_torch(overload, inputs, chosen, names)

    return Reference(label, compute)


def _run_torch(overload, inputs: Inputs, scalars: dict | None = None, names: tuple[str, ...] = ()) -> Expected:
    torch = import_torch()

    dtype = METAL_TO_TORCH[inputs.metal_type]
    note = ""
    try:
        _run_columns(torch, overload, inputs.columns[:1] and tuple(c[:1] for c in inputs.columns), dtype, None, scalars, names)
        compute_in = dtype
    except (RuntimeError, NotImplementedError) as exc:
        compute_in = _WIDER.get(dtype)
        if compute_in is None:
            raise
        note = f"the CPU op has no {dtype} kernel ({str(exc).splitlines()[0][:80]}); computed in {compute_in} and rounded"
    result = _run_columns(torch, overload, inputs.columns, compute_in, dtype, scalars, names)
    out_name = str(result.dtype).replace("torch.", "")

    scalar_loop: list = []

    def alone(i: int):
        """Case i's CPU answers from its scalar loop: computed by itself, and within the whole tensor
        laid out with a stride (TensorIterator runs a strided operand through the scalar loop), which
        keeps what depends on the tensor's size (a mean loss's norm, 1 / numel)."""
        one = _run_columns(torch, overload, tuple(c[i : i + 1] for c in inputs.columns), compute_in, dtype, scalars, names)
        if not scalar_loop:
            strided = _run_columns(torch, overload, inputs.columns, compute_in, dtype, scalars, names, strided=True)
            scalar_loop.append(_values(torch, strided) if strided.shape == result.shape else None)
        whole = scalar_loop[0]
        return (_values(torch, one)[0],) + ((whole[i],) if whole is not None else ())

    def wide(i: int):
        if dtype in _COMPLEX and result.is_complex():  # complex: computed in complex128 and rounded
            one = _run_columns(torch, overload, tuple(c[i : i + 1] for c in inputs.columns), "complex128", None, scalars, names)
            return _values(torch, one.to(result.dtype))[0] if one.is_complex() else None
        if dtype not in _REAL_FLOATING or not result.is_floating_point():
            return None
        one = _run_columns(torch, overload, tuple(c[i : i + 1] for c in inputs.columns), "float64", None, scalars, names)
        return _values(torch, one.to(result.dtype))[0] if one.is_floating_point() else None

    def span(i: int):
        x = inputs.columns[0][i] if len(inputs.columns) == 1 else None
        if dtype not in _REAL_FLOATING or not isinstance(x, float) or not math.isfinite(x):
            return None
        # halfway to each neighbour: exact in float64 for a float, half or bfloat operand
        around = tuple((x + next_float(x, inputs.metal_type, up)) / 2 for up in (False, True))
        two = _run_columns(torch, overload, (around,), "float64", None, scalars, names)
        return _values(torch, two) if two.is_floating_point() else None

    return Expected(_values(torch, result), TORCH_TO_METAL.get(out_name, out_name), note, alone, wide, span)


def _run_columns(torch, overload, columns: tuple, compute_in: str, dtype: str | None = None,
                 scalars: dict | None = None, names: tuple[str, ...] = (), strided: bool = False):
    tensors = [_tensor(torch, c, compute_in) for c in columns]
    if strided:  # every other element of a tensor twice as long: not contiguous
        tensors = [torch.stack([t, t], dim=-1)[..., 0] for t in tensors]
    if names:
        result = overload(**dict(zip(names, tensors)), **(scalars or {}))
    else:
        result = overload(*tensors, **(scalars or {}))
    if dtype is not None and compute_in != dtype and result.dtype == getattr(torch, compute_in):
        result = result.to(getattr(torch, dtype))
    return result


def _values(torch, result) -> tuple:
    if result.is_complex():
        return tuple(result.to(torch.complex128).tolist())
    if result.is_floating_point():
        return tuple(result.to(torch.float64).tolist())
    return tuple(int(v) for v in result.tolist())


def _round(value, out_type: str):
    """A double-precision reference value as the kernel's output type holds it (overflow gives inf)."""
    if out_type in COMPONENT:
        component = ROUND[COMPONENT[out_type]]
        value = complex(value)
        return complex(component(value.real), component(value.imag))
    if out_type in ROUND:
        return ROUND[out_type](float(value))
    return value


def catalog_reference(op: str) -> tuple[Reference | None, str]:
    """The catalog's Python reference for `op`, or None and why not."""

    entry = lookup(op)
    if entry is None or entry.op not in REFERENCES:
        return None, f"the catalog has no reference for {op}"
    func = REFERENCES[entry.op]
    takes_kind = entry.op in KIND_ARGUMENT

    def compute(inputs: Inputs, out_type: str | None) -> Expected:
        out = out_type or inputs.metal_type
        to_float = kind(inputs.metal_type) in ("int", "uint", "bool") and kind(out) == "float"
        values = []
        failures = 0
        for i in range(inputs.count):
            args = tuple(float(a) for a in inputs.case(i)) if to_float else tuple(
                int(a) if kind(inputs.metal_type) in ("int", "uint", "bool") else a for a in inputs.case(i))
            try:
                values.append(_round(func(*args, inputs.metal_type) if takes_kind else func(*args), out))
            except (OverflowError, ValueError, ZeroDivisionError):
                values.append(None)  # outside what the Python reference can evaluate
                failures += 1
        note = f"{failures} cases the Python reference cannot evaluate (overflow in double) not compared" if failures else ""
        return Expected(tuple(values), out, note)

    source = func.__module__.replace(".", "/") + ".py"  # where the reference is written, as the file is named
    return Reference(f"catalog: {func.__name__} ({source})", compute), ""
