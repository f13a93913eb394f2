"""Whether a generating command would complete, planned in memory with the command's own code:
`scan` calls an op "ready" only when `migrate OP` completes, and a refusal that points at the other
command (`use mpsgen migrate OP`) points at it only when that command would complete."""

from __future__ import annotations

from mpsgen.edit.pipeline import MIGRATE_STEPS, NEW_OP_STEPS, check_single_registration, plan_op
from mpsgen.edit.templates import Templates
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.plan import plan_for
from mpsgen.facts.resolve import OpSpec, Options, Refusal, resolve_op
from mpsgen.facts.views import Views
from mpsgen.read.checkout import Checkout


def resolve_checked(views: Views, op: str, options: Options, mode: str) -> OpSpec:
    """`resolve_op`, with its refusal's pointer at the other command checked (`checked_pointer`)."""
    try:
        return resolve_op(views, op, options, mode)
    except Refusal as problem:
        raise checked_pointer(views, op, mode, problem) from None


def checked_pointer(views: Views, op: str, mode: str, problem: MpsgenError) -> MpsgenError:
    """A refusal that points at the other command (`use mpsgen migrate OP`) points at it only when
    that command would complete (planned in memory); else it says why that one would refuse too."""
    other = "migrate" if mode == "new-op" else "new-op"
    if f"`mpsgen {other} " not in (problem.hint or ""):
        return problem
    refusal = migrate_refusal(views.checkout, op, mode=other)
    if refusal is None:
        return problem
    hint = f"`mpsgen {other} {op}` would refuse it too: {refusal.message}" + (f"; {refusal.hint}" if refusal.hint else "")
    return MpsgenError(problem.message, location=problem.location, hint=hint)


def migrate_refusal(checkout: Checkout, op: str, base: Views | None = None, templates: Templates | None = None,
                    mode: str = "migrate") -> MpsgenError | None:
    """Why `mpsgen migrate OP` (no options; `mode="new-op"`: `mpsgen new-op OP`) would refuse, as the MpsgenError it would raise, or None:
    the whole plan is made in memory, legacy removal included ("ready" means migrate completes).
    Only the final formatting of the added lines, which cannot refuse, is left out. `base`, a Views
    of the unedited checkout, lends what it has parsed (views of a text are keyed by that very text,
    so an edited file is parsed afresh)."""
    views = Views(Workspace(checkout, reports=False), disk_cache=True)  # only a refusal is wanted
    if base is not None:
        views.lend(base)
    try:
        spec = resolve_checked(views, op, Options(), mode=mode)
        steps = MIGRATE_STEPS if mode == "migrate" else NEW_OP_STEPS
        templates = templates or Templates(checkout.root)
        plan_op(views, templates, plan_for(views, spec, Options(), templates=templates, mode=mode), steps)
        if mode == "migrate":
            check_single_registration(views, spec)
    except MpsgenError as exc:
        return exc
    finally:
        if base is not None:
            base.keep_unedited(views)
    return None


def accepting_command(checkout: Checkout, op: str):
    """(`mpsgen new-op OP` or `mpsgen migrate OP`, whichever would complete for the op as it stands,
    both planned in memory, else None; and when neither would, the refusal that matters: migrate's
    for an op with an MPS kernel of its own, new-op's otherwise). mpsgen suggests only commands it
    would accept."""
    refusals = {}
    for mode in ("new-op", "migrate"):
        refusal = migrate_refusal(checkout, op, mode=mode)
        if refusal is None:
            return f"mpsgen {mode} {op}", None
        refusals[mode] = refusal
    pointing_elsewhere = "`mpsgen migrate" in (refusals["new-op"].hint or "")
    return None, refusals["migrate"] if pointing_elsewhere else refusals["new-op"]


def kernel_hint(checkout: Checkout, op: str) -> str:
    """What `try` says of an op with no native Metal kernel: the command that would give it one
    (`accepting_command`), else why neither would (try takes this as its `suggest`)."""
    command, refusal = accepting_command(checkout, op)
    if command:
        return f"give it one with `{command}`"
    return f"mpsgen cannot give it one as it stands: {refusal.message}" + (f"; {refusal.hint}" if refusal.hint else "")
