"""`mpsgen scan`: where a checkout stands in the move off MPSGraph, and what `migrate` can take next.

For every operator of `native_functions.yaml` (ops are base names, as `migrate` takes them) the scan
reports its MPS backing:

- `native`: an `MPS` key shares a dispatch line with other devices (`CPU, CUDA, MPS: atan2_out`): the
  shared stub/kernel runs natively on MPS;
- `mpsgraph`: a separate `MPS: x_mps` kernel whose definition in `mps/operations/*.mm` builds an
  MPSGraph, directly or through helpers of its file (`LookUpOrCreateCachedGraph`, `MPSGraph*`,
  `runMPSGraph`, ...);
- `mps-other`: a separate MPS kernel whose definition uses no MPSGraph (hand-written Metal, ...);
- `mps-unknown`: a separate MPS kernel whose definition is not found in `mps/operations/*.mm` (or its
  file cannot be scanned: see the report's notes);
- `composite`: no MPS key, but a `CompositeImplicitAutograd`/`CompositeExplicitAutograd*` kernel or no
  dispatch block at all (CompositeImplicitAutograd by default): nothing to write; an entry with
  `structured_delegate` takes the backing of the entry it delegates to;
- `none`: backend kernels only, none for MPS (CPU fallback or unsupported).

An op with several overloads takes the first of `mpsgraph, mps-unknown, mps-other, native, none,
composite` that one of its entries has.

Graph sites are `LookUpOrCreateCachedGraph` calls in code (comments and strings masked): per kernel,
those in its own definition; per file, all of the file's.

Test expectations: an entry of a `common_mps.py` xfail/skip dict (key -> dtype list or `None`) counts
for op `op` when its key is the `name + variant_test_name` of an OpInfo whose `name` is `op` (dots read
as underscores: `special.ndtri`), `nn.functional.op`, or whose `aten_name=` is `op`; keys no OpInfo
has count by the same rule on the key itself. OpInfos are found by a text scan of
`common_methods_invocations.py` (no parse).

Candidates for `migrate`, easiest first (within a tier: the smallest legacy implementation first, kernels
whose definition was not found last):
- `ready`: a shared `CPU, CUDA: ...` line, a stub with a supported signature and a catalog body;
  or a body another source gives (`mpsgen.facts.bodies`: a c10::metal function, the CPU kernel's
  scalar code, the MPSGraph graph; the reason names it with its path:line);
- `expr`: the same without a body from any source (or a Scalar alpha, where the catalog does not
  apply), the reason saying what each source lacked: `migrate OP --expr ...`;
- `reduce`: a reduction (its stub declared in the reduction family's header, `ReduceOps.h`) that
  `migrate OP` completes: a reduction catalog body, the kernel file's registration macro and
  launcher read (`mpsgen.facts.reduction`), confirmed by planning the migration in memory;
- `port`: anything else (no shared line, no stub, a signature mpsgen cannot generate, too many
  inputs, a `dim`/`int[]` argument: a reduction or shape op, a reduction without a catalog body or
  whose stub passes a scalar the kernels cannot take): a hand-written port; the reason says which.
"""

from __future__ import annotations

import ast
import bisect
import gc
import multiprocessing
import os
import pickle
import re
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace

from mpsgen.commands.scanreport import (
    BACKINGS,
    GRAPH_SITE,
    TIERS,
    Candidate,
    FileTotal,
    MpsKernel,
    OpRecord,
    ScanReport,
)
from mpsgen.commands.confirm import migrate_refusal
from mpsgen.commands.kept import environment, keep_scan, kept_scan
from mpsgen.commands.migrate import body_turned_down
from mpsgen.facts.paramskernel import params_candidate
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.bodyoffer import NoBody
from mpsgen.facts.catalog import load_catalog, lookup
from mpsgen.facts.functor import Body
from mpsgen.facts.params import checkout_enums, is_params_stub
from mpsgen.facts.paramskernel import derived_params_body
from mpsgen.facts.perdevice import per_device_sites
from mpsgen.facts.plan import choose_body
from mpsgen.facts.reduction import REDUCTION_FAMILY
from mpsgen.facts.resolve import Options, composite_of, generation_problem, resolve_op, reused_functor
from mpsgen.facts.rules import MPSGRAPH
from mpsgen.facts.views import (
    DispatchSite,
    Views,
    functor_name_of_stub,
    picked_entries,
    groups_joined,
    groups_of_pairs,
    is_legacy_line,
    is_mps_only,
    resolve_stub,
    shared_sites,
)
from mpsgen.model import Location
from mpsgen.read.cache import cached_index
from mpsgen.read.checkout import COMMON_MPS, Checkout, Reads, add_reads, recording, recording_new
from mpsgen.read.cpp import find_definitions, mask_code
from mpsgen.read.nfyaml import NativeFunctions, YamlEntry
from mpsgen.read.pylists import match_bracket

_OP_PRIORITY = ("mpsgraph", "mps-unknown", "mps-other", "native", "none", "composite")
_GRAPH_SITE = re.compile(rf"\b{GRAPH_SITE}\b")
_IDENT = re.compile(r"\b[A-Za-z_]\w*")
_REGISTRATION_MACROS = frozenset({"REGISTER_DISPATCH", "REGISTER_MPS_DISPATCH", "REGISTER_NO_CPU_DISPATCH"})


# --------------------------------------------------------------------------------------------------
# The scan
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewOpCandidate:
    """An op with CPU/CUDA kernels through a shared stub and no MPS kernel: `new-op` can take it
    (tier `ready`: `mpsgen new-op OP` completes with the catalog's body; `expr`: it needs --expr)."""

    op: str
    tier: str
    stub: str
    signature: str
    location: Location
    reason: str
    arity: int  # tensor operands of the functor


def new_op_candidates(checkout: Checkout) -> tuple[NewOpCandidate, ...]:
    """Ops `new-op` can take, easiest first (ready before expr, then by name). Each is planned in
    memory as `mpsgen new-op OP` would plan it; an op it would refuse is not listed, and one it
    would refuse only for want of a functor body is listed as `expr`."""

    views = Views(Workspace(checkout), disk_cache=True)
    nf = views.native_functions
    views.all_stubs()
    catalog = load_catalog()
    found = []
    for op in nf.op_names:
        entries = nf.op_entries(op)
        if any(is_mps_only(line) for e in entries for line in e.dispatch):
            continue
        shared = shared_sites(entries)
        legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
        if not shared or any(groups_joined(shared)):
            continue
        stub, stub_problem = resolve_stub(views, op, shared)[:2]
        if generation_problem(views, op, shared, legacy, stub, stub_problem, "new-op", entries=entries) is not None:
            continue
        if stub.header in REDUCTION_FAMILY:
            if migrate_refusal(checkout, op, views, _templates(views), mode="new-op") is None:
                found.append(NewOpCandidate(op, "reduce", stub.name, stub.signature, shared[0].line.location,
                                            "reduction, reduction catalog body", 1))
            continue
        refusal = migrate_refusal(checkout, op, views, _templates(views), mode="new-op")
        functor = functor_name_of_stub(stub.name)
        where = shared[0].line.location
        arity = len(shared[0].entry.tensor_inputs)
        entry = lookup(functor, catalog) or lookup(op, catalog)
        if refusal is None and entry is not None:
            found.append(NewOpCandidate(op, "ready", stub.name, stub.signature, where,
                                        f"catalog body ({', '.join(entry.supports)})", arity))
        elif refusal is None or "--expr" in str(refusal):
            derived, lacked = derived_body(views, op, "new-op") if refusal is None else (None, "")
            if derived is not None:
                found.append(NewOpCandidate(op, "ready", stub.name, stub.signature, where, f"body from {derived}", arity))
            else:
                found.append(NewOpCandidate(op, "expr", stub.name, stub.signature, where,
                                            f"no catalog body{lacked}: pass --expr", arity))
    return tuple(sorted(found, key=lambda c: (TIERS.index(c.tier), c.op)))


def scan_checkout(checkout: Checkout) -> ScanReport:
    """Read the checkout once and classify every operator of native_functions.yaml (through the op
    facts of `mpsgen.facts.views` and the refusals of `mpsgen.facts.resolve`, as migrate would).
    The report is kept in the user cache with everything it was computed from
    (`mpsgen.commands.kept`): a scan of a checkout nothing changed in is that report."""
    env = environment(checkout.root)
    kept = kept_scan(checkout, env)
    if kept is not None:
        return kept
    with recording(checkout.root) as reads:
        report = _scan_checkout(checkout)
    keep_scan(checkout, report, reads, env)
    return report


def _scan_checkout(checkout: Checkout, jobs: int | None = None) -> ScanReport:
    views = Views(Workspace(checkout), disk_cache=True)
    nf = views.native_functions
    views.all_stubs()  # one read of every header: every op looks its stub up
    catalog = load_catalog()
    notes: list[str] = []
    legacy_names = {line.kernel.rsplit("::", 1)[-1] for e in nf.entries for line in e.dispatch if is_mps_only(line)}
    definitions, files = _host_definitions(views, legacy_names, notes)
    metal_groups = _metal_groups(views, notes)
    xfail_by_op = _xfail_by_op(views, notes)

    def record(op: str) -> OpRecord:
        return _op_record(views, op, nf.op_entries(op), catalog, definitions, metal_groups, xfail_by_op)

    def heavy(op: str) -> bool:  # a legacy MPS kernel: _op_record plans it, maybe tries its body
        return any(is_legacy_line(line) for entry in nf.op_entries(op) for line in entry.dispatch)

    records = classify_all(views, nf.op_names, record, jobs, heavy)
    records.sort(key=lambda r: r.op)
    return ScanReport(str(checkout.root), tuple(records), tuple(files), tuple(notes))


def _entry_backing(entry: YamlEntry, nf: NativeFunctions, kernels: dict[str, MpsKernel], seen: frozenset = frozenset()) -> str:
    mps = [line for line in entry.dispatch if "MPS" in line.keys]
    if mps:
        legacy = [kernels[line.kernel].backing for line in mps if is_mps_only(line)]
        return min(legacy, key=_OP_PRIORITY.index) if legacy else "native"
    delegate = entry.structured_delegate
    if delegate:  # dense kernels come from the `.out` entry; lines here are sparse/nested ones
        target = nf.entry(delegate)
        if target is not None and delegate not in seen:
            return _entry_backing(target, nf, kernels, seen | {delegate})
        return "none"
    if any(key.startswith("Composite") for line in entry.dispatch for key in line.keys):
        return "composite"
    return "none" if entry.dispatch else "composite"


def _op_record(views, op, entries, catalog, definitions, metal_groups, xfail_by_op) -> OpRecord:
    nf = views.native_functions
    kernels: dict[str, MpsKernel] = {}
    for entry in entries:
        for line in entry.dispatch:
            if is_mps_only(line) and line.kernel not in kernels:
                kernels[line.kernel] = _kernel(line.kernel, entry.name, line.location, definitions)
    overloads = tuple((e.name, _entry_backing(e, nf, kernels)) for e in entries)
    backing = min((b for _, b in overloads), key=_OP_PRIORITY.index)

    shared = shared_sites(entries)
    legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
    # a per-device op (CPU: gelu_out_cpu, CUDA: gelu_out_cuda, MPS: gelu_out_mps): its CPU lines carry the stub call
    sites = shared or (tuple(cpu for cpu, _ in per_device_sites(entries)) if legacy else ())
    stub, stub_problem = (resolve_stub(views, op, shared, entries=() if shared else entries)[:2]) if sites else (None, "")
    functor = functor_name_of_stub(stub.name) if stub else None
    picked = picked_entries(views, entries, stub) if shared else None
    if picked is not None:  # one stub of several (pow): migrate's overloads and functor name (facts.views.read_op)
        legacy = tuple(DispatchSite(e, line) for e in picked for line in e.dispatch if is_legacy_line(line))
        functor = op
    groups = metal_groups.get(functor or op, ())

    candidate = None
    if legacy:
        candidate = _candidate(views, op, entries, shared, legacy, stub, stub_problem, functor, catalog, backing,
                               sites)
    xfail_keys = xfail_by_op.get(op, Counter())
    return OpRecord(
        op=op,
        backing=backing,
        location=entries[0].location,
        overloads=overloads,
        kernels=tuple(kernels.values()),
        stub=stub.name if stub else None,
        stub_signature=stub.signature if stub else None,
        stub_location=stub.location if stub else None,
        functor=functor,
        metal_dtypes=groups,
        xfail_entries=sum(xfail_keys.values()),
        xfail_keys=tuple(sorted(xfail_keys)),
        candidate=candidate,
    )


def _candidate(views, op, entries, shared, legacy, stub, stub_problem, functor, catalog, backing,
               sites=()) -> Candidate:
    problem = generation_problem(views, op, shared, legacy, stub, stub_problem, "migrate", entries=entries)
    if problem is not None:
        return Candidate("port", problem.message)
    composite = composite_of(views, op, shared, stub)
    if composite is not None:  # no kernel of its own: the dispatch line and the legacy removal
        refusal = migrate_refusal(views.checkout, op, views, _templates(views))
        if refusal is not None:
            return Candidate("port", f"migrate refuses: {refusal}")
        return Candidate("ready", f"no kernel of its own: {composite.describe()}")
    if stub.header in REDUCTION_FAMILY:  # a reduction with a catalog body (mpsgen/facts/reduction.py)
        refusal = migrate_refusal(views.checkout, op, views, _templates(views))
        if refusal is not None:
            return Candidate("port", f"migrate refuses: {refusal}")
        graph = "" if backing == "mpsgraph" else f" ({backing} kernel)"
        return Candidate("reduce", f"reduction ({stub.name}), reduction catalog body{graph}")
    if is_params_stub(stub, checkout_enums(views.ws)):  # several scalars: a params struct (mpsgen/params.py)
        tier, why = params_candidate(views, op, shared or sites, stub, functor, catalog, backing)
        if tier == "expr":  # no catalog body: the derived sources, as migrate asks them
            derived, lacked = derived_params(views, op)
            if derived is not None:
                return _derived_candidate(views, op, f"params stub, body from {derived}", "")
            head, sep, tail = why.partition(": pass --expr")
            return Candidate(tier, head + lacked + sep + tail)
        refusal = migrate_refusal(views.checkout, op, views, _templates(views)) if tier == "ready" else None
        if refusal is not None:
            return Candidate("port", f"migrate refuses: {refusal}")
        return Candidate(tier, why)
    arity = len((shared or sites)[0].entry.tensor_inputs)
    alpha = stub.scalar_count == 1
    entry = lookup(functor, catalog) or lookup(op, catalog)
    graph = "" if backing == "mpsgraph" else f" ({backing} kernel)"
    reused = reused_functor(views, op, stub)
    if reused is not None:  # no body to find: migrate registers the stub with a functor the file has
        refusal = migrate_refusal(views.checkout, op, views, _templates(views))
        if refusal is not None:
            return Candidate("port", f"migrate refuses: {refusal}")
        return Candidate("ready", f"supported stub signature, the existing {reused}_functor reused{graph}")
    if entry is not None and entry.alpha == alpha and entry.arity == arity:
        refusal = migrate_refusal(views.checkout, op, views, _templates(views))
        if refusal is not None:
            return Candidate("port", f"migrate refuses: {refusal}")
        return Candidate("ready", f"supported stub signature, catalog body ({', '.join(entry.supports)}){graph}")
    derived, lacked = derived_body(views, op, "migrate")
    if derived is not None:
        return _derived_candidate(views, op, f"supported stub signature, body from {derived}", graph)
    if entry is not None and alpha and not entry.alpha:
        why = "the stub takes a Scalar alpha, which the catalog body does not"
    elif entry is not None and entry.alpha and not alpha:
        why = "the catalog body takes a Scalar alpha, which the stub does not pass"
    elif entry is not None:
        why = f"the catalog body is {entry.arity}-ary, the op has {arity} tensor inputs"
    else:
        why = "no catalog body"
    return Candidate("expr", f"supported stub signature, {why}{lacked}: pass --expr{graph}")


@dataclass(frozen=True)
class _Derived:
    """A candidate whose body a source derived, its check still to run (`_confirm_derived`; in
    `classify_all`'s workers where there are cores)."""

    op: str
    what: str
    graph: str


def _derived_candidate(views, op: str, what: str, graph: str) -> _Derived:
    return _Derived(op, what, graph)


def _confirm_derived(views, derived: _Derived) -> Candidate:
    """A candidate whose body a source derived: ready when migrate plans it and its try check passes."""
    op, what, graph = derived.op, derived.what, derived.graph
    refusal = migrate_refusal(views.checkout, op, views, _templates(views))
    if refusal is not None:  # the body is there, but not for every dtype the tests expect
        return Candidate("expr", f"{what}, but migrate refuses it: {refusal}: pass --expr{graph}")
    turned_down = body_turned_down(views.checkout, op, views, _templates(views))
    if turned_down:  # migrate runs a derived body through try before writing it: so does "ready"
        why = turned_down.split(" not written: ", 1)[-1]  # the note names the body `what` names already
        return Candidate("expr", f"{what}, but migrate would not write it: {why}: pass --expr{graph}")
    return Candidate("ready", f"{what}{graph}")


# forked workers classify ops and check the derived candidates: the scan's Views, and how it
# classifies an op, as they were when the workers forked
_FORKED: tuple[Views, Callable[[str], OpRecord] | None] | None = None
MAX_JOBS = 4  # each worker imports torch (~250 MB) for its try runs
JOBS_VAR = "MPSGEN_JOBS"  # how many workers (1: all in the scan's own process); default the cores
CHUNKS_PER_JOB = 8  # tasks a worker for the ops without a legacy kernel (each takes ms)
HEAVY_CHUNK = 4  # ops with a legacy kernel a task (each planned: up to ~0.5 s)


def classify_all(views: Views, ops: list[str], record: Callable[[str], OpRecord], jobs: int | None = None,
                 heavy: Callable[[str], bool] = lambda op: True) -> list[OpRecord]:
    """`record(op)` of every op, each derived candidate among them checked (`_confirm_derived`), in
    the order of `ops`. With `jobs` of two or more (else `$MPSGEN_JOBS`, else the cores this process
    may run on, at most MAX_JOBS), in worker processes forked from this one, each taking the next
    task: first the ops' records, in chunks (`_chunks`), then the candidates' checks (`_check_all`);
    what a worker read of the checkout is recorded here as if read here
    (`read.checkout.add_reads`). An op's record and a candidate's check depend on that op alone
    (migrate planned in memory, try on the plan), so the results are the serial ones. What a
    broken pool did not answer is done here; a process that has imported torch (or cannot fork)
    does it all here."""
    jobs = _jobs(jobs)
    records: dict[str, OpRecord] = {}
    sizes: dict[str, int] = {}
    with _Pool(views, record, jobs) as pool:
        chunks = _chunks(ops, heavy, jobs)
        futures = [pool.submit(_classify_forked, chunk) for chunk in chunks]
        for chunk, future in zip(chunks, futures):
            found = pool.answer(future)
            found_records, found_sizes = found if found is not None else ([record(op) for op in chunk], {})
            records.update(zip(chunk, found_records))
            sizes.update(found_sizes)
        derived = [records[op].candidate for op in ops if isinstance(records[op].candidate, _Derived)]
        checked = dict(zip((d.op for d in derived), _check_all(pool, views, derived, sizes)))
    return [replace(records[op], candidate=checked[op]) if op in checked else records[op] for op in ops]


def confirm_all(views: Views, derived: list[_Derived], jobs: int | None = None) -> list[Candidate]:
    """`_confirm_derived` of each candidate, in order (in workers as `classify_all` runs them)."""
    with _Pool(views, None, min(_jobs(jobs), len(derived))) as pool:
        return _check_all(pool, views, derived, {})


def _check_all(pool: _Pool, views: Views, derived: list[_Derived], sizes: dict[str, int]) -> list[Candidate]:
    """The candidates' checks, in order; given to the workers costliest first (`sizes`: the size of
    the kernel file each compiles, `_check_size`), so that no worker starts a long one while the
    others run out of work."""
    order = sorted(range(len(derived)), key=lambda i: -sizes.get(derived[i].op, 0))
    futures = {i: pool.submit(_confirm_forked, derived[i]) for i in order}
    answers = [pool.answer(futures[i]) for i in range(len(derived))]
    return [a if a is not None else _confirm_derived(views, d) for a, d in zip(answers, derived)]


def _chunks(ops: list[str], heavy: Callable[[str], bool], jobs: int) -> list[tuple[str, ...]]:
    """The workers' classifying tasks: the `heavy` ops (a legacy MPS kernel: planned, their bodies
    looked for) first, HEAVY_CHUNK a task; then the others, CHUNKS_PER_JOB tasks a worker."""
    first = [op for op in ops if heavy(op)]
    rest = [op for op in ops if not heavy(op)]
    size = max(1, -(-len(rest) // (jobs * CHUNKS_PER_JOB)))
    return ([tuple(first[i : i + HEAVY_CHUNK]) for i in range(0, len(first), HEAVY_CHUNK)]
            + [tuple(rest[i : i + size]) for i in range(0, len(rest), size)])


def _jobs(jobs: int | None) -> int:
    if jobs is not None:
        return jobs
    given = os.environ.get(JOBS_VAR, "").strip()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return int(given) if given.isdigit() and int(given) > 0 else min(cores, MAX_JOBS)


def _may_fork(jobs: int) -> bool:
    # a process that has run torch's ops cannot fork safely (its OpenMP pool hangs the child): a
    # library user's second scan, or a test run's, works serially; the command's never has
    return jobs >= 2 and "torch" not in sys.modules and "fork" in multiprocessing.get_all_start_methods()


class _Pool:
    """Worker processes forked from this one (at the first task) with the scan's state; a task it
    cannot run (one process only, torch imported, no fork; a broken pool) is answered None, and
    the caller does it here."""

    def __init__(self, views: Views, record: Callable[[str], OpRecord] | None, jobs: int):
        self.state, self.jobs = (views, record), jobs
        self.pool: ProcessPoolExecutor | None = None
        self.broken = not _may_fork(jobs)  # then every task is done here

    def __enter__(self) -> _Pool:
        return self

    def submit(self, task: Callable, argument) -> Future | None:
        global _FORKED
        if self.broken:
            return None
        try:
            if self.pool is None:
                _FORKED = self.state
                gc.freeze()  # the workers share this process's objects: no collection of theirs copies those pages
                self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("fork"))
            return self.pool.submit(task, argument)
        except (BrokenProcessPool, OSError, RuntimeError):
            self.broken = True
            return None

    def answer(self, future: Future | None):
        """The task's result, its reads recorded here; None when it did not run."""
        if future is None or self.broken:
            return None
        try:
            result, reads = future.result()
        except (BrokenProcessPool, OSError, pickle.PicklingError):
            self.broken = True
            return None
        add_reads(reads)
        return result

    def __exit__(self, *exc) -> None:
        global _FORKED
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
            _FORKED = None
            gc.unfreeze()


def _classify_forked(ops: tuple[str, ...]) -> tuple[tuple[list[OpRecord], dict[str, int]], Reads]:
    """In a forked worker: the records of `ops` with the check size of each derived candidate among
    them (`_check_size`), and what classifying them read."""
    views, record = _FORKED
    with recording_new(views.checkout.root) as reads:
        records = [record(op) for op in ops]
        sizes = {r.op: _check_size(views, r.op) for r in records if isinstance(r.candidate, _Derived)}
    return (records, sizes), reads


def _check_size(views: Views, op: str) -> int:
    """The size of the kernel file the op's functor would join (0 where the op does not resolve):
    what its check compiles, a guess at how long the check takes."""
    try:
        return len(views.ws.read(resolve_op(views, op, Options(), "migrate").kernel_file))
    except Exception:  # only an order is at stake: the check itself reports what went wrong
        return 0


def _confirm_forked(derived: _Derived) -> tuple[Candidate, Reads]:
    """In a forked worker: the derived candidate checked, and what checking it read."""
    views, _ = _FORKED
    with recording_new(views.checkout.root) as reads:
        candidate = _confirm_derived(views, derived)
    return candidate, reads


def derived_params(views: Views, op: str) -> tuple[str | None, str]:
    """`derived_body` for a params op (`mpsgen.facts.paramskernel.derived_params_body`)."""
    try:
        spec = resolve_op(views, op, Options(), "migrate")
        if spec.params is None:
            return None, ""
        placeholder = Body("placeholder", (), ("float",), "the placeholder body")
        body = derived_params_body(views, spec, Options(), spec.params, placeholder)
    except MpsgenError:
        return None, ""
    if body.derived:
        return f"{body.describe} ({body.location})", ""
    return None, "".join(f"; {a.source}: {a.reason}" for a in body.answers
                         if a.source not in ("catalog", "expr") and isinstance(a, NoBody))


def derived_body(views: Views, op: str, mode: str) -> tuple[str | None, str]:
    """Where a non-catalog source finds the op's body ("c10::metal::xlogy (c10/metal/...:775)"),
    else None and what each source lacked ("; c10: ...; cpu: ..."): the resolver's static answer
    (`migrate`/`new-op` also run the body through try before writing it)."""
    try:
        spec = resolve_op(views, op, Options(), mode)
        body, _ = choose_body(views, spec, Options())
    except MpsgenError:
        return None, ""
    if body.derived:
        return f"{body.describe} ({body.location})", ""
    lacked = "".join(f"; {a.source}: {a.reason}" for a in body.answers
                     if a.source not in ("catalog", "expr") and isinstance(a, NoBody))
    return None, lacked


def _templates(views):
    """One Templates (compiled templates kept) for every candidate a scan confirms."""

    return views._once("scan-templates", lambda: Templates(views.checkout.root))


# --------------------------------------------------------------------------------------------------
# Host files: legacy kernel definitions and graph sites
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    path: str
    line: int
    kind: str
    lines: int
    graph_sites: int
    graph_helpers: tuple[str, ...]
    uses_graph: bool


def _host_definitions(views: Views, wanted: set[str], notes: list[str]) -> tuple[dict[str, _Found], list[FileTotal]]:
    """The definitions of the `wanted` kernel names in mps/operations/*.mm, and per-file totals.
    What a host file defines is read once per text (`_host_file_index`, kept in the user cache)."""
    found: dict[str, _Found] = {}
    totals = []
    for rel in views.host_files():
        text = views.ws.read(rel)
        index = cached_index(views.disk_root(rel, text), rel, text, "scan-host-file", lambda: _host_file_index(text, rel))
        names = wanted.intersection(index["ids"])
        error = None
        in_file: dict[str, _Found] = {}
        if names and index["error"] is not None:
            error = index["error"]
            notes.append(f"{rel}: cannot delimit definitions ({error}); its kernels count as mps-unknown")
        elif names:
            for hits, line, kind, lines, sites_in, helpers, uses_graph in index["found"]:
                item = _Found(rel, line, kind, lines, sites_in, tuple(helpers), uses_graph)
                for name in hits:
                    if name in names:
                        in_file.setdefault(name, item)
        for name, item in in_file.items():
            found.setdefault(name, item)
        graph = sum(1 for item in in_file.values() if item.uses_graph)
        totals.append(FileTotal(rel, index["sites"], graph, len(in_file) - graph, error))
    return found, totals


def _host_file_index(text: str, rel: str) -> dict:
    """(JSON) A host file's graph sites, the identifiers of its code, and every definition that may
    implement a kernel: functions and impl-funcs by name, generator macro instances by their
    arguments (`hits`), each with its size, graph sites and the same-file helpers (functions and
    macros, transitively) through which it builds a graph; or why its definitions cannot be told."""
    masked = mask_code(text)
    index = {"sites": len(_GRAPH_SITE.findall(masked)), "ids": sorted(set(_IDENT.findall(masked))),
             "error": None, "found": []}
    try:
        defs = [d for d in find_definitions(text, rel) if d.kind != "namespace"]
    except MpsgenError as exc:
        index["error"] = str(exc)
        return index
    by_name: dict[str, object] = {}
    for d in defs:
        if d.kind in ("function", "macro") and d.name not in by_name:
            by_name[d.name] = d
    graph_own = {id(d): bool(MPSGRAPH.search(masked[d.code_start : d.code_end])) for d in defs}

    def reaches_graph(d) -> list[str]:
        out: list[str] = []
        stack = [d]
        visited = {id(d)}
        while stack:
            current = stack.pop()
            refs = set(current.identifiers)
            if current.kind == "macro-instance":
                refs.add(current.name)
            for ref in sorted(refs):
                helper = by_name.get(ref)
                if helper is None or id(helper) in visited:
                    continue
                visited.add(id(helper))
                if graph_own[id(helper)]:
                    out.append(helper.name)
                stack.append(helper)
        return sorted(out)

    for d in defs:
        if d.kind in ("impl-func", "function"):
            hits, label = [d.name], d.kind
        elif d.kind == "macro-instance" and d.name not in _REGISTRATION_MACROS and d.args:
            hits, label = list(d.args), f"macro-instance {d.name}"
        else:
            continue
        helpers = reaches_graph(d)
        code = masked[d.code_start : d.code_end]
        index["found"].append([hits, d.location.line, label, code.count("\n") + 1, len(_GRAPH_SITE.findall(code)),
                               helpers, graph_own[id(d)] or bool(helpers)])
    return index


def _kernel(kernel: str, entry: str, dispatch: Location, definitions: dict[str, _Found]) -> MpsKernel:
    found = definitions.get(kernel.rsplit("::", 1)[-1])
    if found is None:
        return MpsKernel(kernel, entry, dispatch, "mps-unknown", None, None, 0, 0, ())
    return MpsKernel(
        kernel=kernel,
        entry=entry,
        dispatch=dispatch,
        backing="mpsgraph" if found.uses_graph else "mps-other",
        implementation=Location(found.path, found.line),
        definition=found.kind,
        lines=found.lines,
        graph_sites=found.graph_sites,
        graph_helpers=found.graph_helpers,
    )


# --------------------------------------------------------------------------------------------------
# .metal registrations -> dtype groups per functor
# --------------------------------------------------------------------------------------------------


def _metal_groups(views, notes: list[str]) -> dict[str, tuple[str, ...]]:
    """Functor name -> the dtype groups (`mpsgen.dtypes.GROUPS` names) its registrations cover."""

    pairs: dict[str, set] = {}
    for rel in views.kernel_files():
        try:
            kernel = views.kernel(rel)
        except MpsgenError as exc:
            notes.append(f"{rel}: cannot read registrations ({exc}); its dtype groups are missing")
            continue
        for name, exc in kernel.file.broken.items():
            notes.append(f"{rel}: cannot read {name}_functor ({exc}); its dtype groups are missing")
        for name, registered in kernel.registered.items():
            if name not in kernel.file.broken:
                pairs.setdefault(name, set()).update(registered.pairs)
    return {name: groups_of_pairs(found) for name, found in pairs.items()}


# --------------------------------------------------------------------------------------------------
# common_mps.py xfail/skip dicts, read without a parse
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class XfailKey:
    """One `"key": None | [torch.x, ...]` entry of a dict in common_mps.py."""

    dict_name: str
    function: str
    key: str
    dtypes: tuple[str, ...] | None
    location: Location


_ASSIGN_DICT = re.compile(r"^([ \t]*)([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*\{", re.M)
_DEF = re.compile(r"([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)")
_CODE_LINE = re.compile(r"^([ \t]*)[^ \t\r\n#)\]}]", re.M)
_NONE = re.compile(r"None\b")
_GAP = re.compile(r"(?:[ \t\r\n\f]+|#[^\n]*|\\\r?\n)*")
_KEY_STRING = re.compile(r"""[rRuU]?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")
_DTYPE = re.compile(r"torch[ \t]*\.[ \t]*([A-Za-z_]\w*)")


def read_xfail_keys(text: str, path: str) -> tuple[XfailKey, ...]:
    """Every entry of every dict literal assigned to a name whose values are all `None` or lists/tuples
    of `torch.<dtype>`: the dicts `testlists.find_xfail_dicts` finds, by a regex scan (no libcst)."""

    out: list[XfailKey] = []
    pos = 0
    functions = None
    for m in _ASSIGN_DICT.finditer(text):
        if m.start() < pos:
            continue  # inside a dict already read
        brace = m.end() - 1
        end = match_bracket(text, brace)
        if end < 0:
            continue
        entries = _dict_entries(text, brace + 1, end - 1)
        if entries:
            if functions is None:
                functions = _function_of_lines(text)
            function = functions(m.start())
            for key, dtypes, offset in entries:
                out.append(XfailKey(m.group(2), function, key, dtypes, Location(path, text.count("\n", 0, offset) + 1)))
            pos = end
    return tuple(out)


def _function_of_lines(text: str):
    """A function giving, for an offset at a line start, the innermost enclosing `def` (by indentation
    of the code lines; comment, blank and closing-bracket lines do not close a body)."""
    starts: list[int] = []
    names: list[str] = []
    stack: list[tuple[int, str]] = []
    for m in _CODE_LINE.finditer(text):
        indent = len(m.group(1).expandtabs())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        starts.append(m.start())
        names.append(stack[-1][1] if stack else "")
        d = _DEF.match(text, m.start())
        if d:
            stack.append((indent, d.group(2)))

    def function(offset: int) -> str:
        i = bisect.bisect_right(starts, offset) - 1
        return names[i] if i >= 0 else ""

    return function


def _dict_entries(text: str, pos: int, close: int):
    """The (key, dtypes, offset) entries of the dict body text[pos:close], or None when any element
    is not `"key": None | [torch.x, ...] | (torch.x, ...)`."""
    entries = []
    while True:
        pos = _GAP.match(text, pos).end()
        if pos >= close:
            return entries or None
        key = _KEY_STRING.match(text, pos)
        if key is None:
            return None
        start = pos
        pos = _GAP.match(text, key.end()).end()
        if not text.startswith(":", pos):
            return None
        pos = _GAP.match(text, pos + 1).end()
        value, pos = _dtype_value(text, pos, close)
        if value is False:
            return None
        entries.append((ast.literal_eval(key.group(0)), value, start))
        pos = _GAP.match(text, pos).end()
        if pos < close:
            if text[pos] != ",":
                return None
            pos += 1


def _dtype_value(text: str, pos: int, close: int):
    if _NONE.match(text, pos):
        return None, pos + 4
    if pos >= close or text[pos] not in "[(":
        return False, pos
    closer = "]" if text[pos] == "[" else ")"
    names: list[str] = []
    commas = 0
    pos += 1
    while True:
        pos = _GAP.match(text, pos).end()
        if text.startswith(closer, pos):
            if closer == ")" and len(names) == 1 and commas == 0:
                return False, pos  # `(torch.x)` is a parenthesised name, not a tuple
            return tuple(names), pos + 1
        if names and commas < len(names):
            return False, pos
        m = _DTYPE.match(text, pos)
        if m is None:
            return False, pos
        names.append(m.group(1))
        pos = _GAP.match(text, m.end()).end()
        if text.startswith(",", pos):
            commas += 1
            pos += 1


def _opinfo_ops(text: str) -> dict[str, set[str]]:
    """common_mps key (`name + variant_test_name`) -> the aten ops its OpInfos test, by a text scan:
    every `XInfo(` call opens a region; a quoted first argument names it, and `variant_test_name=` /
    `aten_name=` keywords before the next call belong to it."""
    starts = [(m.start(), m.group(1), m.group(2)) for m in _info_calls(text) if m.group(1) != "DecorateInfo"]
    offsets = [s[0] for s in starts]
    variant: dict[int, str] = {}
    aten: dict[int, str] = {}
    for pattern, target in ((_VARIANT_KEYWORD, variant), (_ATEN_KEYWORD, aten)):
        for m in pattern.finditer(text):  # a literal prefix: the regex engine skips ahead fast
            if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            i = bisect.bisect_right(offsets, m.start()) - 1
            if i >= 0:
                target.setdefault(i, m.group(2))
    out: dict[str, set[str]] = {}
    for i, (_, _, name) in enumerate(starts):
        if not name:
            continue
        key = name + variant.get(i, "")
        ops = out.setdefault(key, set())
        ops.update(_ops_named(name))
        if i in aten:
            ops.add(aten[i])
    return out


_INFO_CALL = re.compile(r"""([A-Z]\w*Info)\(\s*(?:name\s*=\s*)?(?:[rRuU]?['"]([^'"\n]+)['"])?""")
_VARIANT_KEYWORD = re.compile(r"""variant_test_name\s*=\s*[rRuU]?(['"])([^'"\n]*)\1""")
_ATEN_KEYWORD = re.compile(r"""aten_name\s*=\s*[rRuU]?(['"])([^'"\n]*)\1""")


def _info_calls(text: str):
    """`XInfo(` calls (the class name starting with a capital), found from each literal `Info(`."""
    pos = 0
    while True:
        i = text.find("Info(", pos)
        if i < 0:
            return
        start = i
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        m = _INFO_CALL.match(text, start)
        if m and m.end(1) == i + 4:
            yield m
        pos = i + 5


def _ops_named(name: str) -> set[str]:
    ops = {name.replace(".", "_")}
    if name.startswith("nn.functional."):
        ops.add(name[len("nn.functional.") :])
    return ops


def _xfail_by_op(views, notes: list[str]) -> dict[str, Counter]:
    """op -> Counter of the common_mps.py keys (one count per dict entry) that test it (OpInfos of
    every file the op facts read: common_methods_invocations.py and opinfo/definitions/*.py)."""
    checkout = views.checkout
    if not checkout.exists(COMMON_MPS):
        notes.append(f"{COMMON_MPS} not found: no xfail counts")
        return {}
    entries = read_xfail_keys(checkout.read(COMMON_MPS), COMMON_MPS)
    key_ops: dict[str, set[str]] = {}
    for rel in views.opinfo_files():
        text = checkout.read(rel)
        # kept in the user cache while the file hashes the same (a real OpInfo file scans in ~10 ms)
        found = cached_index(checkout.root, rel, text, "scan-opinfo-ops",
                             lambda: {key: sorted(ops) for key, ops in _opinfo_ops(text).items()})
        for key, ops in found.items():
            key_ops.setdefault(key, set()).update(ops)
    out: dict[str, Counter] = {}
    for item in entries:
        for op in key_ops.get(item.key) or _ops_named(item.key):
            out.setdefault(op, Counter())[item.key] += 1
    return out
