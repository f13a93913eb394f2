"""Resolve an operator name into an OpSpec: its yaml entries, the dispatch lines to edit, its stub
and what kind of kernel it needs."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cached_property

from mpsgen.checkout import (
    KERNELS_DIR,
    MPS_DIR,
    NATIVE_FUNCTIONS,
    OPERATIONS_DIR,
    Checkout,
    Workspace,
)
from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.nfyaml import DispatchLine, NativeFunctions, YamlEntry, validate_entry
from mpsgen.params import ParamsSpec, is_params_stub, params_arity, resolve_params, ternary_params_hint
from mpsgen.stubs import Stub, find_stub, read_stubs

# Where a stub's header sends its kernel and host code.
FAMILY_FILES = {
    "BinaryOps.h": ("BinaryKernel.metal", "BinaryKernel.mm"),
    "UnaryOps.h": ("UnaryKernel.metal", "UnaryKernel.mm"),
    "Activation.h": ("ActivationKernel.metal", "ActivationKernel.mm"),
    "PointwiseOps.h": ("PointwiseOps.metal", "PointwiseOps.mm"),
}

SUPPORTED_SIGNATURES = (
    "void(*)(TensorIteratorBase&), void(*)(TensorIterator&), "
    "either with one `const Scalar&`, or with several Scalar / bool / std::optional<double> parameters"
)


@dataclass(frozen=True)
class Options:
    """What the user asked for, beyond the op name."""

    expr: str | None = None
    dtypes: tuple[str, ...] | None = None
    stub: str | None = None
    overloads: tuple[str, ...] = ()
    kernel_file: str | None = None
    host_file: str | None = None
    drop_undefined: bool = False


@dataclass(frozen=True)
class DispatchSite:
    entry: YamlEntry
    line: DispatchLine


@dataclass(frozen=True)
class OpSpec:
    op: str
    entries: tuple[YamlEntry, ...]
    shared: tuple[DispatchSite, ...]
    legacy: tuple[DispatchSite, ...]
    stub: Stub
    arity: int
    alpha: bool
    functor: str
    kernel_file: str
    host_file: str
    params: ParamsSpec | None = None  # stubs with several scalars: see mpsgen/params.py

    @property
    def iterator_type(self) -> str:
        return self.stub.iterator_type or "TensorIteratorBase&"

    @property
    def yaml_native(self) -> bool:
        return not self.legacy and all("MPS" in site.line.keys for site in self.shared)

    @property
    def legacy_kernels(self) -> frozenset[str]:
        return frozenset(site.line.kernel for site in self.legacy)

    @property
    def header_symbols(self) -> frozenset[str]:
        return frozenset(line.kernel for entry in self.entries for line in entry.dispatch)


class Context:
    """What the commands read from a checkout, each part loaded on first use. The yaml is read
    through the workspace, so that the second op of a transaction sees the first one's edits."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.checkout: Checkout = ws.checkout
        self._native_functions: NativeFunctions | None = None

    @property
    def native_functions(self) -> NativeFunctions:
        text = self.ws.read(NATIVE_FUNCTIONS)
        if self._native_functions is None or self._native_functions.text is not text:
            self._native_functions = NativeFunctions(text, NATIVE_FUNCTIONS)
        return self._native_functions

    @cached_property
    def stubs(self) -> dict[str, Stub]:
        return read_stubs(self.checkout)

    @cached_property
    def ternary_takes_alpha(self) -> bool:
        return ternary_takes_alpha(self.checkout)


def ternary_takes_alpha(checkout: Checkout) -> bool:
    """Whether this checkout's MetalShaderLibrary::exec_ternary_kernel accepts a Scalar."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    if not checkout.exists(rel):
        return False
    match = re.search(r"exec_ternary_kernel\s*\(([^;]*)\)\s*;", checkout.read(rel))
    return bool(match and "Scalar" in match.group(1))


def is_shared_line(line: DispatchLine) -> bool:
    return "CPU" in line.keys and "CUDA" in line.keys


def is_legacy_line(line: DispatchLine) -> bool:
    return line.keys == ("MPS",)


def resolve_op(ctx: Context, op: str, options: Options, mode: str) -> OpSpec:
    """`mode` is "new-op" or "migrate": each refuses the other's ops with a pointer to it."""
    nf = ctx.native_functions
    entries = nf.op_entries(op)
    if not entries:
        close = difflib.get_close_matches(op, nf.op_names, n=3, cutoff=0.6)
        hint = f"did you mean: {', '.join(close)}?" if close else "give the operator's base name, e.g. atan2"
        raise MpsgenError(f"no operator named {op!r} in native_functions.yaml", location=Location(NATIVE_FUNCTIONS, 1), hint=hint)
    entries = _filter_overloads(entries, options.overloads, nf)
    for entry in entries:
        validate_entry(nf.text, entry)

    shared = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_shared_line(line))
    legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
    first = entries[0]
    if not shared:
        if legacy:
            site = legacy[0]
            raise MpsgenError(
                f"{op}'s MPS kernel {site.line.kernel} is not a shared stub kernel and there is no "
                "`CPU, CUDA: ...` line to join",
                location=site.line.location,
                hint="this op needs a hand-written port, not a generated kernel",
            )
        raise MpsgenError(
            f"{op} has no shared `CPU, CUDA: ...` dispatch line, so no dispatch stub to register for MPS",
            location=first.location,
            hint="new-op and migrate handle ops whose CPU and CUDA kernels go through a DispatchStub",
        )
    if mode == "new-op" and legacy:
        site = legacy[0]
        raise MpsgenError(
            f"{op} is already served by a separate MPS kernel {site.line.kernel}",
            location=site.line.location,
            hint=f"use `mpsgen migrate {op}` to move it onto a native Metal kernel",
        )
    if mode == "migrate" and not legacy and not all("MPS" in s.line.keys for s in shared):
        raise MpsgenError(
            f"{op} has no MPS kernel to migrate",
            location=shared[0].line.location,
            hint=f"use `mpsgen new-op {op}` to give it a native Metal kernel",
        )

    stub = _resolve_stub(ctx, op, shared, options)
    if not stub.supported and not is_params_stub(stub):
        raise MpsgenError(
            f"stub {stub.name} has signature {stub.signature}, which mpsgen cannot generate yet",
            location=stub.type_location or stub.location,
            hint=f"supported: {SUPPORTED_SIGNATURES}",
        )
    carrier = shared[0].entry
    arity = len(carrier.tensor_inputs)
    if not 1 <= arity <= 3:
        raise MpsgenError(
            f"{carrier.name} takes {arity} tensor inputs; mpsgen generates unary, binary and ternary kernels",
            location=carrier.location,
        )
    alpha = stub.scalar_count == 1 and not is_params_stub(stub)
    if arity == 3 and alpha and not ctx.ternary_takes_alpha:
        raise MpsgenError(
            f"{op} is ternary with a Scalar ({stub.signature}), but exec_ternary_kernel in this checkout takes no scalar",
            location=stub.type_location or stub.location,
            hint=ternary_params_hint(ctx.ws),
        )
    # The functor is named after the stub: unique even when overloads of one op use different stubs.
    functor = stub.name[: -len("_stub")] if stub.name.endswith("_stub") else stub.name
    if is_params_stub(stub):  # several scalars: a params struct (mpsgen/params.py)
        arity = params_arity(ctx.ws, op, stub, functor, arity)
    kernel_file, host_file = _family_files(ctx, stub, options)
    params = resolve_params(op, stub, carrier, functor, kernel_file, arity) if is_params_stub(stub) else None
    return OpSpec(op, entries, shared, legacy, stub, arity, alpha, functor, kernel_file, host_file, params)


def _filter_overloads(entries, overloads, nf):
    if not overloads:
        return entries
    wanted = {f"{entries[0].base}.{o}" if "." not in o else o for o in overloads}
    picked = tuple(e for e in entries if e.name in wanted or (e.structured_delegate or "") in wanted)
    if not picked:
        names = ", ".join(e.overload or "(default)" for e in entries)
        raise MpsgenError(
            f"no entry of {entries[0].base} has overload {', '.join(overloads)}",
            location=entries[0].location,
            hint=f"its overloads are: {names}",
        )
    return picked


def stub_candidates(op: str, shared: tuple[DispatchSite, ...]) -> list[str]:
    """Where to look for an op's stub, in order: <op>_stub, the shared kernel's stem, and without
    a `special_` prefix (special_laguerre_polynomial_l -> laguerre_polynomial_l_stub)."""
    names = [f"{op}_stub"]
    for site in shared:
        stem = re.sub(r"(_out|_Tensor|_Scalar)+$", "", site.line.kernel)
        names.append(f"{stem}_stub")
    if op.startswith("special_"):
        names.append(f"{op[len('special_'):]}_stub")
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def _resolve_stub(ctx: Context, op: str, shared, options: Options) -> Stub:
    if options.stub:
        found = find_stub(ctx.checkout, [options.stub])
        if found is not None:
            return found
        stubs = ctx.stubs
        if options.stub not in stubs:
            close = difflib.get_close_matches(options.stub, list(stubs), n=3)
            hint = f"did you mean: {', '.join(close)}?" if close else "name a stub declared with DECLARE_DISPATCH in aten/src/ATen/native/*.h"
            raise MpsgenError(f"--stub {options.stub}: no such DECLARE_DISPATCH in aten/src/ATen/native/*.h", hint=hint)
        return stubs[options.stub]
    candidates = stub_candidates(op, shared)
    found = find_stub(ctx.checkout, candidates)
    if found is not None:
        return found
    raise MpsgenError(
        f"no dispatch stub found for {op} (looked for {', '.join(candidates)} in aten/src/ATen/native/*.h)",
        location=shared[0].line.location,
        hint="pass --stub NAME",
    )


def _family_files(ctx: Context, stub: Stub, options: Options) -> tuple[str, str]:
    default = FAMILY_FILES.get(stub.header)
    kernel = options.kernel_file or (default[0] if default else None)
    host = options.host_file or (default[1] if default else None)
    if kernel is None or host is None:
        raise MpsgenError(
            f"{stub.name} is declared in {stub.header}, which has no default Metal kernel and host file",
            location=stub.location,
            hint="pass --kernel-file NAME.metal and --host-file NAME.mm",
        )
    kernel_rel = kernel if "/" in kernel else f"{KERNELS_DIR}/{kernel}"
    host_rel = host if "/" in host else f"{OPERATIONS_DIR}/{host}"
    for rel, flag in ((kernel_rel, "--kernel-file"), (host_rel, "--host-file")):
        if not ctx.checkout.exists(rel):
            raise MpsgenError(f"{rel}: file not found", hint=f"check the checkout, or pass {flag}")
    return kernel_rel, host_rel
