"""The Scalars `try` passes to alpha and params kernels.

An alpha kernel's functor takes one value besides its tensors (`f(x, alpha)`), typed as its
registration's alpha type (`REGISTER_UNARY_ALPHA_OP(logit, long, float, float)`: float); a params
kernel's takes a struct (`f(x, SoftplusParams_float params)`) that the host fills from the stub's
parameters (`SoftplusParams<scalar_t> params{beta.to<scalar_t>(), threshold.to<scalar_t>()}`).

`try` samples the schema's scalar arguments (`scalar_sets`: the defaults, then each argument varied
alone), gives torch's CPU op those values, and gives the kernel what the host would: each field as
the host's initialiser computes it from the stub's parameters (`kernel_values`), converted to the
field's Metal type as `Scalar::to<T>()` does (integers truncate; a value out of an integer type's
range is refused there, and so is that scalar set for that dtype here).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

from mpsgen.commands.tryop.reference import schema_type
from mpsgen.commands.tryop.values import COMPONENT, KINDS, ROUND, float32_bits, int_range, kind
from mpsgen.errors import MpsgenError
from mpsgen.facts.params import schema_names
from mpsgen.model import Location
from mpsgen.read.cpp import mask_code, match_brace, split_top_level
from mpsgen.read.stubcall import NotEvaluable, evaluate

# What the stub receives for an optional argument left unset, where the ATen function between the
# schema and the stub substitutes a value and the checkout has no .cpp to read it from (a wheel):
# `logit` passes `Scalar(eps ? eps.value() : -1.0)`. With the .cpp, the call is read and evaluated.
NONE_AS = {("logit", "eps"): -1.0}

# at::Reduction's enumerators (ATen/core/Reduction.h), which the losses' shared functions compare with.
REDUCTION = {"Reduction::None": 0, "Reduction::Mean": 1, "Reduction::Sum": 2, "at::Reduction::None": 0,
             "at::Reduction::Mean": 1, "at::Reduction::Sum": 2}

# Iterator operands (indices into the op's tensor arguments) where the op's TensorIterator does not
# take its tensors one for one (facts of ATen's meta functions, Activation.cpp): threshold adds
# `self` twice (input and other); threshold_backward and leaky_relu_backward build it from
# (self / self_or_result, grad_output), the reverse of their schema's order; the losses' backward
# functions (Loss.cpp) build theirs from (input, target, grad_output), grad_output last.
ITERATOR_OPERANDS = {"threshold": (0, 0), "threshold_backward": (1, 0), "leaky_relu_backward": (1, 0),
                     "mse_loss_backward": (1, 2, 0), "huber_loss_backward": (1, 2, 0),
                     "smooth_l1_loss_backward": (1, 2, 0),
                     # the MPS functions build (self, grad_output), as the CUDA ones do (no buffer)
                     "log_sigmoid_backward": (1, 0)}

# Sample values per argument kind, each tried with the other arguments at their base value.
_SCALAR_VARIANTS = (2.0, -1.0, 0.0)
# a double (huber's delta, smooth_l1's beta): the edges too, tiny and huge (a set the CPU op refuses,
# delta <= 0, is reported skipped with its message)
_DOUBLE_VARIANTS = (2.0, -1.0, 0.0, 1e-6, 1e6)
_OPTIONAL_VARIANTS = (None, 1e-6, 0.25)
# Values for arguments without a default (threshold's threshold and value), in argument order.
_REPRESENTATIVE = (0.5, -2.0, 3.0, -0.25)

_SIZES = {"float": 4, "half": 2, "bfloat": 2, "long": 8, "int": 4, "short": 2, "char": 1, "uchar": 1, "bool": 1}
_STRUCT_FORMAT = {"float": "<f", "half": "<e", "long": "<q", "int": "<i", "short": "<h", "char": "<b", "uchar": "<B",
                  "bool": "<?"}


@dataclass(frozen=True)
class ScalarArg:
    name: str
    type: str  # the schema's type: Scalar, float?, float, bool, int
    default: object
    has_default: bool


@dataclass(frozen=True)
class ScalarSet:
    """One choice of the op's scalar arguments: what torch's CPU op is called with."""

    values: tuple[tuple[str, object], ...]  # (schema argument, value), in schema order

    @property
    def label(self) -> str:
        return ", ".join(f"{name}={_show(v)}" for name, v in self.values)

    def as_dict(self) -> dict:
        return dict(self.values)


def _show(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def schema_scalars(schema) -> tuple[ScalarArg, ...]:
    """The non-tensor, non-out arguments of a torch `FunctionSchema`, with their defaults."""

    found = []
    for a in schema.arguments:
        type_ = schema_type(a)
        if type_.startswith("Tensor") or a.is_out:
            continue
        has = a.has_default_value()
        found.append(ScalarArg(a.name, type_, a.default_value if has else None, has))
    return tuple(found)


def _variants(arg: ScalarArg, strings: dict | None = None) -> tuple:
    if arg.type == "bool":
        return (True, False)
    if arg.type.endswith("?"):
        return _OPTIONAL_VARIANTS
    if arg.name == "reduction":
        return tuple(sorted(set(REDUCTION.values())))
    if arg.type == "int":
        return (2, -1, 0)
    if arg.type == "str":
        return tuple((strings or {}).get(arg.name, ()))
    if arg.type == "float":
        return _DOUBLE_VARIANTS
    return _SCALAR_VARIANTS


def call_reads(call, args) -> set[str] | None:
    """The schema arguments whose values reach the stub through the shared function's call (None:
    no call read, every argument does)."""
    if call is None:
        return None
    renamed = schema_names(call, tuple((a.type, a.name) for a in args))
    return {renamed.get(n, n) for a in call.args for n in a.reads}


def scalar_sets(op: str, args: tuple[ScalarArg, ...], call=None, strings: dict | None = None,
                carried: tuple[ScalarArg, ...] | None = None) -> tuple[ScalarSet, ...]:
    """The defaults (representative values for arguments without one), then each argument alone
    through its variants (a negative, zero; None and a small and a large eps for an optional
    float; each reduction; each string an enum helper takes, `strings`). An optional argument is
    left None only where the stub's value for None is known (the call read, else `NONE_AS`). An
    argument the stub never receives (a forward loss's `reduction`, which the shared function
    applies after the kernel) is held at the value leaving the result elementwise: with no call read
    (a checkout without the .cpp), the arguments the host parameters carry (`carried`, from
    `host_arguments`) are those reaching it."""
    reaching = call_reads(call, args)
    if reaching is None and carried is not None:
        reaching = {a.name for a in carried}
    base = []
    spare = iter(_REPRESENTATIVE)
    for arg in args:
        if reaching is not None and arg.name not in reaching and arg.name == "reduction":
            base.append((arg.name, REDUCTION["Reduction::None"]))
            continue
        if arg.name == "reduction" and not arg.has_default:
            base.append((arg.name, REDUCTION["Reduction::Mean"]))
            continue
        if arg.type == "str" and not arg.has_default and (strings or {}).get(arg.name):
            base.append((arg.name, strings[arg.name][0]))
            continue
        if arg.has_default:
            value = arg.default
            if isinstance(value, int) and not isinstance(value, bool) and arg.type != "int":
                value = float(value)
        else:
            value = False if arg.type == "bool" else next(spare)
        base.append((arg.name, value))
    sets = [ScalarSet(tuple(base))]
    for k, arg in enumerate(args):
        if reaching is not None and arg.name not in reaching:
            continue
        for v in _variants(arg, strings):
            if v is None and arg.type.endswith("?") and call is None and (op, arg.name) not in NONE_AS:
                continue
            values = list(base)
            if values[k][1] == v:
                continue
            values[k] = (arg.name, v)
            candidate = ScalarSet(tuple(values))
            if candidate not in sets:
                sets.append(candidate)
    return tuple(sets)


# ---- what the kernel receives ---------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One value the functor receives besides its tensors: alpha itself, or one struct field."""

    name: str  # "alpha", or the struct field's name
    type: str  # its Metal type ("T" resolved)
    source: str  # the host parameter it is computed from
    how: str  # "value" | "has_value" | "value_or"
    fallback: float = 0.0  # value_or: the value when the parameter is unset


@dataclass(frozen=True)
class KernelScalars:
    """How the host turns the stub's parameters into the functor's extra argument."""

    struct: str  # "" for an alpha kernel, else the struct template's name (SoftplusParams)
    fields_by_type: dict  # Metal input type -> (alpha or params type name, tuple[Field, ...])
    host_params: tuple[str, ...]  # the host function's parameter names after the iterator


_PARAM_NAME = re.compile(r"(\w+)\s*$")
_TO = re.compile(r"^(\w+)\s*\.\s*to\s*<[^<>]*>\s*\(\s*\)$")
_CAST = re.compile(r"^static_cast\s*<[^<>]*>\s*\(\s*(\w+)\s*\)$")
_HAS = re.compile(r"^(\w+)\s*\.\s*has_value\s*\(\s*\)$")
_VALUE_OR = re.compile(r"^(\w+)\s*\.\s*has_value\s*\(\s*\)\s*\?\s*static_cast\s*<[^<>]*>\s*\(\s*\*\s*\1\s*\)\s*:\s*(.+)$")
_NUMBER = re.compile(r"^(?:\w+\s*\(\s*)?(-?[0-9.]+(?:e-?\d+)?)f?\s*\)?$")
_EXEC_ALPHA = re.compile(r"\bexec_\w+_kernel\s*\(\s*\w+\s*,\s*\"[^\"]*\"\s*,\s*(\w+)\s*[,)]")


def host_param_names(params: tuple[str, ...]) -> tuple[str, ...]:
    names = []
    for p in params[1:]:
        m = _PARAM_NAME.search(p.replace("&", " ").replace("*", " "))
        names.append(m.group(1) if m else p)
    return tuple(names)


def _fallback(text: str, field_type: str) -> float:
    text = text.strip()
    m = _NUMBER.match(text)
    if m:
        return float(m.group(1))
    if "numeric_limits" in text and ("max" in text or "lowest" in text):
        top = _type_max(field_type)
        return top if "max" in text else -top if kind(field_type) == "float" else int_range(field_type)[0]
    raise ValueError(text)


def _type_max(metal_type: str) -> float:
    if kind(metal_type) == "float":
        return {"float": 3.4028234663852886e38, "half": 65504.0, "bfloat": 3.3895313892515355e38}[metal_type]
    return float(int_range(metal_type)[1])


def struct_fields(source: str, struct_name: str) -> tuple[tuple[str, str], ...] | None:
    """(type as written, name) of each field of `template <typename T> struct NAME { ... };` in
    `source` (the bundled shader source: the kernel file with its headers)."""
    masked = mask_code(source)
    m = re.search(rf"\bstruct\s+{re.escape(struct_name)}\s*\{{", masked)
    if m is None:
        return None
    close = match_brace(masked, m.end() - 1)
    if close < 0:
        return None
    fields = []
    for decl in masked[m.end() : close].split(";"):
        decl = " ".join(decl.split())
        fm = re.fullmatch(r"(?:const )?(\w+) (\w+)", decl)
        if fm:
            fields.append((fm.group(1), fm.group(2)))
    return tuple(fields)


def read_kernel_scalars(source: str, host_body: str, host_params: tuple[str, ...], alpha_types: dict,
                        where: Location) -> KernelScalars:
    """From the host function (its body and parameters) and the registrations' alpha types
    (`{input type: alpha type}`), how each registered type's extra argument is filled."""
    names = host_param_names(host_params)
    masked = mask_code(host_body)
    params_types = {t: a for t, a in alpha_types.items() if re.fullmatch(r"\w+_(?:float|half|bfloat|long|int|short|char|uchar|bool)", a) and a not in KINDS}
    if not params_types:
        m = _EXEC_ALPHA.search(masked)
        if m is None or m.group(1) not in names:
            raise MpsgenError("try cannot tell which of the host function's parameters the kernel's alpha is",
                              location=where, hint="try reads `lib.exec_*_kernel(iter, \"name\", PARAM)` with PARAM a parameter of the host function")
        return KernelScalars("", {t: (a, (Field("alpha", a, m.group(1), "value"),)) for t, a in alpha_types.items()}, names)
    struct_name = next(iter(params_types.values())).rsplit("_", 1)[0]
    init = re.search(rf"\b{re.escape(struct_name)}\s*<[^<>]*>\s*\w+\s*\{{", masked)
    if init is None:
        raise MpsgenError(f"try cannot find where the host fills {struct_name}", location=where,
                          hint=f"try reads `{struct_name}<scalar_t> params{{...}};` in the host function")
    close = match_brace(masked, init.end() - 1)
    items = [" ".join(i.split()) for i in split_top_level(host_body[init.end() : close], "(<[{", ")>]}")]
    declared = struct_fields(source, struct_name)
    if declared is None or len(declared) != len(items):
        raise MpsgenError(f"try cannot match the host's {len(items)} initialisers of {struct_name} with its fields",
                          location=where, hint=f"declare {struct_name} in a header the kernel file includes")
    by_type = {}
    for metal_type, params_type in params_types.items():
        t = params_type.rsplit("_", 1)[1]
        fields = []
        for (written, field), item in zip(declared, items):
            field_type = t if written == "T" else written
            if field_type not in KINDS:
                raise MpsgenError(f"try cannot fill {struct_name}'s field `{written} {field}`", location=where,
                                  hint="try fills fields of the struct's T, bool and Metal scalar types")
            for pattern, how in ((_TO, "value"), (_CAST, "value"), (_HAS, "has_value")):
                m = pattern.match(item)
                if m:
                    fields.append(Field(field, field_type, m.group(1), how))
                    break
            else:
                m = _VALUE_OR.match(item)
                if item in names:
                    fields.append(Field(field, field_type, item, "value"))
                elif m:
                    try:
                        fallback = _fallback(m.group(2), field_type)
                    except ValueError:
                        raise MpsgenError(f"try cannot evaluate `{m.group(2)}`, {struct_name}.{field}'s value when "
                                          f"{m.group(1)} is unset", location=where) from None
                    fields.append(Field(field, field_type, m.group(1), "value_or", fallback))
                else:
                    raise MpsgenError(f"try cannot evaluate the host's initialiser `{item}` of {struct_name}.{field}",
                                      location=where, hint="try evaluates `p.to<scalar_t>()`, `static_cast<scalar_t>(p)`, "
                                      "`p`, `p.has_value()` and `p.has_value() ? static_cast<scalar_t>(*p) : N`")
            if fields[-1].source not in names:
                raise MpsgenError(f"{struct_name}.{field} is filled from `{fields[-1].source}`, not a parameter of the "
                                  "host function", location=where)
        by_type[metal_type] = (params_type, tuple(fields))
    return KernelScalars(struct_name, by_type, names)


def host_arguments(args: tuple[ScalarArg, ...], host_names: tuple[str, ...], call=None) -> tuple[ScalarArg, ...] | None:
    """The schema argument each host parameter carries: by name where every host parameter is named
    after one (leaky_relu_backward's stub takes negative_slope, not self_is_result), else in order
    when the counts agree; None when neither holds. With the shared function's call read, each host
    parameter is that call's argument (computed by `stub_values`) and every schema argument counts."""
    if call is not None and len(call.args) == len(host_names):
        return tuple(args)
    by_name = {a.name: a for a in args}
    if all(n in by_name for n in host_names):
        return tuple(by_name[n] for n in host_names)
    # in order, a loss's `int reduction` aside: the shared function's own (it reduces after the
    # kernel, or computes another value from it: mse_loss_backward's norm), never a host parameter
    ordered = tuple(a for a in args if not _is_reduction(a))
    return ordered if len(ordered) == len(host_names) else None


def _is_reduction(arg: ScalarArg) -> bool:
    return arg.name == "reduction" and arg.type == "int"


def stub_values(op: str, args: tuple[ScalarArg, ...], chosen: ScalarSet, host_names: tuple[str, ...],
                call=None, numel: int | None = None, enums: dict | None = None) -> dict | str:
    """The host function's parameters for a scalar set (`args`: `host_arguments`): with the shared
    function's call read, each of its arguments evaluated as the function computes it (`numel`: the
    input's element count, `enums`: an enum helper's strings -> values), else the schema argument,
    None replaced where ATen substitutes a value (`NONE_AS`); a string saying why they cannot be had."""
    values = chosen.as_dict()
    if call is not None and len(call.args) == len(host_names):
        renamed = schema_names(call, tuple((a.type, a.name) for a in args))
        back = {schema: cpp for cpp, schema in renamed.items()}
        env = {back.get(name, name): v for name, v in values.items()}
        # the function's tensors (`input.numel()`: the element count `numel` stands for)
        env.update({n: None for type_, n in call.parameters if "Tensor" in type_ and n not in env})
        helpers = {helper: (lambda s, table=table: table[s]) for helper, table in (enums or {}).items()}
        out = {}
        for name, arg in zip(host_names, call.args):
            try:
                out[name] = evaluate(arg.value, env, numel, REDUCTION, helpers,
                                     frozenset(n for type_, n in call.parameters if "optional" in type_))
            except (NotEvaluable, KeyError, ZeroDivisionError):
                return f"try cannot evaluate `{arg.value}` ({call.function} at {call.where})"
        return out
    out = {}
    for name, arg in zip(host_names, args):
        v = values[arg.name]
        if v is None and (op, arg.name) in NONE_AS:
            v = NONE_AS[(op, arg.name)]
        out[name] = v
    return out


def convert(value, metal_type: str):
    """`Scalar::to<T>()` of a Python value: rounded for float types, truncated for integers;
    None when the value does not fit an integer type (Scalar::to refuses it)."""
    if isinstance(value, bool):
        value = int(value)
    k = kind(metal_type)
    if k == "float":
        return ROUND[metal_type](float(value))
    if k == "complex":  # a real value: its real part, rounded to the component type (0.1 is not 0)
        return ROUND[COMPONENT[metal_type]](float(value))
    if k == "bool":
        return 1 if value else 0
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    v = int(value)
    lo, hi = int_range(metal_type)
    return v if lo <= v <= hi else None


def field_values(fields: tuple[Field, ...], host_values: dict | str) -> tuple | str:
    """Each field's value for the host parameters `host_values`, or why they cannot be had."""
    if isinstance(host_values, str):
        return host_values
    out = []
    for f in fields:
        raw = host_values.get(f.source)
        if f.how == "has_value":
            out.append(1 if raw is not None else 0)
            continue
        if f.how == "value_or" and raw is None:
            raw = f.fallback
        if raw is None:
            return f"{f.source} is None and the host passes it as a value"
        v = convert(raw, f.type)
        if v is None:
            return f"{f.source}={_show(raw)} does not fit {f.type} (Scalar::to refuses it)"
        out.append(v)
    return tuple(out)


def pack(fields: tuple[Field, ...], values: tuple) -> bytes:
    """The bytes of the struct (or of alpha) as Metal lays it out: each field at its natural
    alignment, the size rounded up to the largest alignment."""
    data = bytearray()
    align = 1
    for f, v in zip(fields, values):
        size = _SIZES[f.type]
        align = max(align, size)
        data += b"\0" * (-len(data) % size)
        if f.type == "bfloat":
            data += struct.pack("<H", float32_bits(v) >> 16)
        else:
            data += struct.pack(_STRUCT_FORMAT[f.type], v)
    data += b"\0" * (-len(data) % align)
    return bytes(data)


def with_boundaries(sets: tuple[ScalarSet, ...], carried: tuple[ScalarArg, ...], values: list[float]) -> tuple[ScalarSet, ...]:
    """`sets` and, for an alpha kernel whose host passes one numeric schema argument, the first set
    with that argument at each of `values` (the functor's comparison boundaries on its alpha:
    `branchvalues.scalar_boundaries`)."""
    numeric = [a for a in carried if a.type in ("Scalar", "Scalar?", "float", "float?")]
    if not sets or not values or len(numeric) != 1:
        return sets
    arg = numeric[0]
    out = list(sets)
    for v in values:
        candidate = ScalarSet(tuple((name, float(v) if name == arg.name else old) for name, old in sets[0].values))
        if candidate not in out:
            out.append(candidate)
    return tuple(out)
