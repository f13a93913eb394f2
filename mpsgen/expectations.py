"""The test side of a change: the OpInfo decorators in common_methods_invocations.py (and
opinfo/definitions/*.py) and the xfail/skip lists of common_mps.py, edited by the rules of
`mpsgen.rules` (the same rules `verify` checks)."""

from __future__ import annotations

from mpsgen.checkout import COMMON_MPS
from mpsgen.facts import OpFacts, Views


def opinfo_test_name(key: str) -> str:
    """`nn.functional.mish` -> `nn_functional_mish`, as test_mps.py instantiates it."""
    return key.replace(".", "_")


def test_names(facts: OpFacts) -> tuple[str, ...]:
    """The test_mps.py tests that cover the op: `test_output_match_<key>` (gradients for backward ops)."""
    from mpsgen.rules import test_keys

    kind = "test_output_grad_match" if facts.backward else "test_output_match"
    return tuple(f"{kind}_{opinfo_test_name(key)}" for key in test_keys(facts))


def plan_expectations(views: Views, facts: OpFacts, registered: frozenset[str], *, drop_undefined: bool = False) -> tuple[str, ...]:
    """Edit the op's test expectations for a kernel registering `registered` (torch dtypes);
    returns the test names to run."""
    from mpsgen.rules import plan_test_lists

    ws = views.ws
    if not ws.exists(COMMON_MPS):
        ws.add_note(f"{COMMON_MPS} not in this checkout: MPS test expectations not updated")
        return ()
    if not facts.refs:
        ws.add_note(f"no OpInfo found for {facts.op}: common_mps.py not updated; run the test that covers it by hand")
        return ()
    plan = plan_test_lists(views, facts, registered, drop_undefined=drop_undefined)
    for change in plan.changes:
        if change.action == "kept":
            ws.add_note(f"{change.location}: kept {change.dict_name}[{change.key!r}]: {change.detail}")
        elif change.dict_name:
            ws.add_change(change.action, change.location, f"{change.dict_name}[{change.key!r}]: {change.detail}")
        else:
            ws.add_change(change.action, change.location, f"{change.key}: {change.detail}")
    for rel, text in plan.texts.items():
        ws.write(rel, text)
    return test_names(facts)
