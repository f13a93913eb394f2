"""The test side of a change: the OpInfo decorators in common_methods_invocations.py (and
opinfo/definitions/*.py) and the xfail/skip lists of common_mps.py, edited by the rules of
`mpsgen.rules` (the same rules `verify` checks)."""

from __future__ import annotations

from mpsgen.checkout import COMMON_MPS
from mpsgen.facts import OpFacts, Views
from mpsgen.model import Change, FileChange, Note


def opinfo_test_name(key: str) -> str:
    """`nn.functional.mish` -> `nn_functional_mish`, as test_mps.py instantiates it."""
    return key.replace(".", "_")


def test_names(facts: OpFacts) -> tuple[str, ...]:
    """The test_mps.py tests that cover the op: `test_output_match_<key>` (gradients for backward ops)."""
    from mpsgen.rules import test_keys

    kind = "test_output_grad_match" if facts.backward else "test_output_match"
    return tuple(f"{kind}_{opinfo_test_name(key)}" for key in test_keys(facts))


def plan_expectations(views: Views, facts: OpFacts, registered: frozenset[str], *,
                      drop_undefined: bool = False) -> tuple[FileChange, ...]:
    """The op's test expectations for a kernel registering `registered` (torch dtypes): one
    FileChange per test file (common_methods_invocations.py or opinfo/definitions/*.py, common_mps.py)."""
    from mpsgen.rules import plan_test_lists

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
