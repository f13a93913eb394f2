"""The test side of a change: the OpInfo decorators in common_methods_invocations.py (and
opinfo/definitions/*.py) and the xfail/skip lists of common_mps.py, edited by the rules of
`mpsgen.facts.rules` (the same rules `verify` checks)."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.edit.opinfo import plan_opinfo_edits
from mpsgen.edit.testlists import TestListChange, plan_testlist_edits
from mpsgen.facts.rules import (
    COMPLEX,
    complex_untested,
    missing_op_rule,
    raised_messages,
    reference_dtypes_of,
    reference_of_ref,
    served_by_shared_code,
    test_keys,
    tested_by_key,
    tested_of_ref,
)
from mpsgen.facts.views import OpFacts, Views
from mpsgen.model import Change, FileChange, Note
from mpsgen.read.checkout import COMMON_MPS


def opinfo_test_name(key: str) -> str:
    """`nn.functional.mish` -> `nn_functional_mish`, as test_mps.py instantiates it."""
    return key.replace(".", "_")


def test_names(facts: OpFacts) -> tuple[str, ...]:
    """The test_mps.py tests that cover the op: `test_output_match_<key>` (gradients for backward ops)."""

    kind = "test_output_grad_match" if facts.backward else "test_output_match"
    return tuple(f"{kind}_{opinfo_test_name(key)}" for key in test_keys(facts))


def plan_expectations(views: Views, facts: OpFacts, registered: frozenset[str], *,
                      drop_undefined: bool = False) -> tuple[FileChange, ...]:
    """The op's test expectations for a kernel registering `registered` (torch dtypes): one
    FileChange per test file (common_methods_invocations.py or opinfo/definitions/*.py, common_mps.py)."""

    ws = views.ws
    if not ws.exists(COMMON_MPS):
        note = Note("info", f"{COMMON_MPS} not in this checkout: MPS test expectations not updated")
        return (FileChange(COMMON_MPS, "", notes=(note,)),)
    if not facts.refs:
        note = Note("todo", f"no OpInfo found for {facts.op}: common_mps.py not updated; run the test that covers it by hand")
        return (FileChange(COMMON_MPS, ws.read(COMMON_MPS), notes=(note,)),)
    plan = plan_test_lists(views, facts, registered, drop_undefined=drop_undefined, after_change=True)
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


def plan_test_lists(views: Views, facts: OpFacts, registered: frozenset[str], *, drop_undefined: bool = False,
                    after_change: bool = False) -> TestListPlan:
    """The op's test expectations after its kernel registers `registered` (torch dtypes): OpInfo
    decorators the kernel fixes go (by dtype, and those whose stated reason is that MPS lacks the op:
    `MissingOpRule`), the xfail/skip entries list exactly what is still missing, and complex support
    is declared. Used to edit (new-op, migrate: `after_change`, every shared line will name MPS) and
    to check (verify: the overloads served as the checkout stands)."""

    registered = registered | served_by_shared_code(facts)
    reasons = missing_op_rule(facts, after_change=after_change, legacy_raises=legacy_raises(views, facts))
    tested = tested_of_ref(facts)
    reference = reference_of_ref(facts)
    texts: dict[str, str] = {}
    changes: list = []
    for rel, refs in facts.opinfos:
        text = views.ws.read(rel)
        new_text, found = plan_opinfo_edits(text, rel, refs, registered, views.lines(rel), reasons=reasons, tested=tested,
                                            reference=reference)
        changes.extend(found)
        if new_text != text:
            texts[rel] = new_text
    keys = test_keys(facts)
    if views.ws.exists(COMMON_MPS) and keys:
        text = views.ws.read(COMMON_MPS)
        # a dtype the CPU reference lacks keeps failing the comparison with CPU, kernel or not
        cpu = reference_dtypes_of(facts)
        fixable = registered if cpu is None else registered & cpu
        new_text, found = plan_testlist_edits(
            text, COMMON_MPS, keys, fixable, bool(registered & COMPLEX), drop_undefined,
            tested_dtypes=tested_by_key(facts), backward=facts.backward,
            parsed=views.testlists_parse(), reasons=reasons, complex_untested=complex_untested(facts),
        )
        changes.extend(found)
        if new_text != text:
            texts[COMMON_MPS] = new_text
    return TestListPlan(texts, tuple(changes))


def legacy_raises(views: Views, facts: OpFacts) -> tuple[str, ...]:
    """The errors the op's separate MPS kernels (`MPS: x_mps`, removed by migrate) raise, read from
    their definitions in the host files."""
    names = facts.legacy_kernels
    if not names:
        return ()
    out: list[str] = []
    for rel in views.host_files():
        text = views.ws.read(rel)
        if not any(name in text for name in names):
            continue
        for d in views.definitions(rel):
            if d.name in names and d.kind in ("function", "impl-func"):
                out.extend(raised_messages(text[d.code_start:d.code_end]))
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class TestListPlan:
    """The new texts of the test files and what changes."""

    __test__ = False

    texts: dict[str, str]
    changes: tuple[TestListChange, ...]
