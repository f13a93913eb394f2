"""`mpsgen migrate`: move MPSGraph-backed ops onto native Metal kernels, in one transaction."""

from __future__ import annotations

from mpsgen.checkout import Checkout, Workspace
from mpsgen.errors import MpsgenError
from mpsgen.model import Plan
from mpsgen.facts import Views
from mpsgen.newop import plan_native_kernel
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
        plan_native_kernel(views, templates, spec, options)
        if spec.legacy:
            plan_legacy(views, spec)
        check_single_registration(views, spec)
    return ws.plan(tuple(dict.fromkeys(ops)))


def mps_sources(views: Views) -> dict[str, str]:
    return {rel: views.ws.read(rel) for rel in views.host_files()}


def plan_legacy(views: Views, spec: OpSpec) -> None:
    from mpsgen.legacy import find_dangling_references, plan_legacy_removal

    ws = views.ws
    files = mps_sources(views)
    result = plan_legacy_removal(files, set(spec.legacy_kernels), spec.op, set(spec.header_symbols))
    for rel, text in result.texts.items():
        ws.write(rel, text)
    for removal in result.removals:
        detail = f"{removal.name} ({removal.line_count} lines"
        detail += f", {removal.graph_sites} graph sites)" if removal.graph_sites else ")"
        ws.add_change(f"remove-{removal.kind}", removal.location, detail)
    for note in result.kept:
        ws.add_note(note)
    removed = {r.name for r in result.removals if r.kind != "include"}
    dangling = find_dangling_references(mps_sources(views), removed)
    if dangling:
        raise MpsgenError(
            f"code still refers to what migrating {spec.op} removes",
            location=dangling[0],
            hint="port or remove that use first, then run migrate again",
        )


def check_single_registration(views: Views, spec: OpSpec) -> None:
    found = views.registrations(spec.stub.name)
    if len(found) != 1:
        where = ", ".join(str(r.location) for r in found) or "nowhere"
        raise MpsgenError(
            f"{spec.stub.name} would be registered for MPS {len(found)} times ({where})",
            location=found[1].location if len(found) > 1 else spec.stub.location,
            hint="a stub takes exactly one REGISTER_DISPATCH per device; remove the duplicate",
        )
