"""What `bench` runs for an op, read from the checkout's one op model (`facts.views.read_op`): the
tensor operands of the schema carrying the stub, the dtypes its kernel registers, the schema
arguments the stub's Scalars carry (a params struct's fields, `facts.params`), whether it is a
reduction (`facts.reduction`) and the dim argument it reduces, and how the checkout serves it on MPS.
No torch here: `harness` turns this into torch calls."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.commands.tryop.lookup import stub_call
from mpsgen.dtypes import TORCH_DTYPES, torch_dtypes_for
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.catalog import lookup
from mpsgen.facts.params import build_params, checkout_enums, is_params_stub
from mpsgen.facts.perdevice import per_device_sites
from mpsgen.facts.reduction import is_reduction_stub, reduction_of
from mpsgen.facts.views import METAL_TO_TORCH, OpFacts, Views, read_op
from mpsgen.read.checkout import Checkout
from mpsgen.read.stubcall import StubCall

# torch dtypes in the order the model lists Metal types (float32, float16, bfloat16, int64, ...)
DTYPE_ORDER = tuple(METAL_TO_TORCH.values())


@dataclass(frozen=True)
class OpModel:
    op: str
    arity: int  # the tensor operands of the schema carrying the stub
    reduction: bool
    dtypes: tuple[str, ...]  # torch dtype names, in DTYPE_ORDER
    dtypes_from: str  # where they come from, one line
    scalars: tuple[str, ...]  # the schema arguments the stub's Scalars carry
    scalars_from: str  # one line ("" when the stub takes none)
    dim: str  # a reduction: the schema's dim argument as written (`int dim`), else ""
    mps: str  # how the checkout serves the op on MPS, one line
    native: bool  # the checkout registers a native Metal kernel for the op's stub
    call: StubCall | None = None  # what the shared function passes the stub (which scalars reach it)


def op_model(checkout: Checkout, op: str) -> OpModel:
    views = Views(Workspace(checkout))
    facts = read_op(views, op)
    sites = facts.shared or tuple(cpu for cpu, _ in per_device_sites(facts.entries))
    carrier = sites[0].entry if sites else facts.entries[0]
    reduction = reduction_of(views, facts) if facts.stub is not None else None
    registered = reduction.registered_dtypes if reduction is not None else facts.registered_dtypes
    dtypes, dtypes_from = _dtypes(op, facts, registered, reduction.kernel_file if reduction is not None else None)
    call = stub_call(checkout, facts, sites) if sites else None
    scalars, scalars_from = _scalars(views, facts, carrier, call)
    dim = ""
    if reduction is not None or (facts.stub is not None and is_reduction_stub(facts)):
        with_dim = [e for e in facts.entries if any(name == "dim" for _, name, _ in e.arguments)]
        if not with_dim:
            raise MpsgenError(f"{op} is a reduction but none of its entries takes a dim", location=carrier.location,
                              hint="bench times a reduction over a dim")
        dim = next(f"{type_} {name}" for type_, name, _ in with_dim[0].arguments if name == "dim")
    native = bool(facts.registrations and (facts.host is not None or reduction is not None))
    return OpModel(op, len(carrier.tensor_inputs) if not dim else 1, bool(dim), dtypes, dtypes_from, scalars,
                   scalars_from, dim, _mps_line(facts), native, call)


def _dtypes(op: str, facts: OpFacts, registered: frozenset[str], reduction_file: str | None) -> tuple[tuple[str, ...], str]:
    """The registered dtypes; an op the checkout registers none for yet (the build before new-op or
    migrate), the groups new-op and migrate register by default: the catalog's, else float."""
    if registered:
        where = reduction_file or (facts.kernel_files[0] if facts.kernel_files else "the kernel files")
        return tuple(d for d in DTYPE_ORDER if d in registered), f"registered for MPS ({where})"
    entry = None if reduction_file else lookup(op)
    groups = entry.dtypes if entry is not None else ("float",)
    wanted = torch_dtypes_for(groups)
    why = f"the catalog's default groups ({', '.join(groups)})" if entry is not None else "the default group (float)"
    return (tuple(d for d in DTYPE_ORDER if d in wanted),
            f"{why}: the checkout registers no Metal kernel for {op}")


def _scalars(views: Views, facts: OpFacts, carrier, call: StubCall | None) -> tuple[tuple[str, ...], str]:
    """The schema arguments the stub's parameters after the iterator carry: a params struct's fields
    (`facts.params.build_params`), else a single Scalar (alpha) matched to the schema's one Scalar."""
    stub = facts.stub
    if stub is None or len(stub.params) < 2:
        return (), ""
    enums = checkout_enums(views.ws)
    if is_params_stub(stub, enums):
        try:
            spec = build_params(stub, carrier, facts.functor, facts.kernel_files[0] if facts.kernel_files else "",
                                len(carrier.tensor_inputs), call=call, enums=enums)
        except MpsgenError as exc:
            return (), f"{stub.name}'s scalars do not pair with {carrier.name}'s arguments ({exc.message})"
        names = tuple(f.name for f in spec.fields)
        return names, f"{stub.name} takes a params struct: {spec.struct} fields {', '.join(names)}"
    named = tuple(name for type_, name, _ in carrier.arguments if type_.startswith("Scalar"))
    return named, f"{stub.name} takes {len(stub.params) - 1} Scalar: {', '.join(named) or '(none of the schema)'}"


def _mps_line(facts: OpFacts) -> str:
    if facts.registrations:
        reg = facts.registrations[0]
        return f"native Metal kernel: {reg.stub} -> {reg.function} ({reg.location})"
    joined = [site for site in facts.shared if "MPS" in site.line.keys]
    if joined:
        line = joined[0].line
        found = (f"no MPS registration of {facts.stub.name} in the checkout's operations/*.mm" if facts.stub is not None
                 else "no dispatch stub")
        return f"MPS on the shared dispatch line `{line.keys_text}: {line.kernel}` ({line.location}); {found}"
    if facts.legacy:
        site = facts.legacy[0]
        return (f"MPS: {site.line.kernel} ({site.line.location}), an MPS function of its own, not a Metal kernel "
                "through the stub")
    where = facts.entries[0].location
    return f"no MPS kernel: no dispatch line of {facts.op} names MPS ({where})"


def parse_dtypes(spec: str) -> tuple[str, ...]:
    """`--dtypes float32,float16` (torch's names, or a dtype group: float, int2float, ...)."""
    known = set(DTYPE_ORDER)
    wanted = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        names = TORCH_DTYPES.get(part, (part,))
        bad = [n for n in names if n not in known]
        if bad:
            raise MpsgenError(f"--dtypes {spec}: unknown dtype {part!r}",
                              hint=f"name torch dtypes ({', '.join(DTYPE_ORDER)}) or groups ({', '.join(TORCH_DTYPES)})")
        wanted += names
    if not wanted:
        raise MpsgenError("--dtypes is empty", hint="e.g. --dtypes float32,float16")
    return tuple(d for d in DTYPE_ORDER if d in wanted)
