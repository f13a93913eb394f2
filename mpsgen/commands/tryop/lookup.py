"""Which functor serves an op on MPS, as `try` needs it: read from the shared op facts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collections.abc import Callable

from mpsgen.errors import MpsgenError
from mpsgen.facts.perdevice import per_device_sites
from mpsgen.facts.recorded import recorded_call_of_stub
from mpsgen.facts.reduction import reduction_of
from mpsgen.facts.views import METAL_TO_TORCH, Views, read_op
from mpsgen.model import Location
from mpsgen.read.checkout import NATIVE_DIR, OPERATIONS_DIR, Checkout
from mpsgen.read.cpp import mask_code, match_brace, split_top_level
from mpsgen.read.stubcall import StubCall, read_stub_call

TORCH_TO_METAL = {torch: metal for metal, torch in METAL_TO_TORCH.items()}


@dataclass(frozen=True)
class FunctorFacts:
    op: str
    functor: str  # kernel name, without `_functor`
    kernel_file: str
    location: Location  # the functor's struct
    arity: int
    alpha: bool
    input_types: tuple[str, ...]  # Metal input types it is registered for, in METAL_TO_TORCH order
    # The functor's tensor operands (the iterator's inputs: `exec_binary_kernel*` -> 2), which can
    # differ from the op's tensor arguments (threshold: one tensor, a binary kernel).
    kernel_arity: int = 0
    alpha_types: tuple[tuple[str, str], ...] = ()  # (input type, alpha or params type) per registration
    host_body: str = ""
    host_params: tuple[str, ...] = ()
    host_location: Location | None = None
    call: StubCall | None = None  # what the shared function passes the stub (read from its .cpp)
    # input types registered through an OPMATH macro (`REGISTER_OPMATH_BINARY_OP(pow, half2, half2)`):
    # the kernel converts each operand to opmath_t of the type before calling the functor
    opmath_types: tuple[str, ...] = ()


def native_reduction(checkout: Checkout, op: str, views: Views | None = None):
    """(reduction facts, the stub registration's location) when `op` is a native Metal reduction
    (its host function launches kernels by op prefix), else None. `views`: the checkout's, when the
    caller has them (try reads every fact through one Views)."""
    views = views or Views(checkout)
    facts = read_op(views, op)
    reduction = reduction_of(views, facts) if facts.stub is not None else None
    if reduction is not None and reduction.routed and reduction.kernels is not None and reduction.prefixes:
        return reduction, facts.registrations[0].location
    return None


def functor_facts(checkout: Checkout, op: str, stub: str | None = None, *, views: Views | None = None,
                  suggest: Callable[[Checkout, str], str] | None = None) -> FunctorFacts:
    """op -> (kernel file, functor, arity, registered input types), from the shared op facts
    (`mpsgen.facts.views.read_op`): the MPS registration of the op's stub, its host function's
    `exec_*_kernel(iter, "name")` and the .metal file that defines `name_functor`. `views`: the
    checkout's (try's one Views); `suggest`: the hint for an op with no native kernel (the command
    supplies it: which generating command would give it one, `commands.confirm.kernel_hint`)."""

    views = views or Views(checkout)
    facts = read_op(views, op, stub=stub)
    reduction = reduction_of(views, facts)
    if reduction is not None and reduction.routed and reduction.kernels is not None:
        names = sum(len(reduction.kernels.names(prefix)) for prefix in reduction.prefixes)
        raise MpsgenError(
            f"{op} is a native Metal reduction ({facts.stub.name} -> {reduction.function}: "
            f"{names} {'/'.join(p + '_reduction*' for p in reduction.prefixes)} kernels in {reduction.kernel_file}); "
            "--show-source shows elementwise try kernels; `mpsgen try` runs a reduction's op struct",
            location=facts.registrations[0].location,
            hint=f"`mpsgen verify {op} --static-only` checks that every routing variant is registered for every pair")
    if facts.host is None or not facts.host.kernel:
        where = facts.shared[0].line.location if facts.shared else facts.entries[0].location
        raise MpsgenError(f"{op} has no native Metal kernel to run in this checkout", location=where,
                          hint=suggest(checkout, op) if suggest is not None else None)
    name = facts.functor
    if len(facts.kernel_files) != 1:
        where = Location(facts.host.location.path, facts.host.kernel_line)
        found = ", ".join(facts.kernel_files) or "no .metal file"
        raise MpsgenError(f"kernel \"{name}\" should have exactly one {name}_functor, found in {found}", location=where,
                          hint="define the functor once, in the family's .metal file")
    rel = facts.kernel_files[0]
    location = Location(rel, views.kernel(rel).functor_line(checkout.read(rel), name))
    registered = facts.registered_dtypes
    types = tuple(metal for metal, torch in METAL_TO_TORCH.items() if torch in registered)
    if not types:
        raise MpsgenError(f"{name}_functor is not registered for any dtype", location=location,
                          hint="add its REGISTER_* lines (mpsgen new-op writes them)")
    # a per-device op (gelu: CPU: gelu_out_cpu, MPS: gelu_out_mps) reads its stub call from its CPU lines
    sites = facts.shared or tuple(cpu for cpu, _ in per_device_sites(facts.entries))
    carrier = sites[0].entry
    extras = facts.stub.params[1:] if facts.stub is not None else ()
    alpha = bool(extras)
    alpha_types = {}
    for reg in views.kernel(rel).reading.registrations:
        if reg.functor == name and reg.alpha and reg.input in types:
            alpha_types.setdefault(reg.input, reg.alpha)
    arity = len(carrier.tensor_inputs)
    call = _EXEC_KIND.search(facts.host.body)
    kernel_arity = _EXEC_ARITY[call.group(1)] if call else arity
    return FunctorFacts(op, name, rel, location, arity, alpha, types, kernel_arity,
                        tuple((t, alpha_types[t]) for t in types if t in alpha_types), facts.host.body,
                        _declared_params(checkout, facts.host), facts.host.location,
                        stub_call(checkout, facts, sites),
                        tuple(t for t in types if t in opmath_registered(checkout.read(rel), name)))


def stub_call(checkout: Checkout, facts, sites) -> StubCall | None:
    """What the shared function passes the stub: read from its .cpp, else (a checkout without it)
    what ATen is recorded to pass (`facts.recorded`). `sites`: the dispatch lines naming the CPU function
    (the shared ones, or a per-device op's CPU lines)."""
    if facts.stub is None:
        return None
    call = read_stub_call(checkout, tuple(dict.fromkeys(s.line.kernel for s in sites)), facts.stub.name)
    if call is None and not any(p.endswith(".cpp") for p in checkout.glob(NATIVE_DIR, "*.cpp")):
        mps = tuple(dict.fromkeys(m.line.kernel for _, m in per_device_sites(facts.entries)))
        if mps:  # a per-device op: its MPS functions call the stub for kMPS (migrate wrote the call)
            call = read_stub_call(checkout, mps, facts.stub.name, files=tuple(checkout.glob(OPERATIONS_DIR, "*.mm")))
        return call or recorded_call_of_stub(facts.stub.name)
    return call


def _declared_params(checkout: Checkout, host) -> tuple[str, ...]:
    """The host function's parameters as written (with their names), or its normalised ones."""

    text = checkout.read(host.location.path)
    masked = mask_code(text)
    for m in re.finditer(rf"\b{re.escape(host.name)}\s*\(", masked):
        close = match_brace(masked, m.end() - 1)
        if close > 0 and masked[close + 1 : close + 200].lstrip().startswith("{"):
            params = split_top_level(text[m.end() : close], "(<[", ")>]")
            return tuple(" ".join(p.split("=", 1)[0].split()) for p in params)
    return host.params


_OPMATH_CALL = re.compile(r"\b(REGISTER_OPMATH_(?:BINARY|TERNARY)_OP)\s*\(\s*(\w+)\s*,\s*(\w+)")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(\s*(\w+)\s*\)((?:[^\n]*\\\n)*[^\n]*)", re.MULTILINE)


def opmath_registered(text: str, functor: str) -> frozenset[str]:
    """The input types `functor` is registered for through c10's OPMATH macros in a kernel file: named
    directly (`REGISTER_OPMATH_BINARY_OP(pow, half2, half2)`), or through a one-parameter macro of the
    file that names them (`REGISTER_OPMATH_FLOAT_BINARY_OP(mul)` -> float, half, bfloat)."""
    masked = mask_code(text)
    types = {m.group(3) for m in _OPMATH_CALL.finditer(masked) if m.group(2) == functor}
    for define in _DEFINE.finditer(masked):
        macro, param, body = define.groups()
        named = [m.group(3) for m in _OPMATH_CALL.finditer(body) if m.group(2) == param]
        if named and re.search(rf"\b{re.escape(macro)}\s*\(\s*{re.escape(functor)}\s*\)", masked):
            types.update(named)
    return frozenset(types)


_EXEC_KIND = re.compile(r"\bexec_(unary|binary|ternary)_kernel")
_EXEC_ARITY = {"unary": 1, "binary": 2, "ternary": 3}
