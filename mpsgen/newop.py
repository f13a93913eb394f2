"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from mpsgen.checkout import Checkout, Workspace
from mpsgen.facts import Views
from mpsgen.model import Plan
from mpsgen.pipeline import NEW_OP_STEPS, plan_op
from mpsgen.resolve import Options, resolve_op
from mpsgen.templates import Templates


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    spec = resolve_op(views, op, options, mode="new-op")
    plan_op(views, Templates(checkout.root), spec, options, NEW_OP_STEPS)
    return ws.plan((op,))
