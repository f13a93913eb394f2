"""What mpsgen knows of a params op (a stub with several scalars): its struct's fields from the
stub and the schema (`ParamsSpec`), and whether the checkout can launch it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.facts.catalog import lookup
from mpsgen.facts.launcher import ternary_params_launcher
from mpsgen.model import Location
from mpsgen.read.checkout import KERNELS_DIR, MPS_DIR, NATIVE_DIR, Texts
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.stubcall import StubCall
from mpsgen.read.stubs import Stub

EXEC_WITH_PARAMS = {1: "exec_unary_kernel_with_params", 2: "exec_binary_kernel_with_params",
                    3: "exec_ternary_kernel_with_params"}


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
SCHEMA_KINDS = {"Scalar": "scalar", "bool": "bool", "float?": "optional", "float": "double", "str": "enum"}

# (stub kind, schema kind) pairs where the shared function converts one into the other on the way
# (read at its call of the stub): a float? built into a Scalar (logit's `Scalar(eps ? *eps : -1.0)`),
# a float passed as a Scalar, a string made an enum by a header's helper (gelu's approximate).
CONVERTED = {("scalar", "optional"), ("scalar", "double"), ("double", "scalar"), ("enum", "enum")}


# What a `double` field (huber's delta, smooth_l1's beta) is held as in the struct: float, the opmath
# type of every floating input, whatever T is. A half field would overflow at delta = 1e6 and round
# 1e-6 to 1.01e-6, where the CPU kernels compute with the double at opmath precision; 2.15's
# kernels/Activation.h holds softplus's values so ("kept at opmath (float) precision for every input
# dtype"). Metal and the host compiler both read the struct, so the type is one both spell alike.
OPMATH_DOUBLE = "float"


KIND_WORDS = {"scalar": "Scalar", "bool": "bool", "optional": "optional<double>", "double": "double",
              "enum": "enum made from a string"}


@dataclass(frozen=True)
class EnumType:
    """An `enum class` of the checkout's ATen/native headers a stub takes (gelu's GeluType), with
    the strings its helper makes it from (`get_gelutype_enum`: "none" -> None)."""

    name: str
    enumerators: tuple[tuple[str, int], ...]
    location: Location
    helper: str = ""  # the function making it from a string
    strings: tuple[tuple[str, str], ...] = ()  # (string, enumerator)

    def value(self, enumerator: str) -> int:
        return dict(self.enumerators)[enumerator]


_ENUM = re.compile(r"\benum\s+class\s+(\w+)\s*(?::\s*[\w:]+\s*)?\{([^{}]*)\}")


def checkout_enums(ws: Texts) -> dict[str, EnumType]:
    """Every `enum class` of `aten/src/ATen/native/*.h`, with the string helper that returns it."""
    checkout = getattr(ws, "checkout", ws)
    found: dict[str, EnumType] = {}
    for rel in checkout.glob(NATIVE_DIR, "*.h"):
        for enum in _header_enums(rel, ws.read(rel)):
            if enum.name not in found or (enum.strings and not found[enum.name].strings):
                # a header that only declares the string helper (2.13's Activation.h) yields to one defining it
                found[enum.name] = enum
    return found


@functools.lru_cache(maxsize=512)
def _header_enums(rel: str, text: str) -> tuple[EnumType, ...]:
    """The `enum class`es of one header's text (kept by text: every candidate of a scan asks again)."""
    if "enum" not in text:
        return ()
    masked = mask_code(text)
    enums = []
    for m in _ENUM.finditer(masked):
        value, enumerators = -1, []
        for item in m.group(2).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, given = item.partition("=")
            value = int(given.strip(), 0) if given.strip() else value + 1
            enumerators.append((name.strip(), value))
        helper, strings = "", ()
        fn = re.search(rf"\b{m.group(1)}\s+(\w+)\s*\([^)]*string[^)]*\)\s*\{{", masked)
        if fn:
            close = match_brace(masked, fn.end() - 1)
            body = text[fn.end() : close]
            pairs = re.findall(rf'"([^"]*)"\s*\)\s*\{{?\s*return\s+{m.group(1)}::(\w+)', body)
            helper, strings = fn.group(1), tuple(pairs)
        line = masked.count("\n", 0, m.start()) + 1
        enums.append(EnumType(m.group(1), tuple(enumerators), Location(rel, line), helper, strings))
    return tuple(enums)


@dataclass(frozen=True)
class ParamField:
    """One extra parameter of the stub, named after the schema argument it carries."""

    name: str
    kind: str  # scalar | bool | optional | double
    declared: str  # the stub's parameter type, e.g. `const Scalar&`
    default: str = "scalar_t(0)"  # optional only: the value when not given (C++ in scalar_t)
    default_known: bool = False  # the default comes from the catalog (the CPU kernel's), not a guess
    value: str = ""  # what the shared function passes (`reduction == Reduction::Mean ? 2. / input.numel() : 2.`)
    enum: EnumType | None = None  # an enum field: the enum the stub takes

    @property
    def struct_lines(self) -> tuple[str, ...]:
        if self.kind == "bool":
            return (f"bool {self.name};",)
        if self.kind == "enum":  # the enumerator's value: the Metal side has no such enum
            return (f"int {self.name};",)
        if self.kind == "optional":
            return (f"T {self.name};", f"bool has_{self.name};")
        if self.kind == "double":  # at opmath precision for every input type (`OPMATH_DOUBLE`)
            return (f"{OPMATH_DOUBLE} {self.name};",)
        return (f"T {self.name};",)

    @property
    def host_inits(self) -> tuple[str, ...]:
        """The struct's initialisers on the host, in the common dtype `scalar_t`."""
        if self.kind == "scalar":
            return (f"{self.name}.to<scalar_t>()",)
        if self.kind == "double":
            return (f"static_cast<{OPMATH_DOUBLE}>({self.name})",)
        if self.kind == "bool":
            return (self.name,)
        if self.kind == "enum":
            return (f"static_cast<int>({self.name})",)
        return (
            f"{self.name}.has_value() ? static_cast<scalar_t>(*{self.name}) : {self.default}",
            f"{self.name}.has_value()",
        )

    @property
    def expr_names(self) -> tuple[str, ...]:
        """Names an --expr may use for this field."""
        if self.kind == "enum" and self.enum is not None:
            return (self.name,) + tuple(f"{self.enum.name}::{e}" for e, _ in self.enum.enumerators)
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


def is_params_stub(stub: Stub, enums=()) -> bool:
    """An iterator and extra parameters that are Scalars, bools, doubles, optional doubles or enums
    of the checkout's headers (`enums`: their names), other than the single `const Scalar&`
    (alpha) form the plain kernels take."""
    extras = stub.params[1:]
    return (
        stub.returns == "void"
        and stub.iterator_type is not None
        and bool(extras)
        and extras != ("const Scalar&",)
        and all(p in STUB_KINDS or _enum_name(p) in enums for p in extras)
    )


def _enum_name(declared: str) -> str:
    return declared.removeprefix("const ").removesuffix("&").strip().split("::")[-1]


def camel_case(name: str) -> str:
    """`softplus_backward` -> `SoftplusBackward`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def family_header(kernel_file: str) -> str:
    """The params header of a kernel file's family: `ActivationKernel.metal` -> `kernels/Activation.h`."""
    stem = kernel_file.rsplit("/", 1)[-1].removesuffix(".metal")
    stem = stem.removesuffix("Kernel") or stem
    return f"{KERNELS_DIR}/{stem}.h"


def build_params(stub: Stub, entry, functor: str, kernel_file: str, arity: int,
                 defaults: dict[str, str] | None = None, call: StubCall | None = None,
                 enums: dict[str, EnumType] | None = None) -> ParamsSpec:
    """The params of `stub`, one field per parameter after the iterator, named after what carries
    it: the argument the shared function passes (`call`: `norm`, `delta`, logit's `eps`), else
    `entry`'s schema argument of that kind, matched in order (an argument of a kind the stub does not
    take, such as a loss's `int reduction`, is the shared function's own). A count or kind that does
    not match is refused (the stub and the schema disagree: mpsgen cannot guess)."""
    extras = stub.params[1:]
    enums = enums or {}
    args = [(type_, name) for type_, name, kwarg_only in entry.arguments
            if not type_.startswith("Tensor") and not (kwarg_only and "!" in type_)]
    schema = {name: type_ for type_, name in args}
    where = stub.type_location or stub.location
    kinds = [STUB_KINDS.get(declared) or ("enum" if _enum_name(declared) in enums else "") for declared in extras]
    if call is not None and len(call.args) == len(extras) and all(a.name for a in call.args):
        renamed = schema_names(call, args)

        def carried_name(a) -> str:
            # a local made from one parameter (gelu's `approximate_type = get_gelutype_enum(approximate)`)
            # is called by the schema's name, which --expr and try use
            name = renamed.get(a.name, a.name)
            if name not in schema and len(a.reads) == 1 and renamed.get(a.reads[0], a.reads[0]) in schema:
                return renamed.get(a.reads[0], a.reads[0])
            return name

        carried = [(schema.get(carried_name(a)), carried_name(a), a.value) for a in call.args]
    else:
        carried = _match_in_order(stub, entry, extras, kinds, args, where, call)
    fields = []
    for declared, kind, (type_, name, value) in zip(extras, kinds, carried):
        schema_kind = SCHEMA_KINDS.get(type_) if type_ is not None else None
        if type_ is not None and schema_kind != kind and (kind, schema_kind) not in CONVERTED:
            raise MpsgenError(
                f"{stub.name}'s parameter `{declared}` carries {entry.name}'s argument `{type_} {name}`, "
                f"which is not a {KIND_WORDS[kind]}",
                location=entry.location,
                hint="the stub and the schema must list the same scalars in the same order",
            )
        if kind == "optional" and type_ is None:
            raise MpsgenError(f"{stub.name}'s `{declared}` is passed `{value}`, not one of {entry.name}'s arguments",
                              location=call.location if call else where, hint="write the kernel by hand")
        known = name in (defaults or {})
        enum = enums.get(_enum_name(declared)) if kind == "enum" else None
        fields.append(ParamField(name, kind, declared, defaults[name] if known else "scalar_t(0)", known,
                                 value if value != name else "", enum))
    name = camel_case(functor)
    return ParamsSpec(f"{name}Params", tuple(fields), family_header(kernel_file),
                      f"REGISTER_{functor.upper()}_OP", arity)


def schema_names(call: StubCall, args) -> dict[str, str]:
    """The shared function's scalar parameters -> the schema arguments they are (in order; the C++
    names may differ: hardtanh_backward_out's `min` is the schema's `min_val`)."""
    scalars = [n for type_, n in call.parameters if "Tensor" not in type_]
    names = [n for _, n in args]
    return dict(zip(scalars, names)) if len(scalars) == len(names) else {}


def _match_in_order(stub: Stub, entry, extras, kinds, args, where, call) -> list[tuple[str, str, str]]:
    """Each stub parameter's schema argument, in order, skipping arguments of kinds the stub does
    not take; refused when they do not pair off."""
    pending = list(args)
    out = []
    takes = [a for a in args if a[0] in SCHEMA_KINDS]
    if (any(name == "reduction" for _, name in args) and len(extras) == len(takes) + 1
            and extras[0] in ("const Scalar&", "double")):
        # a loss's backward: its first parameter is the norm the shared function makes of
        # `reduction` (signature_fits' rule); with no call read, nothing names it, so it is `alpha`
        out.append((None, "alpha", "alpha"))
        extras, kinds = extras[1:], kinds[1:]
    for declared, kind in zip(extras, kinds):
        while pending and pending[0][0] not in SCHEMA_KINDS:  # `int reduction`: the function's own
            pending.pop(0)
        if not pending:
            shared = (f"; {call.function} at {call.where} passes {len(call.args)}" if call is not None else
                      " (no call of the stub in aten/src/ATen/native/*.cpp says what the shared function passes)")
            raise MpsgenError(
                f"{stub.name} takes {len(extras)} parameters besides the iterator ({', '.join(extras)}) but "
                f"{entry.name} has {len(args)} non-tensor arguments ({', '.join(n for _, n in args) or 'none'})"
                + shared,
                location=where,
                hint="pass --stub for the stub this overload goes through, or --overload for the matching overload",
            )
        type_, name = pending.pop(0)
        out.append((type_, name, name))
    if any(type_ in SCHEMA_KINDS for type_, _ in pending):
        rest = ", ".join(n for _, n in pending)
        raise MpsgenError(
            f"{stub.name} takes {len(extras)} parameters besides the iterator ({', '.join(extras)}) but "
            f"{entry.name} has {len(args)} non-tensor arguments ({', '.join(n for _, n in args)}); {rest} left over",
            location=where,
            hint="pass --stub for the stub this overload goes through, or --overload for the matching overload",
        )
    return out


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
            f"{op} is {arity}-ary with parameters ({stub.signature}); mpsgen generates unary, binary and ternary kernels",
            location=where,
            hint="write the kernel by hand",
        )
    if arity == 3 and not exec_with_params_available(ws, arity):
        # mpsgen adds the launcher (`mpsgen.edit.launcher`) where the checkout's kernels and library
        # say how; otherwise the piece missing is named
        launcher = ternary_params_launcher(ws)
        if isinstance(launcher, str):
            raise MpsgenError(
                f"{stub.name} ({stub.signature}) passes a ternary kernel several values, which needs a params struct "
                f"and MetalShaderLibrary::exec_ternary_kernel_with_params; this checkout's "
                f"{MPS_DIR}/MetalShaderLibrary.h does not declare it{_ternary_launchers(ws)}, and mpsgen cannot add "
                f"it: {launcher}",
                location=where,
                hint="write the kernel by hand, or add exec_ternary_kernel_with_params to the library first",
            )
    if arity != 3 and not exec_with_params_available(ws, arity):
        raise MpsgenError(
            f"{stub.name} ({stub.signature}) needs MetalShaderLibrary::{EXEC_WITH_PARAMS[arity]}, which this "
            f"checkout's {MPS_DIR}/MetalShaderLibrary.h does not declare",
            location=where,
            hint="update the checkout, or write the kernel by hand",
        )
    return arity


def _ternary_launchers(ws: Texts) -> str:
    """What the checkout's library launches ternary kernels with (its exec_ternary_kernel's alpha)."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    if not ws.exists(rel):
        return ""
    masked = mask_code(ws.read(rel))
    m = re.search(r"\bexec_ternary_kernel\s*\(", masked)
    if m is None:
        return " (nor exec_ternary_kernel)"
    close = match_brace(masked, m.end() - 1)
    if "alpha" in masked[m.end() : close]:
        return " (its exec_ternary_kernel takes one Scalar alpha)"
    return " (its exec_ternary_kernel takes no scalar)"


def resolve_params(op: str, stub: Stub, entry, functor: str, kernel_file: str, arity: int,
                   call: StubCall | None = None, enums: dict[str, EnumType] | None = None) -> ParamsSpec:
    """The ParamsSpec of an op whose stub is a params stub (optional defaults from the catalog)."""

    catalogued = lookup(functor) or lookup(op)
    defaults = dict(catalogued.defaults) if catalogued is not None else {}
    return build_params(stub, entry, functor, kernel_file, arity, defaults, call, enums)


def ternary_params_hint(ws) -> str:
    """What to say about a ternary op with scalars, from what this checkout's library declares."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    if ws.exists(rel) and re.search(r"\bexec_ternary_kernel_with_params\s*\(", mask_code(ws.read(rel))):
        return "this checkout has exec_ternary_kernel_with_params, which mpsgen does not generate kernels for yet: write the kernel by hand"
    return "this checkout's MetalShaderLibrary has no exec_ternary_kernel_with_params either: write the kernel by hand"
