"""`mpsgen migrate`: move MPSGraph-backed ops onto native Metal kernels, in one transaction."""

from __future__ import annotations

from mpsgen.commands.confirm import resolve_checked
from mpsgen.edit.pipeline import MIGRATE_STEPS, check_single_registration, plan_op
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.resolve import Options
from mpsgen.facts.views import Views
from mpsgen.model import Plan
from mpsgen.read.checkout import Checkout


def plan_migrate(checkout: Checkout, ops: tuple[str, ...], options: Options) -> Plan:
    """Plan every op in one Workspace: the second op sees the first one's edits, and an error in
    any op means nothing is written at all."""
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    templates = Templates(checkout.root)
    for op in dict.fromkeys(ops):
        spec = resolve_checked(views, op, options, mode="migrate")
        plan_op(views, templates, spec, options, MIGRATE_STEPS)
        check_single_registration(views, spec)
    return ws.plan(tuple(dict.fromkeys(ops)))
