"""`mpsgen migrate`: move MPSGraph-backed ops onto native Metal kernels, in one transaction."""

from __future__ import annotations

from dataclasses import replace

from mpsgen.commands.bodycheck import PlannedCheck
from mpsgen.commands.confirm import resolve_checked
from mpsgen.edit.linemap import EditMap
from mpsgen.edit.pipeline import MIGRATE_STEPS, check_single_registration
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.plan import plan_for
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views
from mpsgen.errors import MpsgenError
from mpsgen.model import Location, Plan
from mpsgen.read.checkout import Checkout


def plan_migrate(checkout: Checkout, ops: tuple[str, ...], options: Options, base: Views | None = None,
                 templates: Templates | None = None) -> Plan:
    """Plan every op in one Workspace: the second op sees the first one's edits, and an error in
    any op means nothing is written at all. Each op's plan is decided once (`facts.plan.plan_for`),
    a derived body run by `try` first (`commands.bodycheck.PlannedCheck`: one that fails is decided
    again without that source), then written. `base`, Views of the unedited checkout, lends what it
    has parsed (`Views.lend`: a view serves only the very text it was built from), and `templates`
    its compiled templates: scan confirming many candidates."""
    ops = tuple(dict.fromkeys(ops))
    notes = []
    templates = templates or Templates(checkout.root)
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    if base is not None:
        views.lend(base)
    for op in ops:
        try:
            spec = resolve_checked(views, op, options, mode="migrate")
            check = PlannedCheck(checkout, views, templates, MIGRATE_STEPS)
            op_plan = plan_for(views, spec, options, check, templates=templates, mode="migrate")
            check.write(op_plan)
            check_single_registration(views, spec)
        except MpsgenError as exc:
            raise on_disk(exc, ws, checkout) from None
        notes.extend(op_plan.checked)
    plan = ws.plan(ops)
    return replace(plan, notes=plan.notes + tuple(dict.fromkeys(notes)))


def on_disk(exc: MpsgenError, ws: Workspace, checkout: Checkout) -> MpsgenError:
    """A refusal of a later op points at the text an earlier op planned; nothing is written, so
    its line is moved back to where that line stands in the file on disk."""
    where = exc.location
    if where is None or not where.line or not checkout.exists(where.path):
        return exc
    planned, disk = ws.read(where.path), checkout.read(where.path)
    if planned == disk:
        return exc
    line = EditMap(planned, disk).line(where.line)
    return type(exc)(exc.message, location=Location(where.path, line), hint=exc.hint)


def body_turned_down(checkout: Checkout, op: str, base: Views | None = None, templates: Templates | None = None) -> str:
    """Why `mpsgen migrate OP` (no options) would not write the body a source derived for it, as the
    check before writing says it ("...'s body ... not written: try failed: ..."), else "" (written, or
    not checked here: no g++ or torch). `scan` calls an op with a derived body ready only when its
    body would be written. `base` and `templates` as for `plan_migrate`."""
    plan = plan_migrate(checkout, (op,), Options(), base, templates)
    turned = [n.message.split(": ", 1)[1] for n in plan.notes if n.message.startswith(f"{op}: body from ")
              and " not written: " in n.message]
    written = any(n.message.startswith(f"{op}: checked: ") for n in plan.notes)
    return "" if written or not turned else turned[-1]
