"""`mpsgen try OP`: the pipeline. Find the functor, build the shader source, run it (MPS or host),
compute the reference, compare per dtype."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from mpsgen.commands.tryop.branchvalues import (
    boundary_inputs,
    branch_values,
    domain_values,
    functor_spans,
    loop_bounded_operands,
    near_domain_end,
    opinfo_domain,
    samples_finite_parts,
    scalar_boundaries,
    unsampled_domain,
)
from mpsgen.commands.tryop.compare import MAX_EXAMPLES, DtypeResult, compare
from mpsgen.commands.tryop.coverage import Coverage, Target, coverage_to_json
from mpsgen.commands.tryop.lookup import METAL_TO_TORCH, FunctorFacts, functor_facts, native_reduction
from mpsgen.commands.tryop.reference import (
    Expected,
    Reference,
    catalog_reference,
    import_torch,
    scalar_reference,
    torch_reference,
    torch_scalar_reference,
)
from mpsgen.commands.tryop.reduction import ORDERS_NOT_RUN, not_run_note, try_reduction, try_reduction_orders
from mpsgen.commands.tryop.run import Outputs, host_unavailable, mps_unavailable, run_on_host, run_on_mps
from mpsgen.commands.tryop.scalars import (
    ITERATOR_OPERANDS,
    KernelScalars,
    ScalarArg,
    ScalarSet,
    field_values,
    host_arguments,
    read_kernel_scalars,
    scalar_sets,
    schema_scalars,
    stub_values,
    with_boundaries,
)
from mpsgen.commands.tryop.source import host_program, kernel_arity, shader_source
from mpsgen.commands.tryop.tolerances import opinfo_tolerances
from mpsgen.commands.tryop.values import Inputs, keep, make_inputs, traps, within_sampled_range
from mpsgen.errors import MpsgenError
from mpsgen.facts.params import checkout_enums
from mpsgen.facts.views import Views
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.owners import code_owners


@dataclass(frozen=True)
class TryOptions:
    backend: str = "auto"
    reference: str = "auto"
    seed: int = 0
    samples: int = 32
    stub: str | None = None  # the dispatch stub, where it is not named after the op
    strict: bool = False  # an untaken branch of the functor fails (exit 1) instead of warning
    examples: int = MAX_EXAMPLES  # mismatches kept per dtype (audit keeps them all to sort them by kind)
    # complex cases upstream's test never feeds are noted, not failed (`compare`'s beyond_samples); audit,
    # which looks for silent-correctness bugs beyond the test, judges them
    note_beyond_samples: bool = True


@dataclass(frozen=True)
class TryReport:
    op: str
    functor: str
    location: Location  # the functor's struct
    backend: str  # "host" or "mps"
    backend_detail: str  # the compiler, or the torch version
    not_run: tuple[str, ...]  # the other path, and why it did not run
    reference: str
    reference_note: str  # why the preferred reference was not used, if it was not
    results: tuple[DtypeResult, ...]
    seed: int
    source: str = ""  # the shader source that ran (MPS) or that the host driver wraps (host)
    scalar_sets: tuple[str, ...] = ()  # alpha and params kernels: each scalar set's label, in order
    reduction: bool = False  # a reduction: `functor` names its kernels (`prod_reduction*`)
    coverage: Coverage | None = None  # the functor's branches taken by try's samples (host, g++)
    coverage_why: str = ""  # why coverage was not measured
    strict: bool = False

    @property
    def ran(self) -> str:
        """What ran: `hypot_functor`, or a reduction's op structs (`prod_reduction* op structs`)."""
        return f"{self.functor} op structs" if self.reduction else f"{self.functor}_functor"

    @property
    def untaken(self) -> bool:
        """Whether a branch of the functor was never taken by try's samples."""
        return self.coverage is not None and bool(self.coverage.untaken)

    @property
    def exit_code(self) -> int:
        if any(r.status == "failed" for r in self.results):
            return 1
        return 1 if self.strict and self.untaken else 0


def choose_backend(requested: str) -> tuple[str, tuple[str, ...]]:
    """The path that runs ("mps" or "host") and a note on the one that does not."""
    no_mps, no_host = mps_unavailable(), host_unavailable()
    if requested == "mps" or (requested == "auto" and no_mps is None):
        if no_mps is not None:
            raise MpsgenError(f"--backend mps cannot run here: {no_mps}", hint="use --backend host (a C++ compiler and mpsgen's Metal prelude)")
        return "mps", ("host: not needed (MPS is available)",)
    if no_host is not None:
        raise MpsgenError(f"the functor cannot run here: no MPS ({no_mps}) and {no_host}",
                          hint="install g++ or clang++, or run on a Mac with MPS")
    return "host", ((f"mps: {no_mps}",) if no_mps else ("mps: not used (--backend host)",))


def choose_reference(op: str, arity: int, requested: str) -> tuple[Reference, Reference | None, str]:
    """The reference, a fallback for dtypes it has no kernel for (auto only), and a note."""
    if requested in ("auto", "torch"):
        found, why = torch_reference(op, arity)
        if found is not None:
            fallback = catalog_reference(op)[0] if requested == "auto" else None
            return found, fallback, ""
        if requested == "torch":
            raise MpsgenError(f"no torch reference for {op}: {why}", hint="use --reference catalog, or install torch")
    found, why_not = catalog_reference(op)
    if found is None:
        reason = why_not if requested == "catalog" else f"{why}; {why_not}"
        raise MpsgenError(f"nothing to compare {op} with: {reason}",
                          hint="install torch (pip install torch==2.13.0) so that its CPU op is the reference")
    note = "double-precision Python reference: where float arithmetic overflows (products of huge values) it can disagree with a float kernel that is right"
    return found, None, (note if requested == "catalog" else f"torch reference unavailable: {why}; {note}")


@dataclass(frozen=True)
class Prepared:
    """What `try` runs, before running it: the functor's facts, the shader source, and for alpha and
    params kernels how the scalars reach it."""

    facts: FunctorFacts
    source: str
    operands: tuple[int, ...]  # the op's tensor feeding each kernel operand
    scalars: KernelScalars | None = None  # for alpha and params kernels
    scalar_args: tuple[ScalarArg, ...] = ()  # the schema's scalars the host passes on
    sets: tuple[ScalarSet, ...] = ()
    overload: object = None  # torch's CPU OpOverload (torch is imported only when it runs)
    reference_label: str = ""
    enums: dict = None  # string-to-enum helpers the stub's call uses: helper -> {string: value}


def refused_by_reference(reference, case) -> str | None:
    """Why torch's CPU op refuses a scalar set (its error's first line), or None when it takes it."""
    probe = type(case)(case.metal_type, tuple(c[:1] for c in case.columns), case.note)
    try:
        reference.compute(probe, None)
    except (RuntimeError, ValueError) as exc:
        return f"the CPU op refuses it: {str(exc).splitlines()[0][:100]}"
    return None


def prepare(checkout: Checkout, op: str, reference: str = "auto", need_reference: bool = True,
            stub: str | None = None, *, views: Views | None = None,
            suggest: Callable[[Checkout, str], str] | None = None) -> Prepared:
    """The functor, its source and its scalars; refusals (exit 2) for what try cannot run. `views`
    and `suggest` as `lookup.functor_facts` takes them."""
    facts = functor_facts(checkout, op, stub, views=views, suggest=suggest)
    arity = kernel_arity(facts)
    if not 1 <= arity <= 3:
        raise MpsgenError(f"{op} takes {arity} tensors; try runs unary, binary and ternary functors", location=facts.location)
    if op in ITERATOR_OPERANDS and len(ITERATOR_OPERANDS[op]) == arity:
        operands = ITERATOR_OPERANDS[op]
    elif arity == facts.arity:
        operands = tuple(range(arity))
    else:
        raise MpsgenError(f"{facts.functor}_functor takes {arity} tensors and {op} {facts.arity}; try does not know "
                          "which of the op's tensors its iterator passes", location=facts.location,
                          hint="check it with `mpsgen verify` and the MPS tests")
    if facts.alpha and not facts.alpha_types:
        raise MpsgenError(f"{op}'s stub takes scalar parameters but {facts.functor}_functor is registered without an "
                          "alpha or params type", location=facts.location, hint="register it with REGISTER_*_ALPHA_OP")
    source = shader_source(checkout, facts, facts.input_types)
    if not facts.alpha:
        return Prepared(facts, source, operands)
    where = facts.host_location or facts.location
    kernel_scalars = read_kernel_scalars(source, facts.host_body, facts.host_params, dict(facts.alpha_types), where)
    if not need_reference:
        return Prepared(facts, source, operands, kernel_scalars)
    if reference == "catalog":
        raise MpsgenError(f"{op}'s kernel takes scalars; the catalog references take none",
                          hint="use --reference torch (pip install torch==2.13.0): torch's CPU op takes the same scalars")
    overload, label = torch_scalar_reference(op, facts.arity)
    if overload is None:
        raise MpsgenError(f"nothing to compare {op} with: {label}",
                          hint="install torch (pip install torch==2.13.0) so that its CPU op is the reference")
    args = schema_scalars(overload._schema)
    carried = host_arguments(args, kernel_scalars.host_params, facts.call)
    if carried is None:
        raise MpsgenError(f"the host function takes {len(kernel_scalars.host_params)} parameters besides the iterator "
                          f"({', '.join(kernel_scalars.host_params)}), {label} {len(args)} scalars "
                          f"({', '.join(a.name for a in args)})"
                          + ("" if facts.call is not None else
                             "; no call of the stub in aten/src/ATen/native/*.cpp says what the shared function passes"),
                          location=where,
                          hint="try maps them by name, else in order when the counts agree (a loss's reduction aside); "
                          "with the shared function's .cpp in the checkout it evaluates the call")
    enums = enum_helpers(checkout, facts.call)
    strings = {name: tuple(enums[helper]) for name, helper in _string_args(facts.call).items() if helper in enums}
    sets = scalar_sets(op, args, facts.call, strings, carried)
    if not kernel_scalars.struct:  # the functor's comparisons of its alpha: a set at each boundary
        text = checkout.read(facts.location.path) if checkout.exists(facts.location.path) else ""
        spans = functor_spans(text, facts.location.line) if text else ()
        sets = with_boundaries(sets, carried, scalar_boundaries(text, spans, kernel_arity(facts)))
    return Prepared(facts, source, operands, kernel_scalars, carried, sets, overload, label, enums)


def enum_helpers(checkout: Checkout, call) -> dict[str, dict[str, int]]:
    """The checkout's string-to-enum helpers the call uses (gelu's get_gelutype_enum): helper ->
    {string: enumerator value}."""
    if call is None or not any("(" in a.value for a in call.args):
        return {}
    return {e.helper: {s: e.value(en) for s, en in e.strings} for e in checkout_enums(checkout).values() if e.helper}


def _string_args(call) -> dict[str, str]:
    """Function parameter -> the helper its call argument passes it through (`get_gelutype_enum(approximate)`)."""
    out = {}
    for a in call.args if call is not None else ():
        m = re.fullmatch(r"(?:[\w:]*::)?(\w+)\s*\(\s*(\w+)\s*\)", a.value)
        if m:
            out[m.group(2)] = m.group(1)
    return out


@dataclass(frozen=True)
class TrySource:
    """`try --show-source`: the shader source and the kernels it defines."""

    op: str
    functor: str
    location: Location
    source: str
    kernels: tuple[tuple[str, str], ...]  # (kernel name, alpha or params type, "" when none)
    operands: int  # tensor operands each kernel takes


def try_source(checkout: Checkout, op: str, stub: str | None = None,
               suggest: Callable[[Checkout, str], str] | None = None) -> TrySource:
    """The exact source `try` compiles, without running it (no compiler or torch needed). `suggest`:
    the hint for an op with no native kernel (`lookup.functor_facts`)."""
    prepared = prepare(checkout, op, need_reference=False, stub=stub, suggest=suggest)
    facts = prepared.facts
    alphas = dict(facts.alpha_types) if facts.alpha else {}
    kernels = tuple((f"mpsgen_try_{t}", alphas.get(t, "")) for t in facts.input_types)
    return TrySource(op, facts.functor, facts.location, prepared.source, kernels, kernel_arity(facts))


def source_to_json(shown: TrySource) -> dict:
    return {
        "op": shown.op,
        "functor": f"{shown.functor}_functor",
        "path": shown.location.path,
        "line": shown.location.line,
        "operands": shown.operands,
        "kernels": [{"name": name, "alpha_type": alpha or None} for name, alpha in shown.kernels],
        "source": shown.source,
    }


def try_op(checkout: Checkout, op: str, options: TryOptions = TryOptions(),
           suggest: Callable[[Checkout, str], str] | None = None) -> TryReport:
    """Run the op's functor as it stands in `checkout` and compare it with the reference. Every fact
    is read through one Views of the checkout (no plan, nothing of edit/); `suggest`: the hint for an
    op with no native kernel, which the command supplies (`commands.confirm.kernel_hint`: which
    generating command would give it one)."""
    views = Views(checkout)
    found = native_reduction(checkout, op, views)
    if found is not None:
        return _try_reduction(checkout, op, found, options)
    prepared = prepare(checkout, op, options.reference, stub=options.stub, views=views, suggest=suggest)
    facts, source = prepared.facts, prepared.source
    backend, not_run = choose_backend(options.backend)
    special = _branch_values(checkout, prepared)
    inputs = [make_inputs(t, facts.arity, options.seed, options.samples, special.get(t, ())) for t in facts.input_types]
    bounded = loop_bounded_operands(source, facts.functor)  # a loop as long as an operand's value
    inputs = [within_sampled_range(i, bounded) for i in inputs]
    if prepared.scalars is not None:
        return _try_scalars(checkout, prepared, inputs, backend, not_run, options)
    reference, fallback, reference_note = choose_reference(op, facts.arity, options.reference)
    measured = None
    if backend == "mps":
        runs = _run_mps(source, inputs, reference, fallback)
        torch = import_torch()
        detail = f"torch {torch.__version__} torch.mps.compile_shader"
    else:
        owners = code_owners(checkout.read(facts.kernel_file), facts.kernel_file)
        outputs, detail, measured = run_on_host(
            host_program(checkout, facts, source, _operands(inputs, prepared.operands)), facts.kernel_file,
            functor=facts.functor, owners=owners, root=checkout.root, coverage=_target(checkout, facts))
        detail = f"{detail} with mpsgen's Metal prelude"
        runs = _host_runs(inputs, outputs, reference, fallback)
    results = _results(runs, opinfo_tolerances(checkout, op), options.examples,
                       options.note_beyond_samples and samples_finite_parts(checkout, op),
                       options.note_beyond_samples,
                       unsampled_domain(checkout, op) if options.note_beyond_samples else None)
    return TryReport(op, facts.functor, facts.location, backend, detail, not_run, reference.name, reference_note,
                     tuple(results), options.seed, source, **_coverage_fields(backend, measured, options))


_REDUCTION_UNMEASURED = "not measured for a reduction's op structs"


def _try_reduction(checkout: Checkout, op: str, found, options: TryOptions) -> TryReport:
    """A reduction: each registered pair's op struct over the reduced-dim cases (`tryop.reduction`),
    on the host only: its variant kernels need a GPU (the report says so)."""
    reduction, location = found
    if options.backend == "mps":
        raise MpsgenError(f"--backend mps does not run reductions yet: {op}'s variant kernels are launched by "
                          f"{reduction.function}'s launcher, which try does not reproduce", hint="use --backend host")
    if options.reference == "catalog":
        raise MpsgenError(f"the catalog holds no reference for the reduction {op}", hint="use --reference torch")
    routing = reduction.host.orders.get(reduction.function) if reduction.host is not None else None
    if routing is not None:
        # an order picks the kernels (linalg__powsum): each order through the path its host function takes
        results, compiler, source = try_reduction_orders(checkout, op, reduction, routing, options.seed, location)
        label = f"torch {import_torch().__version__} CPU: torch.ops.aten.{op}"
        functor = "/".join(f"{p}_reduction*" for p in reduction.prefixes)
        return TryReport(op, functor, location, "host", f"{compiler} with mpsgen's Metal prelude (serial driver)",
                         not_run_note() + (ORDERS_NOT_RUN,), label, "", tuple(results), options.seed, source,
                         tuple(dict.fromkeys(r.scalars for r in results)), reduction=True,
                         coverage_why=_REDUCTION_UNMEASURED)
    if op not in reduction.prefixes:
        # mean launches sum_ kernels with a divisor finalize receives: not the op struct alone
        raise MpsgenError(f"{op}'s host function {reduction.function} launches "
                          f"{'/'.join(p + '_reduction*' for p in reduction.prefixes)} kernels, not {op}'s own; try "
                          "runs an op's own op struct (what the host passes finalize is not modelled)",
                          location=location, hint="check it with the MPS tests")
    results, compiler, source = try_reduction(checkout, op, reduction, options.seed, location)
    label = f"torch {import_torch().__version__} CPU: torch.{op}"
    functor = "/".join(f"{p}_reduction*" for p in reduction.prefixes)
    return TryReport(op, functor, location, "host", f"{compiler} with mpsgen's Metal prelude (serial driver)",
                     not_run_note(), label, "", tuple(results), options.seed, source,
                     tuple(dict.fromkeys(r.scalars for r in results)), reduction=True,
                     coverage_why=_REDUCTION_UNMEASURED)


def _operands(inputs: list[Inputs], operands: tuple[int, ...]) -> list[Inputs]:
    """The kernel's operands from the op's tensors (threshold: self twice)."""
    if operands == tuple(range(len(operands))) and all(len(i.columns) == len(operands) for i in inputs):
        return inputs
    return [Inputs(i.metal_type, tuple(i.columns[k] for k in operands), i.note) for i in inputs]


def _scalar_plan(prepared: Prepared, numel: dict | None = None) -> tuple[dict, dict]:
    """Per input type: (alpha type, fields, [(set index, field values)]) for the sets the host can
    pass, and {(type, set index): why not} for the others."""
    facts, ks = prepared.facts, prepared.scalars
    numel = numel or {}
    plan, refused = {}, {}
    for t in facts.input_types:
        alpha_type, fields = ks.fields_by_type[t]
        runnable = []
        for index, chosen in enumerate(prepared.sets):
            values = field_values(fields, stub_values(facts.op, prepared.scalar_args, chosen, ks.host_params,
                                                      facts.call, numel.get(t), prepared.enums))
            if isinstance(values, str):
                refused[(t, index)] = values
            else:
                runnable.append((index, values))
        plan[t] = (alpha_type, fields, runnable)
    return plan, refused


def _try_scalars(checkout: Checkout, prepared: Prepared, inputs: list[Inputs], backend: str, not_run, options) -> TryReport:
    """An alpha or params kernel: every scalar set against torch's CPU op with the same scalars."""
    facts, source = prepared.facts, prepared.source
    plan, refused = _scalar_plan(prepared, {case.metal_type: case.count for case in inputs})
    finite = options.note_beyond_samples and samples_finite_parts(checkout, facts.op)
    references = [scalar_reference(prepared.overload, prepared.reference_label, s.as_dict()) for s in prepared.sets]
    for index, chosen in enumerate(prepared.sets):  # a set the CPU op refuses (huber's delta <= 0)
        why = refused_by_reference(references[index], inputs[0]) if inputs else None
        if why is not None:
            for case in inputs:
                refused[(case.metal_type, index)] = why
            plan = {t: (a, f, [(i, v) for i, v in runs if i != index]) for t, (a, f, runs) in plan.items()}
    measured = None
    if backend == "mps":

        torch = import_torch()
        out_dtypes = {}
        for case in inputs:
            want = _expected(case, None, references[0], None)
            out_dtypes[case.metal_type] = (METAL_TO_TORCH.get(want.out_type, "float32") if not isinstance(want, str)
                                           else METAL_TO_TORCH[case.metal_type])
        outputs = run_on_mps(source, _operands(inputs, prepared.operands), out_dtypes, plan)
        detail = f"torch {torch.__version__} torch.mps.compile_shader"
    else:
        owners = code_owners(checkout.read(facts.kernel_file), facts.kernel_file)
        program = host_program(checkout, facts, source, _operands(inputs, prepared.operands), plan)
        outputs, detail, measured = run_on_host(program, facts.kernel_file, functor=facts.functor, owners=owners,
                                                root=checkout.root, coverage=_target(checkout, facts))
        detail = f"{detail} with mpsgen's Metal prelude"
    by_name = {o.metal_type: o for o in outputs}
    overrides = opinfo_tolerances(checkout, facts.op)
    results = []
    for index, chosen in enumerate(prepared.sets):
        runs, skipped = [], {}
        for case in inputs:
            if (case.metal_type, index) in refused:
                why = refused[(case.metal_type, index)]
                skipped[case.metal_type] = DtypeResult(case.metal_type, METAL_TO_TORCH[case.metal_type], "", 0, 0.0, 0.0,
                                                       0, (), None, "skipped", why, chosen.label)
                continue
            out = by_name.get(f"{case.metal_type}#{index}")
            if out is None or len(out.values) != case.count:
                raise MpsgenError(f"the try program printed no results for {case.metal_type} with {chosen.label}",
                                  hint="run with --debug; this is a bug in mpsgen")
            ran = [i for i, v in enumerate(out.values) if v is not None]
            kept = keep(case, ran, _TRAP_NOTE)
            out = Outputs(case.metal_type, out.out_type, tuple(out.values[i] for i in ran))
            runs.append((kept, out, _expected(kept, out.out_type, references[index], None)))
        compared = {r.metal_type: replace(r, scalars=chosen.label) for r in _results(runs, overrides, options.examples,
                                                                                     finite, options.note_beyond_samples)}
        results += [skipped.get(case.metal_type) or compared[case.metal_type] for case in inputs]
    return TryReport(facts.op, facts.functor, facts.location, backend, detail, not_run, prepared.reference_label, "",
                     tuple(results), options.seed, source, tuple(s.label for s in prepared.sets),
                     **_coverage_fields(backend, measured, options))


def _branch_values(checkout: Checkout, prepared: Prepared) -> dict[str, list]:
    """Per input type, the values where the functor's branches switch (`branchvalues`): its
    comparisons' boundaries, every scalar set's values, the OpInfo's domain; each with its neighbours."""
    facts = prepared.facts
    path = facts.location.path
    text = checkout.read(path) if checkout.exists(path) else ""
    boundaries = []
    for first, last in functor_spans(text, facts.location.line) if text else ():
        boundaries += [b for b in boundary_inputs(text, first, last) if b not in boundaries]
    scalars = []
    for chosen in prepared.sets:
        for _, v in chosen.values:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) not in scalars:
                scalars.append(float(v))
    domain = domain_values(opinfo_domain(checkout, facts.op))
    return {t: branch_values(t, boundaries, scalars, domain) for t in facts.input_types}


def _target(checkout: Checkout, facts: FunctorFacts) -> Target:
    """The functor's lines (its struct, to the closing brace, and the file's functions it calls) in the
    file holding it."""
    path = facts.location.path
    text = checkout.read(path) if checkout.exists(path) else ""
    return Target(path, functor_spans(text, facts.location.line), text)


def _coverage_fields(backend: str, measured, options: TryOptions) -> dict:
    if backend != "host":
        return {"coverage_why": "measured only on the host build: --backend host", "strict": options.strict}
    return {"coverage": measured.coverage, "coverage_why": measured.why, "strict": options.strict}


def _results(runs, overrides: dict, examples: int = MAX_EXAMPLES, finite_samples: bool = False,
             edge: bool = True, domain=None) -> list[DtypeResult]:
    """Each type's comparison: skipped without a reference; failed when the kernel's output type is
    not the reference's; the OpInfo's MPS tolerance for the dtype where it has one. `edge`: an
    overflow at the top of the type's range is noted (try), not judged (audit judges it). `domain`:
    the OpInfo's domain when upstream's samples stay its eps inside it (`unsampled_domain`; try)."""
    results = []
    for case, out, want in runs:
        dtype = METAL_TO_TORCH[case.metal_type]
        if isinstance(want, str):
            results.append(DtypeResult(case.metal_type, dtype, out.out_type, 0, 0.0, 0.0, 0, (), None, "skipped", want))
            continue
        override = overrides.get(dtype)
        note = want.note
        if override is not None:
            note = "; ".join(n for n in (note, f"tolerance from {override.location} (the OpInfo's MPS override)") if n)
        unsampled = None
        if domain is not None and want.span is not None and len(case.columns) == 1:
            def unsampled(i, case=case, want=want):
                return want.span(i) if near_domain_end(case.columns[0][i], domain) else None
        result = compare(case, out.values, want.values, out.out_type, note, want.alone,
                         (override.rtol, override.atol) if override else None, want.wide, examples,
                         finite_samples, edge, unsampled)
        if want.out_type != out.out_type:
            why = f"the kernel returns {out.out_type}, the reference {want.out_type}"
            result = replace(result, status="failed", note="; ".join(n for n in (result.note, why) if n))
        results.append(result)
    return results


_TRAP_NOTE = "they trap on a CPU (integer division by 0, or of the minimum by -1), where Metal returns some value"


def _host_runs(inputs: list[Inputs], outputs: list[Outputs], reference: Reference, fallback: Reference | None):
    """(inputs, outputs, expected) per type; cases the host driver did not run are left out of all three."""
    by_type = {o.metal_type: o for o in outputs}
    runs = []
    for case in inputs:
        out = by_type.get(case.metal_type)
        if out is None or len(out.values) != case.count:
            raise MpsgenError(f"the try program printed no results for {case.metal_type}", hint="run with --debug; this is a bug in mpsgen")
        ran = [i for i, v in enumerate(out.values) if v is not None]
        case = keep(case, ran, _TRAP_NOTE)
        out = Outputs(out.metal_type, out.out_type, tuple(out.values[i] for i in ran))
        runs.append((case, out, _expected(case, out.out_type, reference, fallback)))
    return runs


def _expected(case: Inputs, out_type: str | None, reference: Reference, fallback: Reference | None):
    """The reference's values for `case`, else the fallback's (with a note), else why there are none."""
    try:
        return reference.compute(case, out_type)
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        why = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        if fallback is None:
            return f"no reference: {why}"
        want = fallback.compute(case, out_type)
        note = f"{reference.name} refuses it ({why}); compared with {fallback.name}"
        return Expected(want.values, want.out_type, "; ".join(n for n in (note, want.note) if n))


def _run_mps(source: str, inputs: list[Inputs], reference: Reference, fallback: Reference | None):
    """As _host_runs, on MPS: the reference comes first (it gives the output dtype); integer cases
    that trap on the CPU are left out when the reference refuses them."""
    prepared, expected = [], {}
    for case in inputs:
        if any(traps(case, i) for i in range(case.count)) and isinstance(_expected(case, None, reference, None), str):
            case = keep(case, [i for i in range(case.count) if not traps(case, i)], _TRAP_NOTE)
        want = _expected(case, None, reference, fallback)
        prepared.append(case)
        expected[case.metal_type] = want
    out_dtypes = {t: METAL_TO_TORCH.get(e.out_type, "float32") if not isinstance(e, str) else METAL_TO_TORCH[t]
                  for t, e in expected.items()}
    outputs = run_on_mps(source, prepared, out_dtypes)
    return [(case, out, expected[case.metal_type]) for case, out in zip(prepared, outputs)]


def report_to_json(report: TryReport) -> dict:
    def number(x):
        if isinstance(x, complex):
            return {"re": number(x.real), "im": number(x.imag)}
        if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            return repr(x)
        return x

    return {
        "op": report.op,
        "functor": report.ran,
        "path": report.location.path,
        "line": report.location.line,
        "backend": report.backend,
        "backend_detail": report.backend_detail,
        "not_run": list(report.not_run),
        "reference": report.reference,
        "reference_note": report.reference_note,
        "seed": report.seed,
        "exit_code": report.exit_code,
        "scalar_sets": list(report.scalar_sets),
        "dtypes": [
            {
                "scalars": r.scalars, "metal_type": r.metal_type, "dtype": r.dtype, "out_type": r.out_type, "cases": r.cases,
                "max_abs": number(r.max_abs), "max_rel": number(r.max_rel), "mismatches": r.mismatches,
                "tolerance": None if r.tolerance is None else {"rtol": r.tolerance[0], "atol": r.tolerance[1]},
                "status": r.status, "note": r.note, "cpu_overflows": r.cpu_overflows,
                "nearer_float64": len(r.nearer_float64), "edge_overflows": len(r.edge_overflows),
                "beyond_samples": len(r.beyond_samples),
                "nearer_float64_cases": [{"inputs": [number(v) for v in inputs], "got": number(got), "cpu": number(want),
                                          "float64": number(wide)} for inputs, got, want, wide in r.nearer_float64[:10]],
                "examples": [{"inputs": [number(v) for v in m.inputs], "got": number(m.got), "want": number(m.want)}
                             for m in r.examples],
            }
            for r in report.results
        ],
        "coverage": coverage_to_json(report.coverage, report.coverage_why),
        "source": report.source,
    }
