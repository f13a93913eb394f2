"""The refusals of the generating commands, in one place: an op's facts (`mpsgen.facts.views`) become an
OpSpec when mpsgen can generate its kernel, else an error saying why and what to do."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.facts.compiled import CompiledAs, alpha_functor, compiled_as
from mpsgen.facts.launcher import ternary_alpha_launcher
from mpsgen.facts.reduction import (REDUCTION_FAMILY, ReductionBody, catalog_body, flags_body, load_mode_problem,
                                    load_takes_parameter)
from mpsgen.facts.perdevice import PerDevice, per_device_of, per_device_sites
from mpsgen.facts.params import (ParamsSpec, checkout_enums, is_params_stub, params_arity, resolve_params,
                                 ternary_params_hint)
from mpsgen.facts.views import (DispatchSite, is_mps_only, OpFacts, SharedFunction, Views, functor_name_of_stub, groups_joined,
                                read_op, shared_functions)
from mpsgen.model import Location
from mpsgen.read.checkout import KERNELS_DIR, MPS_DIR, NATIVE_DIR, OPERATIONS_DIR
from mpsgen.read.cpp import mask_code
from mpsgen.read.nfyaml import YamlEntry
from mpsgen.read.stubcall import StubCall, read_stub_call
from mpsgen.read.stubs import Stub

# Where a stub's header sends its kernel and host code.
FAMILY_FILES = {
    "BinaryOps.h": ("BinaryKernel.metal", "BinaryKernel.mm"),
    "UnaryOps.h": ("UnaryKernel.metal", "UnaryKernel.mm"),
    "Activation.h": ("ActivationKernel.metal", "ActivationKernel.mm"),
    "PointwiseOps.h": ("PointwiseOps.metal", "PointwiseOps.mm"),
    **REDUCTION_FAMILY,
}

# Headers whose stubs serve kernels of several shapes: the family by the kernel's operand count.
# Pow.h: 2.13 registers pow_tensor_scalar_stub (unary, with the exponent as alpha) in UnaryKernel.mm,
# 2.15 pow_tensor_tensor_stub (binary) in BinaryKernel.mm (pytorch#195585)
FAMILY_BY_ARITY = {
    "Pow.h": {1: FAMILY_FILES["UnaryOps.h"], 2: FAMILY_FILES["BinaryOps.h"]},
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
class Composite:
    """A shared function with no kernel of its own to generate: it calls ATen ops (relu ->
    at::clamp_min) or another op's stub (threshold_backward -> threshold_stub with value 0), and
    MPS already serves each (`served`: (what it calls, where it is called, where MPS serves it)).
    Migrating it is the dispatch line plus the legacy removal."""

    functions: tuple[SharedFunction, ...]
    served: tuple[tuple[str, Location, str], ...]
    # another op's stub it calls that has no MPS registration yet: (stub, owner op, where it is called);
    # migrating the op registers that stub's kernel first (threshold_backward -> threshold_stub)
    registers: tuple[str, str, Location] | None = None

    def describe(self) -> str:
        if not self.functions:
            return "MPS is on its shared dispatch line (no aten/src/ATen/native/*.cpp here to read what it calls)"
        recorded = {f.recorded.call.location for f in self.functions if f.recorded is not None}

        def at(where):  # a recorded call has no line in this checkout
            return "as recorded" if where in recorded else f"called at {where}"

        calls = [f"{what} ({at(where)}) is served on MPS by {by}" for what, where, by in self.served]
        if self.registers is not None:
            stub, owner, where = self.registers
            calls.append(f"{stub}, {owner}'s stub ({at(where)}), gets its MPS kernel registered with this "
                         f"migration ({owner}'s own MPS line stays on its MPSGraph kernel until `mpsgen migrate "
                         f"{owner}`, which is then its dispatch line and the legacy removal)")
        names = ", ".join(f"{f.name} ({f.recorded.describe() if f.recorded else f.location})" for f in self.functions)
        return f"{names}: {'; '.join(calls)}"


# the ATen reductions a loss's shared function reduces through
REDUCING_OPS = ("mean", "sum")


def mps_kernel_of(views: Views, called: str) -> str | None:
    """Where MPS serves the ATen op `called` (`at::mean_out` -> mean.out's `MPS:` line): an entry's
    dispatch line naming MPS, through its structured delegate; None when nothing serves it."""
    nf = views.native_functions
    for base in dict.fromkeys((called, called.removesuffix("_out"), called.rstrip("_"))):
        for entry in nf.op_entries(base):
            seen = set()
            current = entry
            while current is not None and current.name not in seen:
                seen.add(current.name)
                line = next((ln for ln in current.dispatch if "MPS" in ln.keys), None)
                if line is not None:
                    return f"{current.name} ({', '.join(line.keys)}: {line.kernel}) at {line.location}"
                current = nf.entry(current.structured_delegate) if current.structured_delegate else None
    return None


def stub_owner(views: Views, op: str, stub: Stub) -> str | None:
    """The other op whose stub this is (`threshold_stub` is threshold's: threshold has shared lines
    of its own), or None."""
    stem = functor_name_of_stub(stub.name)
    if stem == op or not stub.name.endswith("_stub"):
        return None
    entries = views.native_functions.op_entries(stem)
    return stem if any("CPU" in line.keys for e in entries for line in e.dispatch) else None


def composite_of(views: Views, op: str, shared: tuple[DispatchSite, ...], stub: Stub | None, *,
                 register: bool = True):
    """`Composite` when the op's shared functions only call what MPS already serves, a refusal
    (MpsgenError) naming what is missing when they call ops or another op's stub MPS lacks, else
    None (the op has a stub of its own to generate a kernel for). Another op's stub with no MPS
    registration is one the migration registers (`Composite.registers`) when `register` and
    nothing else is missing; `verify` (`register=False`) judges it missing."""
    if not shared:
        return None
    functions = shared_functions(views, list(dict.fromkeys(site.line.kernel for site in shared)))
    if not functions:
        return None
    owner = stub_owner(views, op, stub) if stub is not None else None
    if stub is not None and owner is None:
        return None
    if stub is None and any(f.stubs for f in functions):
        return None  # it calls stubs, none resolved: the stub's refusal says which
    served, missing, registers = [], [], None
    if stub is not None:
        where = next((w for f in functions for name, w in f.stubs if name == stub.name), None)
        if where is None:
            return None  # a --stub the shared functions do not call: a kernel of its own, judged as one
        registered = views.registrations(stub.name)
        if registered:
            served.append((f"{stub.name} ({owner}'s stub)", where, f"REGISTER_DISPATCH at {registered[0].location}"))
        elif register:
            registers = (stub.name, owner, where)
        else:
            missing.append((f"{stub.name}, {owner}'s stub (called at {where}), has no MPS registration",
                            f"migrate {owner} first (mpsgen migrate {owner} {op})"))
    called = [(name, where) for f in functions for name, where in f.ops]
    if stub is None and not called:
        return None
    for name, where in dict.fromkeys(called):
        by = mps_kernel_of(views, name)
        if by is None:
            missing.append((f"at::{name} (called at {where}) has no MPS kernel in this checkout",
                            f"give {name.removesuffix('_out')} an MPS kernel first"))
        else:
            served.append((f"at::{name}", where, by))
    if missing:
        return MpsgenError(f"{op}'s shared function{'s' if len(functions) > 1 else ''} "
                           f"{', '.join(f.name for f in functions)} call{'' if len(functions) > 1 else 's'} what MPS "
                           "does not serve yet: "
                           + "; ".join(m for m, _ in missing),
                           location=functions[0].location, hint="; ".join(dict.fromkeys(h for _, h in missing)))
    return Composite(functions, tuple(served), registers)


def composite_judgement(views: Views, facts: OpFacts) -> Composite | MpsgenError | str | None:
    """How `verify` judges an op with no kernel of its own (relu; threshold_backward, served by
    threshold's stub): the `Composite` when every op (or other op's stub) its shared function calls
    is served on MPS, the error naming what is not, a string (why it cannot be judged: no .cpp to
    read what it calls) for a stub-less op, or None for an op with a stub of its own."""
    if not facts.shared:
        return None
    if facts.stub is not None and stub_owner(views, facts.op, facts.stub) is None:
        return None
    judged = composite_of(views, facts.op, facts.shared, facts.stub, register=False)
    if judged is None and facts.stub is None:
        if not views.checkout.glob(NATIVE_DIR, "*.cpp"):
            return (f"{facts.op} has no stub and this checkout has no {NATIVE_DIR}/*.cpp (a wheel ships none): "
                    f"what its shared function calls was not read")
        return None
    return judged


@dataclass(frozen=True)
class OpSpec:
    """An op `new-op`/`migrate` can generate a kernel for: its facts plus what the generator needs."""

    facts: OpFacts
    stub: Stub | None  # None for a composite op (relu) that calls other ops only
    arity: int
    alpha: bool
    functor: str
    kernel_file: str
    host_file: str
    params: ParamsSpec | None = None  # stubs with several scalars: see mpsgen/params.py
    reduction: ReductionBody | None = None  # a reduction family stub: see mpsgen/facts/reduction.py
    compiled: CompiledAs | None = None  # the checkout compiles the op's kernel under another name
    # an alpha kernel: what the shared function's call names its Scalar (logit's eps, mse_backward's norm)
    alpha_name: str = "alpha"
    call: StubCall | None = None  # what the shared function passes the stub (read from its .cpp)
    composite: Composite | None = None  # what the shared function calls, all served on MPS already
    per_device: PerDevice | None = None  # CPU/CUDA/MPS functions of their own: the MPS one's body becomes the stub call
    notes: tuple[str, ...] = ()  # what the summary says of how the stub and the reduction were read

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
    per_device = (per_device_of(views, op, facts.entries, facts.stub, checkout_enums(views.ws))
                  if not facts.shared and facts.stub is not None else None)
    composite = composite_of(views, op, facts.shared, facts.stub) if per_device is None else None
    if composite is None and facts.stub is None and facts.native:
        composite = Composite((), ())  # already on its shared line, what it calls not read (no .cpp)
    if composite is not None:
        kernel_file = host_file = ""
        return OpSpec(facts, facts.stub, len(facts.shared[0].entry.tensor_inputs), False, facts.functor, kernel_file,
                      host_file, composite=composite, notes=(f"{op} has no kernel of its own: {composite.describe()}",))
    stub = facts.stub
    notes = (f"stub {stub.name}: {facts.stub_how}",) + reduction_notes(views, facts)
    if facts.others:
        notes += (f"the migration is {stub.name}'s overloads ({', '.join(e.name for e in facts.entries)}); "
                  f"{op}'s other kernels stay as they are ({', '.join(sorted(facts.others))})",)
    if per_device is not None:
        notes += per_device_notes(op, per_device)
    reduction = stub.header in REDUCTION_FAMILY
    if options.reduction_flags and not reduction:
        raise MpsgenError(f"--identity/--combine/--finalize/--acc build a reduction's op struct; {op}'s stub "
                          f"{stub.name} is not a reduction's (declared in {stub.header}, not ReduceOps.h)",
                          location=stub.location, hint="give an elementwise body with --expr")
    if reduction and options.expr is not None:
        raise MpsgenError(f"--expr is an elementwise functor body; {op} is a reduction ({stub.name})",
                          location=stub.location, hint="give its op struct with --identity and --combine")
    carrier = facts.shared[0].entry if per_device is None else per_device.carrier
    arity = len(carrier.tensor_inputs)
    built = {body.inputs for body in per_device.bodies} if per_device is not None else set()
    if built - {0}:
        # a copied body builds its own iterator: its inputs are the kernel's operands
        # (log_sigmoid_backward: self and grad_output, as the CUDA function builds it)
        if len(built) > 1:
            raise Refusal(f"{op}'s MPS functions would build iterators of {' and '.join(map(str, sorted(built)))} "
                          "inputs: one kernel cannot serve both", location=per_device.bodies[0].location,
                          hint="port them by hand")
        arity = built.pop()
    kernel_file, host_file = _family_files(views, stub, options, arity)
    call = shared_call(views, facts.shared or tuple(cpu for cpu, _ in per_device.sites), stub)
    if is_params_stub(stub, checkout_enums(views.ws)):
        params = params_spec(views, op, stub, carrier, facts.functor, arity, kernel_file, call)
        return OpSpec(facts, stub, params.arity, False, facts.functor, kernel_file, host_file, params, call=call,
                      notes=notes, per_device=per_device)
    if reduction:
        body = (flags_body(op, facts.functor, options.identity, options.combine, options.finalize, options.acc)
                if options.reduction_flags else catalog_body(op))
        return OpSpec(facts, stub, 1, False, facts.functor, kernel_file, host_file, reduction=body, notes=notes)
    existing = compiled_as(views, op) if options.expr is None and not options.kernel_file else None
    if existing is not None and not stub.scalar_count:
        host = host_file if options.host_file or not existing.host_file else existing.host_file
        return OpSpec(facts, stub, arity, False, existing.functor, existing.kernel_file, host, compiled=existing,
                      call=call, notes=notes)
    alpha = stub.scalar_count == 1
    name = call.args[0].name if alpha and call is not None and len(call.args) == 1 and call.args[0].name else "alpha"
    functor = facts.functor
    renamed = alpha_functor(views, kernel_file, functor) if alpha and options.expr is None else None
    if renamed is not None:
        functor = renamed[0]
        notes += (f"{stub.name} passes a Scalar: launched as {functor} ({kernel_file}:{renamed[1]}), the functor the "
                  f"file registers with an alpha; {facts.functor}_functor's kernels take none",)
    return OpSpec(facts, stub, arity, alpha, functor, kernel_file, host_file, alpha_name=name, call=call,
                  notes=notes, per_device=per_device)


def per_device_notes(op: str, per_device: PerDevice) -> tuple[str, ...]:
    """What the summary says of a per-device op: the MPS functions stay, each body becomes the stub call."""
    notes = []
    for (cpu, mps), body in zip(per_device.sites, per_device.bodies):
        functions = ", ".join(f"{'/'.join(line.keys)}: {line.kernel} ({line.location})"
                              for line in cpu.entry.dispatch if {"CPU", "CUDA"} & set(line.keys))
        notes.append(f"{cpu.entry.name}'s CPU and CUDA kernels are per-device functions ({functions}): "
                     f"`MPS: {body.kernel}` stays in the yaml and its body becomes the stub call {body.how}")
    return tuple(notes)


def shared_call(views: Views, shared: tuple[DispatchSite, ...], stub: Stub) -> StubCall | None:
    """How the op's shared kernels (the functions its `CPU, CUDA: ...` lines name, the carrier's
    first) call `stub`, read from the checkout's aten/src/ATen/native/*.cpp (None without them)."""
    kernels = tuple(dict.fromkeys(site.line.kernel for site in shared))
    return read_stub_call(views.ws, kernels, stub.name)


_RETURN = re.compile(r"->\s*(.*)$", re.S)
_TENSOR_RETURN = re.compile(r"^Tensor(?:\([a-z]!?\))?\s*(\w*)$")


def tensor_outputs(entry: YamlEntry) -> tuple[str, ...]:
    """The names of the tensors an entry's schema returns (`frexp.Tensor_out`: `("mantissa",
    "exponent")`; an unnamed one is `out`), empty when it returns something else."""
    found = _RETURN.search(entry.schema)
    if found is None:
        return ()
    returned = found.group(1).strip()
    if returned.startswith("(") and returned.endswith(")"):
        returned = returned[1:-1]
    names = []
    parts = [p.strip() for p in returned.split(",")]
    for k, part in enumerate(parts, 1):
        m = _TENSOR_RETURN.match(part)
        if m is None:
            return ()
        # unnamed: `out` alone, else by place (_prelu_kernel_backward's `-> (Tensor, Tensor)`)
        names.append(m.group(1) or ("out" if len(parts) == 1 else f"output {k}"))
    return tuple(names)


# the launchers of MetalShaderLibrary that a generated host function calls (each writes iter.output(0))
_LAUNCHER = re.compile(r"\b(exec_\w+_kernel\w*)\s*\(")


def two_outputs_refusal(views: Views, op: str, site: DispatchSite, stub: Stub, outputs: tuple[str, ...]) -> MpsgenError:
    """An op whose shared kernel fills several outputs through one TensorIterator (frexp: mantissa and
    exponent): the functors and launchers mpsgen writes through (`exec_*_kernel`) compute one value
    per element into `iter.output(0)`, so a generated kernel would fill the first output only. The
    refusal names the outputs, the stub, and the launchers the checkout's library has."""
    rel = f"{MPS_DIR}/MetalShaderLibrary.h"
    launchers = sorted(set(_LAUNCHER.findall(mask_code(views.ws.read(rel))))) if views.ws.exists(rel) else []
    have = (f"{rel} declares {', '.join(launchers)}, each writing one output" if launchers
            else f"this checkout has no {rel} launcher to call")
    return MpsgenError(
        f"{site.line.kernel} writes {len(outputs)} outputs ({', '.join(outputs)}) through one TensorIterator "
        f"({stub.name}: {stub.signature}); {have}, so a generated functor would fill {outputs[0]} only",
        location=site.line.location,
        hint=(f"write a kernel of its own that stores every output and a host function launching it for "
              f"{stub.name}" + (" (2.15's frexp kernels are frexp_dense_<T> and frexp_strided_<T> for float, half "
                                "and bfloat: the mantissa in T, the exponent as int)" if op == "frexp" else "")),
    )


def reduction_notes(views: Views, facts: OpFacts) -> tuple[str, ...]:
    """A loss with a `reduction` argument: how its shared function reduces (the ATen reductions it
    calls, each served on MPS), so that with MPS on the shared line the reduction runs as a second
    kernel. Refused (raising) when a reduction it calls has no MPS kernel."""
    carriers = [site.entry for site in facts.shared]
    if not any(name == "reduction" for e in carriers for _, name, _ in e.arguments):
        return ()
    functions = shared_functions(views, list(dict.fromkeys(site.line.kernel for site in facts.shared)))
    if not functions:
        return (f"{facts.op} takes `reduction`; this checkout has no aten/src/ATen/native/*.cpp, so how its "
                f"shared function reduces was not read (ATen's losses reduce through at::mean/at::sum, "
                f"which then run as a second kernel)",)
    # at::mean_out(...) in the function, or a helper of its file calling `t.mean()` (apply_loss_reduction)
    reducing = [(f"at::{name}", name, where) for f in functions for name, where in f.ops
                if name.removesuffix("_out") in REDUCING_OPS]
    reducing += [(f"Tensor::{name}()", name, where) for f in functions for name, where in f.methods
                 if name in REDUCING_OPS]
    reducing = list(dict.fromkeys(reducing))  # huber_loss and huber_loss_out share the file's helper
    call = shared_call(views, facts.shared, facts.stub) if not reducing and facts.stub is not None else None
    scaled = [a for a in call.args if "reduction" in a.reads] if call is not None else []
    if scaled:  # a backward loss: the reduction is a scale the kernel applies (mse_backward_stub's norm)
        return (f"{facts.op} takes `reduction`; {call.function} hands it to {facts.stub.name} as "
                + ", ".join(f"{a.name or a.text} = `{a.value}`" for a in scaled)
                + f" ({call.where}): the kernel scales by it and nothing reduces after it",)
    if not reducing:
        return (f"{facts.op} takes `reduction`; {functions[0].name} ({functions[0].location}) reduces "
                f"through no at::mean/at::sum (nor Tensor::mean()/sum()): its stub's kernel reduces (or the "
                "reduction is elementwise)",)
    served = []
    for shown, name, where in reducing:
        by = mps_kernel_of(views, name)
        if by is None:
            raise Refusal(f"{functions[0].name} reduces {facts.op} through {shown} ({where}), which has no MPS "
                          f"kernel in this checkout", location=where,
                          hint=f"give {name.removesuffix('_out')} an MPS kernel first")
        served.append(f"{shown} ({where}; MPS: {by})")
    return (f"{facts.op} reduces through {', '.join(served)}: with MPS on the shared line the reduction now runs "
            f"as two kernels ({facts.stub.name}'s elementwise pass, then the reduction; a fused pass is a later step)",)


# A stub parameter that is a tensor (or its sizes and strides) rather than an iterator's operand or a scalar.
_TENSOR_PARAM = re.compile(r"^(?:const\s+)?(?:at::)?(?:Tensor|TensorBase|IntArrayRef)\b")


def out_of_family(stub: Stub) -> str | None:
    """Why `stub` is no elementwise kernel (one value per element from the same position of each
    operand, what every `exec_*_kernel` launcher and generated functor computes), or None: it takes
    whole tensors instead of an iterator (sort, cumsum, max.dim, gather), or an iterator plus another
    tensor or its geometry, which its kernel indexes into at positions the iterator's values give
    (take_stub's `const TensorBase& input`, put_stub, masked_scatter_stub, index_stub's sizes and strides)."""
    if stub.iterator_type is None and any(_TENSOR_PARAM.match(p) for p in stub.params):
        return (f"{stub.name} ({stub.signature}) takes whole tensors, not a TensorIterator: its kernel walks them "
                "itself (scans, sorts, reductions over a dim with indices), which no generated elementwise functor "
                "does; a hand-written kernel is needed")
    extra = [p for p in stub.params[1:] if _TENSOR_PARAM.match(p)]
    if stub.iterator_type is not None and extra:
        return (f"{stub.name} ({stub.signature}) takes {', '.join(extra)} besides the iterator: its kernel reads or "
                "writes that tensor at positions computed from the iterator's values (an index kernel), which the "
                "elementwise launchers (one value per element, from the same position of each operand) cannot "
                "express; a hand-written kernel is needed")
    return None


def no_shared_line(entries: tuple[YamlEntry, ...]) -> str:
    """Why the op's entries give MPS no `CPU, CUDA: ...` line to join, read from them: CPU and CUDA
    kernels generated from a `ufunc_inner_loop` (add.out), a composite kernel MPS overrides
    (permute), a kernel for one of the two devices only (record_stream), or no CPU/CUDA kernel at
    all (an MPS-only op)."""
    ufunc = next((e for e in entries if e.key("ufunc_inner_loop") is not None), None)
    if ufunc is not None:
        return (f"its CPU and CUDA kernels are generated from {ufunc.name}'s ufunc_inner_loop (torchgen's ufunc "
                "codegen): no dispatch line to join")
    lines = [line for e in entries for line in e.dispatch if not is_mps_only(line)]
    devices = [(d, line.kernel) for line in lines for d in ("CPU", "CUDA") if d in line.keys]
    composite = [(k, line.kernel) for line in lines for k in line.keys if k.startswith("Composite")]
    if not devices and composite:
        return (f"CPU and CUDA run its composite kernel ({', '.join(f'{k}: {v}' for k, v in composite)}), which "
                "MPS overrides: no shared line to join")
    if not devices:
        return "it has no CPU or CUDA kernel (MPS-only): no shared line to join"
    present = {d for d, _ in devices}
    if len(present) == 1:
        (only,) = present
        other = "CUDA" if only == "CPU" else "CPU"
        theirs = (f"{other} runs the composite one ({', '.join(f'{k}: {v}' for k, v in composite)})" if composite
                  else f"{other} none")
        return (f"only {only} has a kernel of its own ({', '.join(dict.fromkeys(k for _, k in devices))}), "
                f"{theirs}: no shared line to join")
    return "there is no `CPU, CUDA: ...` line to join"


def composite_kernels(views: Views, op: str, entries: tuple[YamlEntry, ...]) -> MpsgenError | None:
    """An op whose entries name no dispatch at all (CompositeImplicitAutograd: prelu) runs through
    the ops its function calls; the refusal names those with a kernel line of their own (read from
    its .cpp function's `at::` calls, else, in a checkout without the .cpp, the `_<op>_kernel` entry
    ATen's convention gives such an op), each with how MPS serves it, and points at them."""
    if any(e.dispatch for e in entries):
        return None
    called = [name for f in shared_functions(views, [op]) for name, _ in f.ops]
    if not called and views.native_functions.op_entries(f"_{op}_kernel"):
        called = [f"_{op}_kernel"]
    kernels = []
    for name in dict.fromkeys(called):
        found = views.native_functions.op_entries(name)
        if found and any(line for e in found for line in e.dispatch if {"CPU", "CUDA"} & set(line.keys)):
            mps = next((line for e in found for line in e.dispatch if "MPS" in line.keys), None)
            kernels.append((name, f"MPS: {mps.kernel}" if mps is not None else "no MPS kernel"))
    if not kernels:
        return None
    return MpsgenError(
        f"{op} is a composite op (its entry names no dispatch: CompositeImplicitAutograd): MPS runs what it calls, "
        + ", ".join(f"{name} ({how})" for name, how in kernels) + "; migrate that instead",
        location=entries[0].location,
        hint=" / ".join(f"mpsgen migrate {name}" for name, _ in kernels),
    )


def generation_problem(views: Views, op: str, shared: tuple[DispatchSite, ...], legacy: tuple[DispatchSite, ...],
                       stub: Stub | None, stub_problem: str, mode: str, *, entries: tuple[YamlEntry, ...],
                       explicit_stub: str | None = None, reduction_flags: bool = False) -> MpsgenError | None:
    """Why mpsgen cannot generate a kernel for the op (the error to raise), or None. `scan` ranks
    candidates by the same answer."""
    first = entries[0]
    enums = checkout_enums(views.ws)
    per_device = per_device_sites(entries) if not shared and legacy else ()
    if per_device and stub is not None and (stub.supported or is_params_stub(stub, enums)):
        # the MPS function stays and calls the stub: judged as a shared op on its MPS lines
        try:
            per_device_of(views, op, entries, stub, enums)
        except MpsgenError as exc:
            return exc
        if mode == "new-op":
            site = legacy[0]
            return MpsgenError(f"{op} is already served by a separate MPS kernel {site.line.kernel}",
                               location=site.line.location,
                               hint=f"use `mpsgen migrate {op}` to make its body the stub call")
        shared = tuple(mps for _, mps in per_device)
    elif not shared:
        if legacy:
            site = legacy[0]
            per_device = [(line.keys, line.kernel) for e in entries for line in e.dispatch
                          if {"CPU", "CUDA"} & set(line.keys) and not is_mps_only(line)]
            if len({kernel for _, kernel in per_device}) > 1:
                functions = ", ".join(f"{'/'.join(keys)}: {kernel}" for keys, kernel in per_device)
                if stub is None:
                    why = f"no stub serves them: {stub_problem}"
                else:
                    why = (f"around {stub.name}, whose signature {stub.signature} mpsgen cannot generate a kernel "
                           f"for (supported: {SUPPORTED_SIGNATURES})")
                return MpsgenError(
                    f"{op}'s CPU and CUDA kernels are per-device functions ({functions}) {why}",
                    location=site.line.location,
                    hint=f"port {site.line.kernel} by hand: call the stub for kMPS as the CPU function does, and "
                         "register a Metal kernel for it",
                )
            return MpsgenError(
                f"{op}'s MPS kernel {site.line.kernel} is not a shared stub kernel and {no_shared_line(entries)}",
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
        composite = composite_kernels(views, op, entries)
        if composite is not None:
            return composite
        return MpsgenError(
            f"{op} has no shared `CPU, CUDA: ...` dispatch line, so no dispatch stub to register for MPS",
            location=first.location,
            hint="new-op and migrate handle ops whose CPU and CUDA kernels go through a DispatchStub",
        )
    native = not legacy and all(groups_joined(shared))
    if per_device:
        legacy = ()  # its MPS functions stay: nothing of the shared-line checks below applies
        native = False
    if mode == "new-op" and legacy:
        site = legacy[0]
        return MpsgenError(
            f"{op} is already served by a separate MPS kernel {site.line.kernel}",
            location=site.line.location,
            hint=f"use `mpsgen migrate {op}` to move it onto a native Metal kernel",
        )
    if mode == "migrate" and not legacy and not native and not per_device:
        return MpsgenError(
            f"{op} has no MPS kernel to migrate",
            location=shared[0].line.location,
            hint=f"use `mpsgen new-op {op}` to give it a native Metal kernel",
        )
    composite = composite_of(views, op, shared, stub) if not explicit_stub and not per_device else None
    if isinstance(composite, MpsgenError):
        return composite
    if composite is not None or (stub is None and native and mode == "migrate"):
        return None  # served through what its shared function calls (or already on its shared line)
    if stub is None:
        if explicit_stub:
            import difflib

            close = difflib.get_close_matches(explicit_stub, list(views.all_stubs()), n=3)
            return MpsgenError(
                stub_problem,
                hint=f"did you mean: {', '.join(close)}?" if close else "name a stub declared with DECLARE_DISPATCH in aten/src/ATen/native/*.h",
            )
        hint = "pass --stub NAME"
        if not views.checkout.glob(NATIVE_DIR, "*.cpp"):
            hint += f", or run on a checkout with {NATIVE_DIR}/*.cpp (a source checkout)"
        return MpsgenError(stub_problem, location=shared[0].line.location, hint=hint)
    outside = out_of_family(stub)
    if outside is not None:
        return MpsgenError(outside, location=stub.type_location or stub.location,
                           hint=f"port {op} by hand: a Metal kernel of its own and a host function registered for "
                                f"{stub.name}")
    outputs = tensor_outputs(shared[0].entry)
    if len(outputs) > 1:
        return two_outputs_refusal(views, op, shared[0], stub, outputs)
    enums = checkout_enums(views.ws)
    if not stub.supported and not is_params_stub(stub, enums):
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
    params_stub = is_params_stub(stub, enums)
    if params_stub:  # several scalars: a params struct (mpsgen/params.py)
        try:
            params_spec(views, op, stub, carrier, functor_name_of_stub(stub.name), arity,
                        call=shared_call(views, shared, stub))
        except MpsgenError as exc:
            return exc
    if arity == 3 and stub.scalar_count == 1 and not params_stub and not views.ternary_takes_alpha:
        # mpsgen adds exec_ternary_kernel(iter, name, alpha) where the checkout's pieces allow it
        launcher = ternary_alpha_launcher(views.ws)
        if isinstance(launcher, str):
            return MpsgenError(
                f"{op} is ternary with a Scalar ({stub.signature}), but exec_ternary_kernel in this checkout takes "
                "no scalar",
                location=stub.type_location or stub.location,
                hint=f"mpsgen cannot add one that does: {launcher}; {ternary_params_hint(views.ws)}",
            )
    return None


def params_spec(views: Views, op: str, stub: Stub, carrier: YamlEntry, functor: str, arity: int,
                kernel_file: str = f"{KERNELS_DIR}/x.metal", call: StubCall | None = None) -> ParamsSpec:
    """The params struct of a params stub (refused, raising, when the checkout has no launcher for
    its operand count or the stub and the schema disagree)."""
    arity = params_arity(views.ws, op, stub, functor, arity)
    return resolve_params(op, stub, carrier, functor, kernel_file, arity, call, checkout_enums(views.ws))


def _family_files(views: Views, stub: Stub, options: Options, arity: int) -> tuple[str, str]:
    default = FAMILY_FILES.get(stub.header) or FAMILY_BY_ARITY.get(stub.header, {}).get(arity)
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


def reused_functor(views: Views, op: str, stub: Stub) -> str | None:
    """The existing functor a migration of `op` registers its stub with instead of writing one, as
    `resolve_op` chooses it: the functor the checkout compiles the op under (conj_physical's
    copy_conj, `compiled_as`), or, for a stub passing a Scalar, its functor's `_alpha` twin (sub's
    add_alpha, `alpha_functor`); None otherwise."""
    existing = compiled_as(views, op)
    if existing is not None and not stub.scalar_count:
        return existing.functor
    default = FAMILY_FILES.get(stub.header)
    if default is None or stub.scalar_count != 1:
        return None
    twin = alpha_functor(views, f"{KERNELS_DIR}/{default[0]}", functor_name_of_stub(stub.name))
    return twin[0] if twin is not None else None
