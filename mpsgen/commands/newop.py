"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from dataclasses import replace

from mpsgen.commands.bodycheck import check_body
from mpsgen.commands.confirm import resolve_checked
from mpsgen.edit.pipeline import NEW_OP_STEPS, plan_op
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views
from mpsgen.model import Plan
from mpsgen.read.checkout import Checkout


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    """The plan; a derived body is run by `try` first (`commands.bodycheck`), and one that fails is
    planned again without that source."""
    notes = []
    while True:
        ws = Workspace(checkout)
        views = Views(ws, disk_cache=True)
        spec = resolve_checked(views, op, options, mode="new-op")
        kernel = plan_op(views, Templates(checkout.root), spec, options, NEW_OP_STEPS)
        plan = ws.plan((op,))
        check = check_body(checkout, plan, op, kernel)
        if check is not None:
            notes.append(check.note)
        if check is None or check.passed is not False:
            return replace(plan, notes=plan.notes + tuple(notes))
        options = replace(options, rejected=options.rejected + ((kernel.source, check.why),))
