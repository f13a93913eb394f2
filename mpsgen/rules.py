"""The dtype and test-list rules: the one rule set `verify` checks and `new-op`/`migrate` edit by.

- **Tested dtypes** of an op: the dtypes its OpInfos run on MPS (`dtypesIfMPS`, else `dtypes`, less
  float64/complex128); for a `*_backward` op only the floating and complex ones (gradients of
  integer tensors are not tested). Unknown when no OpInfo's dtypes can be read statically.
- **Expected to work**: the tested dtypes that no xfail/skip entry of the op's keys declares
  failing (a `None` entry declares all of them), less complex ones when no key is in
  `SUPPORTED_COMPLEX_OPS` (test_mps expects those to fail). Without an OpInfo: float32 + float16.
- **Groups to register** (`choose_groups`): the tested dtypes the functor body can serve; never less
  than what is expected to work *before* the change (what the legacy kernel served): a change that
  would lose a dtype is refused, naming what to pass.
- **Test lists after the change** (`plan_test_lists`): the op's xfail/skip entries list exactly the
  tested dtypes the kernel does not register (registered dtypes leave a list, a `None` entry becomes
  the explicit list of what is still missing, or goes), `SUPPORTED_COMPLEX_OPS` holds every key of an
  op whose kernel registers complex, and `dtypesIfMPS` is never narrowed.
- **Served by shared code**: dtypes an op's shared host function serves before calling the stub
  (the catalog's `served_by_shared_code`, e.g. nan_to_num copies integer inputs) count as covered.
- **Keys**: `name + variant_test_name` of the op's OpInfos (python refs are not: test_mps builds
  its tests from `op_db` only).
"""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.checkout import COMMON_MPS
from mpsgen.dtypes import GROUPS, TORCH_DTYPES
from mpsgen.errors import MpsgenError
from mpsgen.facts import OpFacts, Views

FLOATS = frozenset(TORCH_DTYPES["float"])
INTEGERS = frozenset(TORCH_DTYPES["integer"])
COMPLEX = frozenset(TORCH_DTYPES["complex"])
NOT_ON_MPS = frozenset({"float64", "complex128"})
BASELINE = frozenset({"float32", "float16"})  # what every float op runs when no OpInfo says more


def test_keys(facts: OpFacts) -> tuple[str, ...]:
    """The common_mps.py keys of the op: its OpInfos' `name + variant_test_name`."""
    return tuple(dict.fromkeys(ref.key for ref in facts.refs if ref.kind != "python-ref"))


def tested_by_key(facts: OpFacts) -> dict[str, frozenset[str]]:
    """key -> the dtypes MPS tests for it (keys whose dtypes cannot be read are left out)."""
    from mpsgen.opinfo import tested_dtypes

    out: dict[str, frozenset[str]] = {}
    for ref in facts.refs:
        if ref.kind == "python-ref":
            continue
        dtypes = tested_dtypes(ref)
        if dtypes is None:
            continue
        if facts.backward:
            dtypes = dtypes & (FLOATS | COMPLEX)
        out[ref.key] = out.get(ref.key, frozenset()) | dtypes
    return out


@dataclass(frozen=True)
class Expectation:
    """What the MPS tests of an op run and what they expect to work, and where that comes from."""

    tested: frozenset[str] | None  # None: no OpInfo's dtypes readable
    failing: frozenset[str]  # declared failing by xfail/skip entries
    all_failing: bool  # a `None` entry declares everything failing
    complex_supported: bool  # a key is in SUPPORTED_COMPLEX_OPS
    source: str  # where `tested` comes from (`path:line` of an OpInfo), "" when unknown

    @property
    def expected(self) -> frozenset[str]:
        """The dtypes the tests expect to pass."""
        if self.all_failing:
            return frozenset()
        base = self.tested if self.tested is not None else BASELINE
        out = base - NOT_ON_MPS - self.failing
        return out if self.complex_supported else out - COMPLEX


def expectation(views: Views, facts: OpFacts) -> Expectation:
    from mpsgen.testlists import canonical_dtype

    tested_map = tested_by_key(facts)
    tested = frozenset().union(*tested_map.values()) if tested_map else None
    source = ""
    for rel, refs in facts.opinfos:
        for ref in refs:
            if ref.key in tested_map:
                source = source or str(ref.location)
    keys = set(test_keys(facts)) or {facts.op}
    section = "grad" if facts.backward else "forward"
    failing: set[str] = set()
    everything = False
    for where, _key, dtypes in views.declared_dtypes(keys):
        if where != section:
            continue
        if dtypes is None:
            everything = True
        else:
            failing |= {canonical_dtype(d) for d in dtypes}
    complex_ok = bool(keys & views.complex_keys())
    return Expectation(tested, frozenset(failing), everything, complex_ok, source)


def guarded_dtypes(facts: OpFacts) -> frozenset[str]:
    """Dtypes the host function rejects up front with a TORCH_CHECK (not a coverage gap)."""
    import re

    from mpsgen.cpp import mask_code

    if facts.host is None:
        return frozenset()
    guards = re.findall(r"TORCH_CHECK\w*\s*\(([^;]*)\)\s*;", mask_code(facts.host.body))
    out: set[str] = set()
    for guard, dtypes in (("isFloatingType", FLOATS), ("isIntegralType", INTEGERS), ("isComplexType", COMPLEX)):
        if any(guard in g for g in guards):
            out |= dtypes
    return frozenset(out)


def served_by_shared_code(facts: OpFacts) -> frozenset[str]:
    """Dtypes the op's shared host function serves itself, before calling the stub (the catalog
    says so for the ops known to do it, e.g. nan_to_num copies integer inputs)."""
    from mpsgen.catalog import lookup
    from mpsgen.dtypes import torch_dtypes_for

    entry = lookup(facts.op)
    return torch_dtypes_for(entry.served_by_shared_code) if entry is not None else frozenset()


def missing_coverage(views: Views, facts: OpFacts) -> tuple[frozenset[str], Expectation]:
    """The dtypes the tests expect to work that the functor is not registered for."""
    exp = expectation(views, facts)
    covered = facts.registered_dtypes | served_by_shared_code(facts)
    return exp.expected - guarded_dtypes(facts) - covered, exp


# ------------------------------------------------------------------------------ choosing groups


def groups_for_dtypes(dtypes: frozenset[str], supports: tuple[str, ...], promotes: bool, covers=None) -> tuple[str, ...]:
    """The groups of `supports` that register the dtypes (integer inputs: `int2float` when the op
    promotes integers to float or the body only has that form, else `integer`; bool by its own group
    where the chosen integer group does not register it: `covers`, as in `choose_groups`)."""
    from mpsgen.dtypes import torch_dtypes_for

    covers = covers or torch_dtypes_for
    chosen = set()
    if dtypes & FLOATS and "float" in supports:
        chosen.add("float")
    if dtypes & COMPLEX and "complex" in supports:
        chosen.add("complex")
    ints = dtypes & INTEGERS
    if ints - {"bool"}:
        if "int2float" in supports and (promotes or "integer" not in supports):
            chosen.add("int2float")
        elif "integer" in supports:
            chosen.add("integer")
    if "bool" in dtypes and "bool" not in covers(tuple(chosen)):
        if "bool" in supports:
            chosen.add("bool")
        elif ints == {"bool"} and "int2float" in supports and promotes:
            chosen.add("int2float")
    return tuple(g for g in GROUPS if g in chosen)


def _proposal(groups: tuple[str, ...], expected: frozenset[str], allowed: tuple[str, ...], promotes: bool,
              covers) -> tuple[str, ...]:
    """One `--dtypes` value the same command accepts that registers everything `expected` (and keeps
    what `groups` registers): the groups of `allowed` for the expected dtypes, plus `groups`, with one
    integer group (the expected one) and bool on its own only where that integer group lacks it."""
    wanted = set(groups_for_dtypes(frozenset(expected), allowed, promotes, covers))
    wanted |= {g for g in groups if g in allowed}
    for one, other in (("int2float", "integer"), ("integer", "int2float")):
        if one in wanted and other in wanted:
            wanted.discard(other if one in groups_for_dtypes(frozenset(expected), allowed, promotes, covers) else one)
    if "bool" in wanted and "bool" in covers(tuple(g for g in wanted if g != "bool")):
        wanted.discard("bool")
    return tuple(g for g in GROUPS if g in wanted)


def promotes_int_to_float(facts: OpFacts) -> bool:
    return any(ref.promotes_int_to_float for ref in facts.refs if ref.kind != "python-ref")


def choose_groups(
    views: Views,
    facts: OpFacts,
    *,
    supports: tuple[str, ...],
    defaults: tuple[str, ...],
    explicit: tuple[str, ...] | None,
    body: str,
    minimal: bool = False,
    covers=None,
    allowed: tuple[str, ...] | None = None,
) -> tuple[str, ...]:
    """The dtype groups to register. `supports`: what the body can serve; `defaults`: the groups to
    use when no OpInfo says what MPS tests; `explicit`: `--dtypes`; `minimal` (a placeholder body,
    still to be written): only the defaults and what the tests expect to work now. Refuses (exit 2)
    when the result would not register a dtype the tests expect to work now. `covers`: the torch
    dtypes some groups register (default `mpsgen.dtypes.torch_dtypes_for`); `allowed`: the groups
    `--dtypes` accepts for this kernel (default all). A refusal proposes one `--dtypes` value, from
    `allowed`, that registers every dtype the tests expect at once. Integer inputs of an op that
    promotes them to float (`promotes_int_to_float`) are refused as `integer` (integer output)."""
    from mpsgen.dtypes import torch_dtypes_for

    covers = covers or torch_dtypes_for
    allowed = allowed or tuple(GROUPS)
    promotes = promotes_int_to_float(facts)
    exp = expectation(views, facts)
    requested = explicit is not None and not body.startswith("the existing ")  # --dtypes, not the file's own
    if requested and "integer" in explicit and promotes and "int2float" in allowed:
        proposal = ",".join(g for g in GROUPS if g in set(explicit) - {"integer"} | {"int2float"})
        raise MpsgenError(
            f"{facts.op}: integer inputs give float (promotes_int_to_float); dtype group 'integer' would register "
            f"integer outputs for them",
            location=facts.entries[0].location,
            hint=f"pass --dtypes {proposal}",
        )
    if explicit is not None:
        groups = explicit
    elif minimal:
        wanted = exp.expected | covers(defaults)
        groups = groups_for_dtypes(wanted, supports, promotes_int_to_float(facts), covers)
    elif exp.tested is None:
        groups = defaults
    else:
        groups = groups_for_dtypes(exp.tested, supports, promotes_int_to_float(facts), covers) or defaults
    lost = sorted(exp.expected - covers(groups) - served_by_shared_code(facts))
    if lost:
        where = exp.source or "the default float32/float16"
        need = ",".join(_proposal(groups, exp.expected - served_by_shared_code(facts), allowed, promotes, covers))
        raise MpsgenError(
            f"{facts.op}: registering {', '.join(groups) or 'nothing'} would lose {', '.join(lost)}, which the "
            f"tests expect to work now (tested by the OpInfo at {where}; no xfail declares them failing)",
            location=facts.entries[0].location,
            hint=f"{body} cannot serve them: pass --expr with a body that does and --dtypes {need}",
        )
    return groups


# ---------------------------------------------------------------------------- test-list rules


@dataclass(frozen=True)
class TestListPlan:
    """The new texts of the test files and what changes (`mpsgen.testlists.TestListChange`s)."""

    __test__ = False

    texts: dict[str, str]
    changes: tuple


def plan_test_lists(views: Views, facts: OpFacts, registered: frozenset[str], *, drop_undefined: bool = False) -> TestListPlan:
    """The op's test expectations after its kernel registers `registered` (torch dtypes): OpInfo
    decorators the kernel fixes go, the xfail/skip entries list exactly what is still missing, and
    complex support is declared. Used to edit (new-op, migrate) and to check (verify)."""
    from mpsgen.opinfo import plan_opinfo_edits
    from mpsgen.testlists import plan_testlist_edits

    registered = registered | served_by_shared_code(facts)
    texts: dict[str, str] = {}
    changes: list = []
    for rel, refs in facts.opinfos:
        text = views.ws.read(rel)
        new_text, found = plan_opinfo_edits(text, rel, refs, registered, views.lines(rel))
        changes.extend(found)
        if new_text != text:
            texts[rel] = new_text
    keys = test_keys(facts)
    if views.ws.exists(COMMON_MPS) and keys:
        text = views.ws.read(COMMON_MPS)
        new_text, found = plan_testlist_edits(
            text, COMMON_MPS, keys, registered, bool(registered & COMPLEX), drop_undefined,
            tested_dtypes=tested_by_key(facts), backward=facts.backward,
            parsed=views.testlists_parse(),
        )
        changes.extend(found)
        if new_text != text:
            texts[COMMON_MPS] = new_text
    return TestListPlan(texts, tuple(changes))
