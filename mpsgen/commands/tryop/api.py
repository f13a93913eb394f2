"""`mpsgen try OP`: the pipeline. Find the functor, build the shader source, run it (MPS or host),
compute the reference, compare per dtype."""

from __future__ import annotations

from dataclasses import dataclass, replace

from mpsgen.commands.tryop.compare import DtypeResult, compare
from mpsgen.commands.tryop.lookup import METAL_TO_TORCH, functor_facts
from mpsgen.commands.tryop.reference import Expected, Reference, catalog_reference, import_torch, torch_reference
from mpsgen.commands.tryop.run import Outputs, host_unavailable, mps_unavailable, run_on_host, run_on_mps
from mpsgen.commands.tryop.source import host_program, shader_source
from mpsgen.commands.tryop.tolerances import opinfo_tolerances
from mpsgen.commands.tryop.values import Inputs, keep, make_inputs, traps
from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.owners import code_owners


@dataclass(frozen=True)
class TryOptions:
    backend: str = "auto"
    reference: str = "auto"
    seed: int = 0
    samples: int = 32


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

    @property
    def exit_code(self) -> int:
        return 1 if any(r.status == "failed" for r in self.results) else 0


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


def try_op(checkout: Checkout, op: str, options: TryOptions = TryOptions()) -> TryReport:
    facts = functor_facts(checkout, op)
    if facts.alpha:
        raise MpsgenError(f"{op}'s stub takes scalar parameters (an alpha or a params struct); try runs functors without them for now",
                          location=facts.location, hint="check it with `mpsgen verify` and the MPS tests")
    if not 1 <= facts.arity <= 3:
        raise MpsgenError(f"{op} takes {facts.arity} tensors; try runs unary, binary and ternary functors", location=facts.location)
    backend, not_run = choose_backend(options.backend)
    reference, fallback, reference_note = choose_reference(op, facts.arity, options.reference)
    source = shader_source(checkout, facts, facts.input_types)
    inputs = [make_inputs(t, facts.arity, options.seed, options.samples) for t in facts.input_types]
    if backend == "mps":
        runs = _run_mps(source, inputs, reference, fallback)

        torch = import_torch()
        detail = f"torch {torch.__version__} torch.mps.compile_shader"
    else:

        owners = code_owners(checkout.read(facts.kernel_file), facts.kernel_file)
        outputs, detail = run_on_host(host_program(checkout, facts, source, inputs), facts.kernel_file,
                                      functor=facts.functor, owners=owners)
        detail = f"{detail} with mpsgen's Metal prelude"
        runs = _host_runs(inputs, outputs, reference, fallback)
    results = _results(runs, opinfo_tolerances(checkout, op))
    return TryReport(op, facts.functor, facts.location, backend, detail, not_run, reference.name, reference_note,
                     tuple(results), options.seed)


def _results(runs, overrides: dict) -> list[DtypeResult]:
    """Each type's comparison: skipped without a reference; failed when the kernel's output type is
    not the reference's; the OpInfo's MPS tolerance for the dtype where it has one."""
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
        result = compare(case, out.values, want.values, out.out_type, note, want.alone,
                         (override.rtol, override.atol) if override else None)
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
        "functor": f"{report.functor}_functor",
        "path": report.location.path,
        "line": report.location.line,
        "backend": report.backend,
        "backend_detail": report.backend_detail,
        "not_run": list(report.not_run),
        "reference": report.reference,
        "reference_note": report.reference_note,
        "seed": report.seed,
        "exit_code": report.exit_code,
        "dtypes": [
            {
                "metal_type": r.metal_type, "dtype": r.dtype, "out_type": r.out_type, "cases": r.cases,
                "max_abs": number(r.max_abs), "max_rel": number(r.max_rel), "mismatches": r.mismatches,
                "tolerance": None if r.tolerance is None else {"rtol": r.tolerance[0], "atol": r.tolerance[1]},
                "status": r.status, "note": r.note,
                "examples": [{"inputs": [number(v) for v in m.inputs], "got": number(m.got), "want": number(m.want)}
                             for m in r.examples],
            }
            for r in report.results
        ],
    }
