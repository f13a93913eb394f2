"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from mpsgen.commands.confirm import resolve_checked
from mpsgen.edit.pipeline import NEW_OP_STEPS, plan_op
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views
from mpsgen.model import Plan
from mpsgen.read.checkout import Checkout


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    spec = resolve_checked(views, op, options, mode="new-op")
    plan_op(views, Templates(checkout.root), spec, options, NEW_OP_STEPS)
    return ws.plan((op,))
