"""The test side of a change: the OpInfo decorators in common_methods_invocations.py (and
opinfo/definitions/*.py) and the xfail/skip lists of common_mps.py, edited by the verdicts the plan
holds (`mpsgen.facts.testplan.TestListRules`, by the rules of `mpsgen.facts.rules`, the same rules
`verify` checks)."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.edit.opinfo import plan_opinfo_edits
from mpsgen.edit.testlists import TestListChange, plan_testlist_edits
from mpsgen.facts.testplan import TestListRules
from mpsgen.facts.views import OpFacts, Views
from mpsgen.model import Change, FileChange, Note
from mpsgen.read.checkout import COMMON_MPS


def plan_expectations(views: Views, facts: OpFacts, rules: TestListRules | None) -> tuple[FileChange, ...]:
    """The op's test expectations by the plan's verdicts (`rules`; None where there is nothing to
    judge: no common_mps.py, no OpInfo): one FileChange per test file (common_methods_invocations.py
    or opinfo/definitions/*.py, common_mps.py)."""

    ws = views.ws
    if not ws.exists(COMMON_MPS):
        note = Note("info", f"{COMMON_MPS} not in this checkout: MPS test expectations not updated")
        return (FileChange(COMMON_MPS, "", notes=(note,)),)
    if not facts.refs:
        note = Note("todo", f"no OpInfo found for {facts.op}: common_mps.py not updated; run the test that covers it by hand")
        return (FileChange(COMMON_MPS, ws.read(COMMON_MPS), notes=(note,)),)
    plan = plan_test_lists(views, rules)
    changes: dict[str, list[Change]] = {}
    notes: dict[str, list[Note]] = {}
    for item in plan.changes:
        rel = item.location.path
        if item.action == "kept":
            notes.setdefault(rel, []).append(Note("kept", f"kept {item.dict_name}[{item.key!r}]: {item.detail}", item.location))
        elif item.dict_name:
            changes.setdefault(rel, []).append(Change(item.action, item.location, f"{item.dict_name}[{item.key!r}]: {item.detail}"))
        else:
            changes.setdefault(rel, []).append(Change(item.action, item.location, f"{item.key}: {item.detail}"))
    files = dict.fromkeys([*plan.texts, *changes, *notes])
    return tuple(
        FileChange(rel, plan.texts.get(rel, ws.read(rel)), tuple(changes.get(rel, ())), tuple(notes.get(rel, ())))
        for rel in files
    )


def plan_test_lists(views: Views, rules: TestListRules) -> TestListPlan:
    """The op's test files with the verdicts of `rules` written (`mpsgen.facts.testplan`): used to
    edit (new-op, migrate) and to check (verify: what the lists would become)."""

    facts = rules.facts
    texts: dict[str, str] = {}
    changes: list = []
    for rel, refs in facts.opinfos:
        text = views.ws.read(rel)
        new_text, found = plan_opinfo_edits(text, rel, refs, rules.registered, views.lines(rel), reasons=rules.reasons,
                                            tested=rules.tested, reference=rules.reference)
        changes.extend(found)
        if new_text != text:
            texts[rel] = new_text
    if views.ws.exists(COMMON_MPS) and rules.keys:
        text = views.ws.read(COMMON_MPS)
        new_text, found = plan_testlist_edits(
            text, COMMON_MPS, rules.keys, rules.fixable, rules.complex_supported, rules.drop_undefined,
            tested_dtypes=rules.tested_by_key, backward=facts.backward,
            parsed=views.testlists_parse(), reasons=rules.reasons, complex_untested=rules.complex_untested,
        )
        changes.extend(found)
        if new_text != text:
            texts[COMMON_MPS] = new_text
    return TestListPlan(texts, tuple(changes))


@dataclass(frozen=True)
class TestListPlan:
    """The new texts of the test files and what changes."""

    __test__ = False

    texts: dict[str, str]
    changes: tuple[TestListChange, ...]
