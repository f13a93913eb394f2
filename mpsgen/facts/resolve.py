"""The refusals of the generating commands, in one place: an op's facts (`mpsgen.facts.views`) become an
OpSpec when mpsgen can generate its kernel, else an error saying why and what to do."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.facts.reduction import (REDUCTION_FAMILY, ReductionBody, catalog_body, flags_body, load_mode_problem,
                                    load_takes_parameter)
from mpsgen.facts.params import ParamsSpec, is_params_stub, params_arity, resolve_params, ternary_params_hint
from mpsgen.facts.views import DispatchSite, OpFacts, Views, functor_name_of_stub, read_op
from mpsgen.read.checkout import KERNELS_DIR, OPERATIONS_DIR
from mpsgen.read.nfyaml import YamlEntry
from mpsgen.read.stubs import Stub

# Where a stub's header sends its kernel and host code.
FAMILY_FILES = {
    "BinaryOps.h": ("BinaryKernel.metal", "BinaryKernel.mm"),
    "UnaryOps.h": ("UnaryKernel.metal", "UnaryKernel.mm"),
    "Activation.h": ("ActivationKernel.metal", "ActivationKernel.mm"),
    "PointwiseOps.h": ("PointwiseOps.metal", "PointwiseOps.mm"),
    **REDUCTION_FAMILY,
}

SUPPORTED_SIGNATURES = (
    "void(*)(TensorIteratorBase&), void(*)(TensorIterator&), "
    "either with one `const Scalar&`, or with several Scalar / bool / std::optional<double> parameters"
)


class Refusal(MpsgenError):
    """`resolve_op`'s refusal of an op its command does not generate as the op stands
    (`generation_problem`); the commands check its pointer at the other command
    (`mpsgen.commands.confirm.resolve_checked`)."""


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
    # (migrate) files defining the legacy kernels besides operations/*.mm, relative to the checkout
    legacy_files: tuple[str, ...] = ()
    # a reduction the catalog lacks: its op struct's pieces (--identity, --combine, --finalize, --acc)
    identity: str | None = None
    combine: str | None = None
    finalize: str | None = None
    acc: str | None = None
    # where the functor body comes from (`mpsgen.facts.bodies`): auto, or one source (--body)
    body: str = "auto"
    # sources whose body failed the run-time check: (source, why), asked no more
    rejected: tuple[tuple[str, str], ...] = ()

    @property
    def reduction_flags(self) -> bool:
        return any(v is not None for v in (self.identity, self.combine, self.finalize, self.acc))


@dataclass(frozen=True)
class OpSpec:
    """An op `new-op`/`migrate` can generate a kernel for: its facts plus what the generator needs."""

    facts: OpFacts
    stub: Stub
    arity: int
    alpha: bool
    functor: str
    kernel_file: str
    host_file: str
    params: ParamsSpec | None = None  # stubs with several scalars: see mpsgen/params.py
    reduction: ReductionBody | None = None  # a reduction family stub: see mpsgen/facts/reduction.py

    @property
    def op(self) -> str:
        return self.facts.op

    @property
    def entries(self) -> tuple[YamlEntry, ...]:
        return self.facts.entries

    @property
    def shared(self) -> tuple[DispatchSite, ...]:
        return self.facts.shared

    @property
    def legacy(self) -> tuple[DispatchSite, ...]:
        return self.facts.legacy

    @property
    def iterator_type(self) -> str:
        return self.stub.iterator_type or "TensorIteratorBase&"

    @property
    def yaml_native(self) -> bool:
        return self.facts.native

    @property
    def legacy_kernels(self) -> frozenset[str]:
        return self.facts.legacy_kernels

    @property
    def header_symbols(self) -> frozenset[str]:
        return self.facts.header_symbols


def resolve_op(views: Views, op: str, options: Options, mode: str) -> OpSpec:
    """The op's facts, or the reason mpsgen cannot generate its kernel (exit 2, with what to do).
    `mode` is "new-op" or "migrate": each refuses the other's ops with a pointer to it."""
    facts = read_op(views, op, stub=options.stub, overloads=options.overloads)
    views.validate_entries(facts.entries)
    problem = generation_problem(views, facts.op, facts.shared, facts.legacy, facts.stub, facts.stub_problem,
                                 mode, entries=facts.entries, explicit_stub=options.stub,
                                 reduction_flags=options.reduction_flags)
    if problem is not None:
        raise Refusal(problem.message, location=problem.location, hint=problem.hint)
    stub = facts.stub
    reduction = stub.header in REDUCTION_FAMILY
    if options.reduction_flags and not reduction:
        raise MpsgenError(f"--identity/--combine/--finalize/--acc build a reduction's op struct; {op}'s stub "
                          f"{stub.name} is not a reduction's (declared in {stub.header}, not ReduceOps.h)",
                          location=stub.location, hint="give an elementwise body with --expr")
    if reduction and options.expr is not None:
        raise MpsgenError(f"--expr is an elementwise functor body; {op} is a reduction ({stub.name})",
                          location=stub.location, hint="give its op struct with --identity and --combine")
    carrier = facts.shared[0].entry
    arity = len(carrier.tensor_inputs)
    kernel_file, host_file = _family_files(views, stub, options)
    if is_params_stub(stub):
        params = params_spec(views, op, stub, carrier, facts.functor, arity, kernel_file)
        return OpSpec(facts, stub, params.arity, False, facts.functor, kernel_file, host_file, params)
    if reduction:
        body = (flags_body(op, facts.functor, options.identity, options.combine, options.finalize, options.acc)
                if options.reduction_flags else catalog_body(op))
        return OpSpec(facts, stub, 1, False, facts.functor, kernel_file, host_file, reduction=body)
    return OpSpec(facts, stub, arity, stub.scalar_count == 1, facts.functor, kernel_file, host_file)


def generation_problem(views: Views, op: str, shared: tuple[DispatchSite, ...], legacy: tuple[DispatchSite, ...],
                       stub: Stub | None, stub_problem: str, mode: str, *, entries: tuple[YamlEntry, ...],
                       explicit_stub: str | None = None, reduction_flags: bool = False) -> MpsgenError | None:
    """Why mpsgen cannot generate a kernel for the op (the error to raise), or None. `scan` ranks
    candidates by the same answer."""
    first = entries[0]
    if not shared:
        if legacy:
            site = legacy[0]
            return MpsgenError(
                f"{op}'s MPS kernel {site.line.kernel} is not a shared stub kernel and there is no "
                "`CPU, CUDA: ...` line to join",
                location=site.line.location,
                hint="this op needs a hand-written port, not a generated kernel",
            )
        alias = views.alias_of(op)
        if alias is not None and alias[0] != op:
            return MpsgenError(
                f"{op} is an alias of {alias[0]} (the OpInfo at {alias[1]} lists it): its kernels are {alias[0]}'s",
                location=first.location,
                hint=f"mpsgen {mode} {alias[0]}",
            )
        return MpsgenError(
            f"{op} has no shared `CPU, CUDA: ...` dispatch line, so no dispatch stub to register for MPS",
            location=first.location,
            hint="new-op and migrate handle ops whose CPU and CUDA kernels go through a DispatchStub",
        )
    native = not legacy and all("MPS" in site.line.keys for site in shared)
    if mode == "new-op" and legacy:
        site = legacy[0]
        return MpsgenError(
            f"{op} is already served by a separate MPS kernel {site.line.kernel}",
            location=site.line.location,
            hint=f"use `mpsgen migrate {op}` to move it onto a native Metal kernel",
        )
    if mode == "migrate" and not legacy and not native:
        return MpsgenError(
            f"{op} has no MPS kernel to migrate",
            location=shared[0].line.location,
            hint=f"use `mpsgen new-op {op}` to give it a native Metal kernel",
        )
    if stub is None:
        if explicit_stub:
            import difflib

            close = difflib.get_close_matches(explicit_stub, list(views.all_stubs()), n=3)
            return MpsgenError(
                stub_problem,
                hint=f"did you mean: {', '.join(close)}?" if close else "name a stub declared with DECLARE_DISPATCH in aten/src/ATen/native/*.h",
            )
        return MpsgenError(stub_problem, location=shared[0].line.location, hint="pass --stub NAME")
    if not stub.supported and not is_params_stub(stub):
        return MpsgenError(
            f"stub {stub.name} has signature {stub.signature}, which mpsgen cannot generate yet",
            location=stub.type_location or stub.location,
            hint=f"supported: {SUPPORTED_SIGNATURES}",
        )
    if stub.header in REDUCTION_FAMILY:
        kernel_rel = f"{KERNELS_DIR}/{REDUCTION_FAMILY[stub.header][0]}"
        if not views.ws.exists(kernel_rel):
            return MpsgenError(
                f"{op} is a reduction ({stub.name}) and this checkout has no {kernel_rel}, the reduction "
                "family's kernel file to register it in",
                location=stub.location,
                hint="mpsgen registers a reduction in the checkout's kernels/ReduceOps.metal and calls the launcher of "
                     "operations/ReduceOps.mm; check the checkout",
            )
        body = catalog_body(op)
        if reduction_flags and body is not None and body.load_modes:
            return MpsgenError(f"{op}'s order picks one of {body.struct}'s load modes (the reduction catalog); "
                               "--identity/--combine cannot take the order", location=stub.location,
                               hint=f"drop the flags: mpsgen {mode} {op}")
        if body is not None and body.load_modes:
            # the orders the base op's load modes serve: the scalar picks a kernel on the host
            return load_mode_problem(views.ws.read(kernel_rel), kernel_rel, body)
        if stub.scalar_count and views.ws.exists(kernel_rel) and not load_takes_parameter(views.ws.read(kernel_rel)):
            return MpsgenError(
                f"{op} is a reduction whose stub {stub.name} passes a Scalar ({stub.signature}), but the "
                f"kernels of {kernel_rel} hand an op's load the element alone (OP::load(v)): the scalar "
                "cannot reach the accumulation",
                location=stub.type_location or stub.location,
                hint="this op needs a hand-written kernel taking the scalar (as the file's `norm` kernel does)",
            )
        if body is None and not reduction_flags:
            return MpsgenError(
                f"{op} is a reduction ({stub.name}) with no functor in mpsgen's reduction catalog",
                location=stub.location,
                hint="give its op struct with --identity EXPR --combine EXPR [--finalize EXPR] [--acc TYPE], "
                     "or write it by hand",
            )
        return None
    reductions = [site.entry for site in shared if "reduction" in site.entry.tags]
    if reductions:
        entry = reductions[0]
        return MpsgenError(
            f"{entry.name} is tagged `reduction`: its stub reduces, an elementwise functor would be wrong",
            location=entry.location,
            hint="this op needs a hand-written port",
        )
    carrier = shared[0].entry
    arity = len(carrier.tensor_inputs)
    if not 1 <= arity <= 3:
        return MpsgenError(
            f"{carrier.name} takes {arity} tensor inputs; mpsgen generates unary, binary and ternary kernels",
            location=carrier.location,
        )
    params_stub = is_params_stub(stub)
    if params_stub:  # several scalars: a params struct (mpsgen/params.py)
        try:
            params_spec(views, op, stub, carrier, functor_name_of_stub(stub.name), arity)
        except MpsgenError as exc:
            return exc
    if arity == 3 and stub.scalar_count == 1 and not params_stub and not views.ternary_takes_alpha:
        return MpsgenError(
            f"{op} is ternary with a Scalar ({stub.signature}), but exec_ternary_kernel in this checkout takes no scalar",
            location=stub.type_location or stub.location,
            hint=ternary_params_hint(views.ws),
        )
    return None


def params_spec(views: Views, op: str, stub: Stub, carrier: YamlEntry, functor: str, arity: int,
                kernel_file: str = f"{KERNELS_DIR}/x.metal") -> ParamsSpec:
    """The params struct of a params stub (refused, raising, when the checkout has no launcher for
    its operand count or the stub and the schema disagree)."""
    arity = params_arity(views.ws, op, stub, functor, arity)
    return resolve_params(op, stub, carrier, functor, kernel_file, arity)


def _family_files(views: Views, stub: Stub, options: Options) -> tuple[str, str]:
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
        if not views.checkout.exists(rel):
            raise MpsgenError(f"{rel}: file not found", hint=f"check the checkout, or pass {flag}")
    return kernel_rel, host_rel
