"""The test side of an op's plan, decided by `mpsgen.facts.rules` (the rules `verify` checks too):
which dtypes the kernel fixes in the test lists, what each expectation's stated reason says, what
the OpInfos test and the CPU reference supports. `mpsgen.edit.expectations` writes the verdicts
into common_methods_invocations.py (or opinfo/definitions/*.py) and common_mps.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpsgen.facts.rules import (
    COMPLEX,
    MissingOpRule,
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


@dataclass(frozen=True)
class TestListRules:
    """The rules' verdicts for an op's test expectations once its kernel registers `registered`
    (torch dtypes, with those its shared code serves): edit/ applies them to each test file."""

    __test__ = False  # not a pytest class

    facts: OpFacts
    registered: frozenset[str]  # the kernel's dtypes and those its shared host code serves
    reasons: MissingOpRule  # judges each expectation's stated reason
    tested: object  # the dtypes each OpInfo runs on MPS (`tested_of_ref`)
    reference: object  # the dtypes each OpInfo's CPU reference supports (`reference_of_ref`)
    keys: tuple[str, ...]  # the op's OpInfo keys in common_mps.py
    fixable: frozenset[str]  # registered dtypes the CPU reference has too (the others keep failing)
    complex_supported: bool  # the kernel registers a complex dtype
    drop_undefined: bool  # entries about undefined/precision behaviour go too
    tested_by_key: Mapping[str, frozenset[str]]
    complex_untested: Mapping[str, str]


def test_list_rules(views: Views, facts: OpFacts, registered: frozenset[str], *, drop_undefined: bool = False,
                    after_change: bool = False) -> TestListRules:
    """The verdicts for a kernel registering `registered`: OpInfo decorators the kernel fixes go
    (by dtype, and those whose stated reason is that MPS lacks the op: `MissingOpRule`), the
    xfail/skip entries list exactly what is still missing, complex support is declared.
    `after_change`: new-op and migrate (every shared line will name MPS); verify judges the overloads
    served as the checkout stands."""
    registered = registered | served_by_shared_code(facts)
    reasons = missing_op_rule(facts, after_change=after_change, legacy_raises=legacy_raises(views, facts))
    # a dtype the CPU reference lacks keeps failing the comparison with CPU, kernel or not
    cpu = reference_dtypes_of(facts)
    fixable = registered if cpu is None else registered & cpu
    return TestListRules(facts, registered, reasons, tested_of_ref(facts), reference_of_ref(facts), test_keys(facts),
                         fixable, bool(registered & COMPLEX), drop_undefined, tested_by_key(facts),
                         complex_untested(facts))


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


def opinfo_test_name(key: str) -> str:
    """`nn.functional.mish` -> `nn_functional_mish`, as test_mps.py instantiates it."""
    return key.replace(".", "_")


def test_names(facts: OpFacts) -> tuple[str, ...]:
    """The test_mps.py tests that cover the op: `test_output_match_<key>` (gradients for backward ops)."""

    kind = "test_output_grad_match" if facts.backward else "test_output_match"
    return tuple(f"{kind}_{opinfo_test_name(key)}" for key in test_keys(facts))


# not tests of pytest's, though named test_*
test_list_rules.__test__ = False
test_names.__test__ = False
