"""What mpsgen knows of a params op (a stub with several scalars): its struct's fields from the
stub and the schema (`ParamsSpec`), and whether the checkout can launch it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.facts.catalog import lookup
from mpsgen.read.checkout import KERNELS_DIR, MPS_DIR, Texts
from mpsgen.read.cpp import mask_code
from mpsgen.read.stubs import Stub

EXEC_WITH_PARAMS = {1: "exec_unary_kernel_with_params", 2: "exec_binary_kernel_with_params"}


# Declared C++ parameter type (as `stubs.normalise_param` spells it) -> kind.
STUB_KINDS = {
    "const Scalar&": "scalar",
    "Scalar": "scalar",
    "const Scalar": "scalar",
    "bool": "bool",
    "const bool": "bool",
    "std::optional<double>": "optional",
    "optional<double>": "optional",
    "const std::optional<double>&": "optional",
    "double": "double",
}


# Schema argument type in native_functions.yaml -> kind.
SCHEMA_KINDS = {"Scalar": "scalar", "bool": "bool", "float?": "optional", "float": "double"}


KIND_WORDS = {"scalar": "Scalar", "bool": "bool", "optional": "optional<double>", "double": "double"}


@dataclass(frozen=True)
class ParamField:
    """One extra parameter of the stub, named after the schema argument it carries."""

    name: str
    kind: str  # scalar | bool | optional | double
    declared: str  # the stub's parameter type, e.g. `const Scalar&`
    default: str = "scalar_t(0)"  # optional only: the value when not given (C++ in scalar_t)
    default_known: bool = False  # the default comes from the catalog (the CPU kernel's), not a guess

    @property
    def struct_lines(self) -> tuple[str, ...]:
        if self.kind == "bool":
            return (f"bool {self.name};",)
        if self.kind == "optional":
            return (f"T {self.name};", f"bool has_{self.name};")
        return (f"T {self.name};",)

    @property
    def host_inits(self) -> tuple[str, ...]:
        """The struct's initialisers on the host, in the common dtype `scalar_t`."""
        if self.kind == "scalar":
            return (f"{self.name}.to<scalar_t>()",)
        if self.kind == "double":
            return (f"static_cast<scalar_t>({self.name})",)
        if self.kind == "bool":
            return (self.name,)
        return (
            f"{self.name}.has_value() ? static_cast<scalar_t>(*{self.name}) : {self.default}",
            f"{self.name}.has_value()",
        )

    @property
    def expr_names(self) -> tuple[str, ...]:
        """Names an --expr may use for this field."""
        return (self.name, f"has_{self.name}") if self.kind == "optional" else (self.name,)


@dataclass(frozen=True)
class ParamsSpec:
    """What a params op needs beyond a plain stub kernel."""

    struct: str  # SoftplusParams
    fields: tuple[ParamField, ...]
    header: str  # aten/src/ATen/native/mps/kernels/Activation.h
    macro: str  # REGISTER_SOFTPLUS_OP
    arity: int  # operands of the functor besides the params (the iterator's inputs)
    groups: tuple[str, ...] = ("float",)  # dtype groups registered (known once the body is chosen)

    @property
    def include(self) -> str:
        return self.header.removeprefix("aten/src/")

    @property
    def expr_names(self) -> tuple[str, ...]:
        return tuple(n for f in self.fields for n in f.expr_names)


def is_params_stub(stub: Stub) -> bool:
    """An iterator and extra parameters that are Scalars, bools or optional doubles, other than the
    single `const Scalar&` (alpha) form the plain kernels take."""
    extras = stub.params[1:]
    return (
        stub.returns == "void"
        and stub.iterator_type is not None
        and bool(extras)
        and extras != ("const Scalar&",)
        and all(p in STUB_KINDS for p in extras)
    )


def camel_case(name: str) -> str:
    """`softplus_backward` -> `SoftplusBackward`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def family_header(kernel_file: str) -> str:
    """The params header of a kernel file's family: `ActivationKernel.metal` -> `kernels/Activation.h`."""
    stem = kernel_file.rsplit("/", 1)[-1].removesuffix(".metal")
    stem = stem.removesuffix("Kernel") or stem
    return f"{KERNELS_DIR}/{stem}.h"


def build_params(stub: Stub, entry, functor: str, kernel_file: str, arity: int,
                 defaults: dict[str, str] | None = None) -> ParamsSpec:
    """The params of `stub` named after `entry`'s schema arguments, matched in order; a count or
    kind that does not match is refused (the stub and the schema disagree: mpsgen cannot guess)."""
    extras = stub.params[1:]
    args = [(type_, name) for type_, name, kwarg_only in entry.arguments
            if not type_.startswith("Tensor") and not (kwarg_only and "!" in type_)]
    where = stub.type_location or stub.location
    if len(args) != len(extras):
        raise MpsgenError(
            f"{stub.name} takes {len(extras)} parameters besides the iterator ({', '.join(extras)}) but "
            f"{entry.name} has {len(args)} non-tensor arguments ({', '.join(n for _, n in args) or 'none'})",
            location=where,
            hint="pass --stub for the stub this overload goes through, or --overload for the matching overload",
        )
    fields = []
    for declared, (type_, name) in zip(extras, args):
        kind = STUB_KINDS[declared]
        if SCHEMA_KINDS.get(type_) != kind:
            raise MpsgenError(
                f"{stub.name}'s parameter `{declared}` carries {entry.name}'s argument `{type_} {name}`, "
                f"which is not a {KIND_WORDS[kind]}",
                location=entry.location,
                hint="the stub and the schema must list the same scalars in the same order",
            )
        known = name in (defaults or {})
        fields.append(ParamField(name, kind, declared, defaults[name] if known else "scalar_t(0)", known))
    name = camel_case(functor)
    return ParamsSpec(f"{name}Params", tuple(fields), family_header(kernel_file),
                      f"REGISTER_{functor.upper()}_OP", arity)


def exec_with_params_available(ws: Texts, arity: int) -> bool:
    """Whether the checkout's MetalShaderLibrary declares the `_with_params` launcher for `arity`."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    if arity not in EXEC_WITH_PARAMS or not ws.exists(rel):
        return False
    return re.search(rf"\b{EXEC_WITH_PARAMS[arity]}\s*\(", mask_code(ws.read(rel))) is not None


def params_arity(ws: Texts, op: str, stub: Stub, functor: str, schema_arity: int) -> int:
    """The functor's operand count for a params stub, refused when the checkout has no launcher for
    it. A catalog body that declares its params gives it (threshold's iterator holds self twice: `x`
    and `other`); otherwise the schema's tensor inputs do."""

    catalogued = lookup(functor) or lookup(op)
    arity = catalogued.arity if catalogued is not None and catalogued.params else schema_arity
    where = stub.type_location or stub.location
    if arity not in EXEC_WITH_PARAMS:
        raise MpsgenError(
            f"{op} is {'ternary' if arity == 3 else f'{arity}-ary'} with parameters ({stub.signature}), and this checkout's "
            "MetalShaderLibrary has no exec_ternary_kernel_with_params",
            location=where,
            hint="a ternary kernel with several scalars has to be written by hand",
        )
    if not exec_with_params_available(ws, arity):
        raise MpsgenError(
            f"{stub.name} ({stub.signature}) needs MetalShaderLibrary::{EXEC_WITH_PARAMS[arity]}, which this "
            f"checkout's {MPS_DIR}/MetalShaderLibrary.h does not declare",
            location=where,
            hint="update the checkout, or write the kernel by hand",
        )
    return arity


def resolve_params(op: str, stub: Stub, entry, functor: str, kernel_file: str, arity: int) -> ParamsSpec:
    """The ParamsSpec of an op whose stub is a params stub (optional defaults from the catalog)."""

    catalogued = lookup(functor) or lookup(op)
    defaults = dict(catalogued.defaults) if catalogued is not None else {}
    return build_params(stub, entry, functor, kernel_file, arity, defaults)


def ternary_params_hint(ws) -> str:
    """What to say about a ternary op with scalars, from what this checkout's library declares."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    if ws.exists(rel) and re.search(r"\bexec_ternary_kernel_with_params\s*\(", mask_code(ws.read(rel))):
        return "this checkout has exec_ternary_kernel_with_params, which mpsgen does not generate kernels for yet: write the kernel by hand"
    return "this checkout's MetalShaderLibrary has no exec_ternary_kernel_with_params either: write the kernel by hand"
