"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from dataclasses import replace

from mpsgen.commands.bodycheck import PlannedCheck
from mpsgen.commands.confirm import resolve_checked
from mpsgen.edit.pipeline import NEW_OP_STEPS
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.plan import plan_for
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views
from mpsgen.model import Plan
from mpsgen.read.checkout import Checkout


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    """The plan, decided once (`facts.plan.plan_for`); a derived body is run by `try` first
    (`commands.bodycheck.PlannedCheck`), and one that fails is decided again without that source."""
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    templates = Templates(checkout.root)
    spec = resolve_checked(views, op, options, mode="new-op")
    check = PlannedCheck(checkout, views, templates, NEW_OP_STEPS)
    op_plan = plan_for(views, spec, options, check, templates=templates, mode="new-op")
    check.write(op_plan)
    plan = ws.plan((op,))
    return replace(plan, notes=plan.notes + op_plan.checked)
