"""`mpsgen migrate`: move MPSGraph-backed ops onto native Metal kernels, in one transaction."""

from __future__ import annotations

from mpsgen.checkout import Checkout, Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts import Views
from mpsgen.model import Plan
from mpsgen.pipeline import MIGRATE_STEPS, plan_op
from mpsgen.resolve import OpSpec, Options, resolve_op
from mpsgen.templates import Templates


def plan_migrate(checkout: Checkout, ops: tuple[str, ...], options: Options) -> Plan:
    """Plan every op in one Workspace: the second op sees the first one's edits, and an error in
    any op means nothing is written at all."""
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    templates = Templates(checkout.root)
    for op in dict.fromkeys(ops):
        spec = resolve_op(views, op, options, mode="migrate")
        plan_op(views, templates, spec, options, MIGRATE_STEPS)
        check_single_registration(views, spec)
    return ws.plan(tuple(dict.fromkeys(ops)))


def check_single_registration(views: Views, spec: OpSpec) -> None:
    found = views.registrations(spec.stub.name)
    if len(found) != 1:
        where = ", ".join(str(r.location) for r in found) or "nowhere"
        raise MpsgenError(
            f"{spec.stub.name} would be registered for MPS {len(found)} times ({where})",
            location=found[1].location if len(found) > 1 else spec.stub.location,
            hint="a stub takes exactly one REGISTER_DISPATCH per device; remove the duplicate",
        )
