"""The run-time check of a derived functor body (`c10`, `cpu`, `graph`: `mpsgen.facts.bodies`):
`new-op` and `migrate` run `try` on the kernel as planned (in memory, `PlannedCheckout`) against
torch's CPU op for every registered dtype before anything is written. A body that fails is not
written: the command plans again with that source turned down (`Options.rejected`, the failing
values as its reason), so the next source is asked, and the placeholder quotes every reason when
none is left. Without g++ or torch the plan says why it was not checked."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from mpsgen.commands.tryop.api import TryOptions, try_op
from mpsgen.commands.tryop.coverage import untaken_lines
from mpsgen.commands.tryop.run import host_unavailable
from mpsgen.edit.kernel import KernelChoice
from mpsgen.errors import MpsgenError
from mpsgen.model import Note, Plan
from mpsgen.read.cache import cached_result
from mpsgen.read.checkout import NATIVE_FUNCTIONS, Checkout, PlannedCheckout
from mpsgen.read.nfyaml import NativeFunctions

# what a verdict kept in the user cache was computed with (raise it when try's comparison changes)
CHECK_VERSION = "bodycheck-5"  # 2: try bundles the headers a plan creates; 3: the op's yaml entries, not the whole file; 4: the scalar loop within a strided tensor; 5: branch coverage
# the headers a planned kernel includes, besides the files the plan edits
HEADERS = (("c10/metal", "*.h"), ("aten/src/ATen/native/mps/kernels", "*.h"), ("aten/src/ATen/native/mps", "*.h"))


@dataclass(frozen=True)
class BodyCheck:
    """`passed`: True (every value matched), False (`why` holds the failing values), None (not
    checked, `why` says why); `note`: the line the plan reports."""

    passed: bool | None
    why: str
    note: Note


def why_unchecked() -> str:
    """Why the check cannot run here ("" when it can)."""
    no_host = host_unavailable()
    if no_host is not None:
        return no_host
    if importlib.util.find_spec("torch") is None:
        return "torch is not importable (pip install torch==2.13.0): its CPU op is the reference"
    return ""


def check_body(checkout: Checkout, plan: Plan, op: str, kernel: KernelChoice | None) -> BodyCheck | None:
    """`try` on the planned kernel of a derived body; None when the body is not derived."""
    body = kernel.body if kernel is not None else None
    if body is None or not body.derived:
        return None
    unchecked = why_unchecked()
    if unchecked:
        return BodyCheck(None, unchecked, Note("info", f"{op}: body from {body.describe} not checked: {unchecked}"))
    edits = {e.path: e.after for e in plan.edits}
    # the verdict depends on the kernel as planned, the headers it includes, the op's own yaml entries,
    # try's code and torch: kept in the user cache by exactly those, so scan (which asks for every
    # derived candidate) pays once, and an edit elsewhere in native_functions.yaml (another op
    # migrated) keeps it. A try that could not run is not kept: its message may name lines.
    headers = sorted(rel for pattern in HEADERS for rel in checkout.glob(*pattern))
    inputs = [CHECK_VERSION, op, _torch_version(),
              *(f"{path}\0{_relevant(path, text, op)}" for path, text in sorted(edits.items())),
              *(f"{rel}\0{checkout.read(rel)}" for rel in headers if rel not in edits)]
    try:
        kept = cached_result("bodycheck", inputs, lambda: _verdict(checkout, edits, op, body.describe))
    except _NotRun as exc:
        why = f"try could not run it: {exc.message}"
        kept = _kept("failed", why, f"{op}: body from {body.describe} not written: {why}")
    passed = {"passed": True, "failed": False}.get(kept["verdict"])
    return BodyCheck(passed, kept["why"], Note("info", kept["note"]))


def _verdict(checkout: Checkout, edits: dict[str, str], op: str, describe: str) -> dict:
    """try on the planned kernel: {verdict: passed | failed | unchecked, why, note}."""
    planned = PlannedCheckout(checkout.root, edits)
    try:
        report = try_op(planned, op, TryOptions(backend="host", reference="torch"))
    except MpsgenError as exc:
        raise _NotRun(exc.message) from exc
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
    return _kept("passed", "", f"{op}: checked: {matched} values match torch's CPU op{extra}")


class _NotRun(Exception):
    """try refused to run the planned kernel (not kept in the cache)."""

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
