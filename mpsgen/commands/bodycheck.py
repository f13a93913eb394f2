"""The check of a derived functor body (`c10`, `cpu`, `graph`: `mpsgen.facts.bodies`) before
`new-op` or `migrate` writes it, always with the host compiler and mpsgen's Metal prelude: `try`
compiles and runs the kernel as planned (in memory, `PlannedCheckout`) against torch's CPU op for
every registered dtype, or, without torch, against the catalog's Python reference where the op has
one; where try cannot run (no torch and no such reference) the kernel file as planned is compiled
alone. A body that does not compile is never written: the placeholder quotes the compiler's line. A body that fails is not written: the
command plans again with that source turned down (`Options.rejected`, the failing values or the
compiler's line as its reason), so the next source is asked, and the placeholder quotes every
reason when none is left. Every verdict on the body (compiled or not, passed, failed with the
values) is kept in the user cache by the content it depends on; only a check that could not run
for a cause outside the body is not kept: no compiler or torch (the plan says the body was not
checked or only compiled), a try that timed out compiling or cannot take the prelude or the
checkout's headers (the body is not written, as before, and asked again next time), Ctrl-C."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from mpsgen.commands.tryop.api import TryOptions, try_op
from mpsgen.commands.tryop.compare import beyond_samples_note, edge_note, nearer_note
from mpsgen.commands.tryop.references import REFERENCES
from mpsgen.edit.clangformat import added_line_ranges
from mpsgen.commands.tryop.coverage import untaken_lines
from mpsgen.edit.pipeline import plan_op
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.choice import KernelChoice
from mpsgen.facts.plan import OpPlan, Verdict
from mpsgen.facts.templates import Templates
from mpsgen.facts.views import Views
from mpsgen.errors import CheckFailed, MpsgenError
from mpsgen.facts.catalog import lookup
from mpsgen.model import Note, Plan
from mpsgen.read.cache import cached_result, executable_identity
from mpsgen.read.metalhost.check import SKIPPED, DiagnosticContext, compile_metal_file
from mpsgen.read.metalhost.compiler import find_compiler, prelude_digest
from mpsgen.read.metalhost.owners import code_owners, diagnostic_owners
from mpsgen.read.checkout import NATIVE_FUNCTIONS, Checkout, PlannedCheckout
from mpsgen.read.nfyaml import NativeFunctions

# what a verdict kept in the user cache was computed with (raise it when try's comparison changes)
CHECK_VERSION = "bodycheck-18"  # 18: the note names the cases beyond upstream's samples; 17: an infinite operand, or an operand at the top of the range, where both values are not finite but differ, noted when the samples are finite; 16: an operand within the OpInfo's domain eps of a domain end matches within one ulp of the input; 15: a fractional value for a complex alpha is no longer truncated to an integer; 14: a type registered at opmath runs at opmath; complex cases upstream's test never feeds noted (an inf or NaN part, or a part past sqrt(largest) with a non-finite kernel value); 13: another functor's compile error leaves the body not checked, not failed; 12: a loop-counted op sampled in the test's range, complex isclose and nearer float64, edge overflows noted, alpha-boundary sets; 10: ... only where CPU is not finite either; 9: an inf or NaN that is the float64 value; 8: branch coverage; 7: a compile error named as such; 2: try bundles the headers a plan creates; 3: the op's yaml entries, not the whole file; 4: the scalar loop within a strided tensor; 5: a body nearer the float64 value than CPU matches; 6: every refusal of try kept
COMPILE_VERSION = "bodycompile-3"
# the headers a planned kernel includes, besides the files the plan edits
HEADERS = (("c10/metal", "*.h"), ("aten/src/ATen/native/mps/kernels", "*.h"), ("aten/src/ATen/native/mps", "*.h"))
# what try raises for a cause outside the body (the machine, the compiler, the checkout's headers): not kept
_OUTSIDE = ("the host compiler did not finish", "the host compiler cannot compile mpsgen's Metal prelude",
            "cannot run the functor on the host", "the functor cannot run here")
_OUTSIDE_PATTERN = re.compile(r"cannot run \S+ on the host: ")
_FUNCTOR = re.compile(r"\bstruct\s+(\w+)_functor\b")


# `passed`: True (every value matched), False (`why` holds the failing values or the compiler's
# line), None (not checked or only compiled, `why` says why); `note`: the line the plan reports
BodyCheck = Verdict


class PlannedCheck:
    """The check `mpsgen.facts.plan.plan_for` asks of a derived body (the command supplies it:
    try lives here): the op's plan written (edit/, on a fork of the command's Workspace, as the
    command's steps write it) to give the kernel as planned, then `check_body` on it. The fork of
    the plan finally chosen is what the command takes (`write`): the op is not planned twice."""

    def __init__(self, checkout: Checkout, views: Views, templates: Templates, steps):
        self.checkout, self.views, self.templates, self.steps = checkout, views, templates, steps
        self._written: tuple[OpPlan, Workspace, Views] | None = None

    def __call__(self, plan: OpPlan) -> Verdict | None:
        fork = self.views.ws.fork()
        views = Views(fork, disk_cache=self.views.disk_cache)
        views.lend(self.views)
        plan_op(views, self.templates, plan, self.steps)
        self._written = (plan, fork, views)
        return check_body(self.checkout, fork.fork().plan(), plan.spec.op, plan.body_kernel)

    def write(self, plan: OpPlan) -> None:
        """`plan` written into the command's Workspace: the fork the check planned it on when that
        was this very plan, else planned now."""
        if self._written is not None and self._written[0].kernel is plan.kernel and self._written[0].owner is plan.owner:
            _, fork, views = self._written
            self.views.ws.take(fork)
            self.views.lend(views)
        else:
            plan_op(self.views, self.templates, plan, self.steps)
        self._written = None


def torch_importable() -> bool:
    """Whether torch's CPU op can be the reference (looked up, not imported)."""
    return importlib.util.find_spec("torch") is not None


def check_body(checkout: Checkout, plan: Plan, op: str, kernel: KernelChoice | None) -> BodyCheck | None:
    """The kernel file as planned compiled, then `try` on the planned kernel, for a derived body;
    None when the body is not derived."""
    body = kernel.body if kernel is not None else None
    if body is None or not body.derived:
        return None
    edits = {e.path: e.after for e in plan.edits}
    headers = sorted(rel for pattern in HEADERS for rel in checkout.glob(*pattern))
    # the verdicts depend on the kernel as planned, the headers it includes, the op's own yaml
    # entries, try's code, the compiler and torch: kept in the user cache by exactly those, so scan
    # (which asks for every derived candidate) pays once, and an edit elsewhere in
    # native_functions.yaml (another op migrated) keeps them
    content = [op, *(f"{path}\0{_relevant(path, text, op)}" for path, text in sorted(edits.items())),
               *(f"{rel}\0{checkout.read(rel)}" for rel in headers if rel not in edits)]
    compiler, no_compiler = find_compiler()
    if compiler is None:
        return _unchecked(op, body.describe, no_compiler)
    identity = executable_identity(compiler.path) or compiler.path
    torch = torch_importable()
    reference = "torch" if torch else "catalog"
    runs = torch or (lookup(op) is not None and lookup(op).op in REFERENCES)
    if not runs:  # try cannot run it: the kernel file as planned is compiled alone (try compiles what it runs)
        try:
            compiled = cached_result("bodycompile", [COMPILE_VERSION, identity, prelude_digest(), *content],
                                     lambda: _compiled(checkout, edits, kernel, op, body.describe))
        except _NotRun as exc:
            return _unchecked(op, body.describe, exc.message)
        if compiled["verdict"] == "failed":
            return BodyCheck(False, compiled["why"], Note("info", compiled["note"]))
        why = "torch is not importable (pip install torch==2.13.0): its CPU op is the reference"
        return BodyCheck(None, why, Note("info", f"{op}: body from {body.describe} compiled, not run: {why}"))
    try:
        kept = cached_result("bodycheck", [CHECK_VERSION, reference, _torch_version() if torch else "", identity, *content],
                             lambda: _verdict(checkout, edits, kernel, op, body.describe, reference))
    except _NotRun as exc:  # not written, as a failure, but asked again next time
        why = f"try could not run it: {exc.message}"
        return BodyCheck(False, why, Note("info", f"{op}: body from {body.describe} not written: {why}"))
    passed = {"passed": True, "failed": False}.get(kept["verdict"])
    return BodyCheck(passed, kept["why"], Note("info", kept["note"]))


def _unchecked(op: str, describe: str, why: str) -> BodyCheck:
    return BodyCheck(None, why, Note("info", f"{op}: body from {describe} not checked: {why}"))


def _compiled(checkout: Checkout, edits: dict[str, str], kernel: KernelChoice, op: str, describe: str) -> dict:
    """Each planned kernel file compiled with the host compiler and mpsgen's Metal prelude (the
    headers as planned): {verdict: compiled | failed, why, note}. A diagnostic is the body's when it
    is in the functor's code or on a line the plan adds (a helper brought along), or instantiated
    from one; one in another functor's code is not (verify reports it as pre-existing)."""
    match = _FUNCTOR.search(kernel.text)
    functor = match.group(1) if match else op
    for rel in sorted(r for r in edits if r.endswith(".metal")):
        result = compile_metal_file(checkout.root, rel, text=edits[rel], texts=edits)
        if result.status == SKIPPED:
            raise _NotRun(f"{rel} was not compiled: {result.reason}")
        owners = code_owners(edits[rel], rel)
        added = added_line_ranges(checkout.read(rel) if checkout.exists(rel) else "", edits[rel])
        contexts = result.contexts or (DiagnosticContext(),) * len(result.diagnostics)
        mine = [(where, message) for (where, message), context in zip(result.diagnostics, contexts)
                if functor in diagnostic_owners(context.lines, owners, context.functors)
                or any(first <= line <= last for line in (*context.lines, where.line) for first, last in added
                       if where.path == rel)]
        if mine:
            where, message = mine[0]
            more = f" (+{len(mine) - 1} more)" if len(mine) > 1 else ""
            why = f"it does not compile ({where} as planned: {message}{more})"
            return _kept("failed", why, f"{op}: body from {describe} not written: {why}")
    return _kept("compiled", "", "")


def _verdict(checkout: Checkout, edits: dict[str, str], kernel: KernelChoice, op: str, describe: str,
             reference: str) -> dict:
    """try on the planned kernel: {verdict: passed | failed | unchecked, why, note}."""
    planned = PlannedCheckout(checkout.root, edits)
    against = "torch's CPU op" if reference == "torch" else "the catalog's reference (torch is not importable)"
    try:
        report = try_op(planned, op, TryOptions(backend="host", reference=reference))
    except CheckFailed as exc:  # the body's: a compile error (at its line), a crash, a loop that does not end
        if exc.location is not None and (exc.hint or "").startswith("pre-existing: "):
            # the kernel file as planned fails in another functor's code (another op's placeholder
            # #error, a file that needs newer headers): the body is not judged; written, not checked,
            # unless one of the file's diagnostics is its own
            compiled = _compiled(checkout, edits, kernel, op, describe)
            if compiled["verdict"] == "failed":
                return compiled
            why = f"try could not run it: {exc.location}: {exc.message} ({exc.hint})"
            return _kept("unchecked", why, f"{op}: body from {describe} not checked: {why}")
        why = (f"it does not compile ({exc.location} as planned: {exc.message})" if exc.location is not None
               else f"try could not run it: {exc.message}")
        return _kept("failed", why, f"{op}: body from {describe} not written: {why}")
    except MpsgenError as exc:
        if exc.message.startswith(_OUTSIDE) or _OUTSIDE_PATTERN.match(exc.message):
            raise _NotRun(exc.message) from exc
        if reference == "catalog":  # try needs torch's op for this kernel (one taking scalars)
            why = f"torch is not importable and the catalog's reference cannot run it: {exc.message}"
            return _kept("unchecked", why, f"{op}: body from {describe} compiled, not run: {why}")
        why = f"try could not run it: {exc.message}"  # a refusal of try's, decided by the content
        return _kept("failed", why, f"{op}: body from {describe} not written: {why}")
    failed = [r for r in report.results if r.status == "failed"]
    matched = sum(r.cases for r in report.results if r.status == "passed")
    if failed:
        why = "try failed: " + "; ".join(_failure(r) for r in failed[:3])
        return _kept("failed", why, f"{op}: body from {describe} not written: {why}")
    skipped = [r.metal_type for r in report.results if r.status == "skipped"]
    if matched == 0:  # nothing compared is nothing checked (a loss's elementwise kernel: try has no reference)
        why = f"try compared no value ({', '.join(skipped) or 'no dtype'} skipped: no reference)"
        return _kept("unchecked", why, f"{op}: body from {describe} not checked: {why}")
    if report.untaken:  # a branch try's values never took was never judged (issue 46)
        why = f"{report.coverage.summary} by try's values: " + "; ".join(untaken_lines(report.coverage)[:3])
        return _kept("unchecked", why, f"{op}: body from {describe} not checked: {why}")
    extra = f" ({', '.join(skipped)} skipped: no reference)" if skipped else ""
    overflows = sum(r.cpu_overflows for r in report.results)
    if overflows:  # try's rule: the body gives the float64 value where CPU overflows in an intermediate
        extra += f"; matches CPU except where CPU overflows in an intermediate: {overflows} cases"
    nearer = [case for r in report.results for case in r.nearer_float64]
    if nearer:  # try's rule: the body computes at opmath where CPU rounds an intermediate to the input type
        extra += "; " + nearer_note(tuple(nearer))
    edge = [case for r in report.results for case in r.edge_overflows]
    if edge:  # try's rule: an intermediate at the top of the type's range, beyond upstream's samples
        extra += "; " + edge_note(tuple(edge))
    beyond = [case for r in report.results for case in r.beyond_samples]
    if beyond:  # try's rules for the other cases upstream's test never feeds: named, never passed over silently
        extra += "; " + beyond_samples_note(tuple(beyond))
    return _kept("passed", "", f"{op}: checked: {matched} values match {against}{extra}")


class _NotRun(Exception):
    """The check could not run for a cause outside the body (not kept in the cache)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _relevant(path: str, text: str, op: str) -> str:
    """What of an edited file the verdict depends on: native_functions.yaml's entries of the op (try
    reads no other: `views.read_op`), every other file whole."""
    if path != NATIVE_FUNCTIONS:
        return text
    return "\0".join(text[e.start : e.end] for e in NativeFunctions(text, path).op_entries(op))


def _kept(verdict: str, why: str, note: str) -> dict:
    return {"verdict": verdict, "why": why, "note": note}


def _torch_version() -> str:
    spec = importlib.util.find_spec("torch")
    version = Path(spec.origin).parent / "version.py" if spec and spec.origin else None
    return version.read_text(encoding="utf-8") if version is not None and version.is_file() else "torch"


def _failure(result) -> str:
    examples = ", ".join(f"{tuple(m.inputs)} gave {m.got}, want {m.want}" for m in result.examples[:2])
    return f"{result.metal_type}: {result.mismatches} of {result.cases} differ" + (f" ({examples})" if examples else "")
