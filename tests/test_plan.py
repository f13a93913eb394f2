"""Issue 44's contract: an op's whole plan is decided once in facts/ (`mpsgen.facts.plan.plan_for`),
edit/ only writes it, and try reads the functor it runs from no plan at all.

- the functor text `plan_for` decides is the one `migrate` writes and the one `try` runs on the
  kernel as planned (what the body check before writing runs);
- a body the command's check turns down is decided again inside `plan_for` (the next source, else
  the placeholder quoting the reason), each verdict kept in order in `OpPlan.checked`."""

from __future__ import annotations

from support import copy_checkout

from mpsgen.commands.migrate import plan_migrate
from mpsgen.commands.tryop.api import try_source
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.plan import OpPlan, Verdict, plan_for
from mpsgen.facts.resolve import Options, resolve_op
from mpsgen.facts.views import Views
from mpsgen.model import Note
from mpsgen.read.checkout import Checkout, PlannedCheckout


def _plan(root, op: str, options: Options, check=None) -> OpPlan:
    views = Views(Workspace(Checkout.find(root)), disk_cache=True)
    return plan_for(views, resolve_op(views, op, options, mode="migrate"), options, check, mode="migrate")


def test_the_functor_plan_for_decides_is_what_migrate_writes_and_try_runs(tmp_path):
    root = copy_checkout(tmp_path)
    options = Options(body="cpu")  # a derived body: the one the check before writing runs
    seen = []

    def check(plan: OpPlan) -> Verdict:
        seen.append(plan.body_kernel.text)
        return Verdict(True, "", Note("info", "atan2: checked"))

    plan = _plan(root, "atan2", options, check)
    text = plan.kernel.text
    assert plan.kernel.source == "cpu" and plan.kernel.body.derived
    assert "struct atan2_functor {" in text and "atan2" in text
    assert seen == [text] and [n.message for n in plan.checked] == ["atan2: checked"]
    assert _plan(root, "atan2", options).kernel.text == text  # decided the same without a check
    written = plan_migrate(Checkout.find(root), ("atan2",), options)
    edits = {e.path: e.after for e in written.edits}
    assert text in edits[plan.spec.kernel_file]
    assert text in try_source(PlannedCheckout(root, edits), "atan2").source


def test_a_body_the_check_turns_down_is_decided_again_inside_plan_for(tmp_path):
    root = copy_checkout(tmp_path)
    asked = []

    def refuse(plan: OpPlan) -> Verdict:
        source = plan.body_kernel.source
        asked.append(source)
        return Verdict(False, f"try failed: the {source} body, on purpose",
                       Note("info", f"logit: body from {source} not written"))

    plan = _plan(root, "logit", Options(), refuse)
    assert asked == ["graph"]
    assert plan.kernel.source == "placeholder"
    assert [n.message for n in plan.checked] == ["logit: body from graph not written"]
    assert "try failed: the graph body, on purpose" in " ".join(plan.kernel.text.split()).replace("// ", "")
