"""The dtype and test-list rules: the one rule set `verify` checks and `new-op`/`migrate` edit by.

- **Tested dtypes** of an op: the dtypes its OpInfos run on MPS (`dtypesIfMPS`, else `dtypes`, less
  float64/complex128); for a `*_backward` op only the floating and complex ones (gradients of
  integer tensors are not tested). Unknown when no OpInfo's dtypes can be read statically.
- **Expected to work**: the tested dtypes that no xfail/skip entry of the op's keys declares
  failing (a `None` entry declares all of them), less complex ones when the checkout's complex list
  says they fail (2.13: no key in `SUPPORTED_COMPLEX_OPS`; 2.15: a key in `UNSUPPORTED_COMPLEX_OPS`;
  `read.testlists.complex_list`). Without an OpInfo: float32 + float16.
- **Groups to register** (`choose_groups`): the tested dtypes the functor body can serve; never less
  than what is expected to work *before* the change (what the legacy kernel served): a change that
  would lose a dtype is refused, naming what to pass.
- **Test lists after the change** (decided by `mpsgen.facts.testplan.test_list_rules`, written by `mpsgen.edit.expectations`): the op's xfail/skip entries list exactly the
  tested dtypes the kernel does not register (registered dtypes leave a list, a `None` entry becomes
  the explicit list of what is still missing, or goes), the complex list says every key of an op whose
  kernel registers complex passes (out of `UNSUPPORTED_COMPLEX_OPS`; in `SUPPORTED_COMPLEX_OPS` when
  that key's OpInfo tests a complex dtype: `complex_untested`, a key testing none is not added, as
  2.14.0 left nan_to_num out), and `dtypesIfMPS` is never narrowed.
- **Bounded by the CPU reference**: MPS's consistency tests compare with the CPU op, so an expected
  failure on a dtype the OpInfo's `dtypes=` (what the CPU supports) leaves out stays, whatever the
  kernel registers (2.13 registers silu for integers and keeps their xfail: CPU silu has none).
- **Routed by the host function** (`host_routing`): dtypes the op's host function sends elsewhere
  before or instead of calling its kernel (a branch on `isFloatingType(iter.common_dtype())`,
  `isIntegralType(..., includeBool)`, `isComplexType(...)`, an early `return` after another op) are
  served, not lost. A host function whose control flow around the call cannot be read makes the
  check say it cannot tell, never fail.
- **Served by shared code**: dtypes an op's shared host function serves before calling the stub
  (the catalog's `served_by_shared_code`, e.g. nan_to_num copies integer inputs) count as covered.
- **"MPS lacks the op"** (`MissingOpRule`): an MPS expectation whose stated reason is that MPS lacks
  an overload the change serves is fixed by the kernel (see the class for the reasons recognised).
- **Keys**: `name + variant_test_name` of the op's OpInfos (python refs are not: test_mps builds
  its tests from `op_db` only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.dtypes import GROUPS, TORCH_DTYPES, torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.facts.catalog import lookup
from mpsgen.facts.views import OpFacts, Views
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.cpuread import BOOL, INT2FLOAT, SAME
from mpsgen.read.opinfo import reference_dtypes, tested_dtypes
from mpsgen.read.testlists import canonical_dtype

# code that builds or runs an MPSGraph (a host function serving its op without a Metal kernel)
MPSGRAPH = re.compile(r"\bMPSGraph\w*|\bMPSCachedGraph\b|\bLookUpOrCreateCachedGraph\b|\brunMPSGraph\b|\bmpsGraph\b")
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


def complex_untested(facts: OpFacts) -> dict[str, str]:
    """key -> why a list of the ops whose complex tests pass (2.13's `SUPPORTED_COMPLEX_OPS`) does not
    take the key: its OpInfo runs no complex dtype on MPS, so the entry would change none of its tests
    whatever the kernel registers (2.14.0 registers nan_to_num for float2/half2 and leaves it out of
    the list: its OpInfo tests integers, bool and floats only). A key in 2.15's list of the failing
    ones still leaves it when the kernel registers complex (the claim is untrue). Keys whose dtypes
    cannot be read are left out (the list is edited for them as the kernel says)."""

    out: dict[str, str] = {}
    sources: dict[str, str] = {}
    for ref in facts.refs:
        if ref.kind != "python-ref":
            sources.setdefault(ref.key, str(ref.location))
    for key, dtypes in tested_by_key(facts).items():
        if not dtypes & COMPLEX:
            out[key] = (f"its OpInfo ({sources[key]}) tests no complex dtype on MPS, so the complex list changes "
                        f"none of its tests whatever the kernel registers")
    return out


@dataclass(frozen=True)
class Expectation:
    """What the MPS tests of an op run and what they expect to work, and where that comes from."""

    tested: frozenset[str] | None  # None: no OpInfo's dtypes readable
    failing: frozenset[str]  # declared failing by xfail/skip entries
    all_failing: bool  # a `None` entry declares everything failing
    complex_supported: bool  # the complex list expects its complex tests to pass
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
    listed = views.complex_list()
    complex_ok = listed is not None and listed.complex_expected(keys)
    return Expectation(tested, frozenset(failing), everything, complex_ok, source)


def guarded_dtypes(facts: OpFacts) -> frozenset[str]:
    """Dtypes the host function rejects up front with a TORCH_CHECK (not a coverage gap)."""
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

    entry = lookup(facts.op)
    return torch_dtypes_for(entry.served_by_shared_code) if entry is not None else frozenset()


def missing_coverage(views: Views, facts: OpFacts, registered: frozenset[str] | None = None,
                     ) -> tuple[frozenset[str], Expectation]:
    """The dtypes the tests expect to work that the functor (or, `registered`, a reduction's
    kernels) is not registered for (and that the host function does not send elsewhere)."""
    exp = expectation(views, facts)
    if registered is None:
        registered = facts.registered_dtypes
    covered = registered | served_by_shared_code(facts) | host_routing(facts).routed
    return exp.expected - guarded_dtypes(facts) - covered, exp


# --------------------------------------------------------------------------- host-routed dtypes

_ALL_DTYPES = FLOATS | INTEGERS | COMPLEX
_PREDICATE = re.compile(r"(!?)\s*(?:(?:c10|at)::)?(isFloatingType|isIntegralType|isComplexType)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_DTYPE_WORDS = re.compile(r"dtype|scalar_type|Type\b|isFloatingType|isIntegralType|isComplexType|ScalarType")
_OTHER_CONTROL = re.compile(r"\b(?:switch|for|while|do|goto)\b|\?")


@dataclass(frozen=True)
class HostRouting:
    """What the op's host function does with dtypes around its kernel call: `routed`, the dtypes
    it serves some other way (another op, another branch); `unreadable`, why that cannot be told
    ("" when it can)."""

    routed: frozenset[str] = frozenset()
    unreadable: str = ""


def host_routing(facts: OpFacts) -> HostRouting:
    """Read the host function's branches around its `exec_*_kernel` call: the dtypes that reach
    the call are those of the conditions of the branches it sits in, less those of earlier branches
    of the same if-chain and of earlier branches that `return`. Conditions that do not mention a
    dtype do not route dtypes; a dtype condition other than a disjunction of (negated)
    `isFloatingType`/`isIntegralType`/`isComplexType`, or a call under switch/loop/`?:`, is unreadable."""
    host = facts.host
    if host is None or not host.kernel:
        return HostRouting()

    masked = mask_code(host.body)
    call = re.search(r"\bexec_\w+_kernel\w*\s*\(", masked)
    if call is None:
        return HostRouting()  # a helper macro's body: the call is the body
    served, why = _served_at(masked, 0, len(masked), call.start(), _ALL_DTYPES)
    if why:
        return HostRouting(unreadable=f"{host.name} ({host.location}) {why}")
    return HostRouting(_ALL_DTYPES - served)


def _served_at(masked: str, start: int, end: int, call: int, served: frozenset[str]) -> tuple[frozenset[str], str]:
    """The dtypes reaching offset `call` in the statements masked[start:end]."""

    pos = start
    while True:
        m = re.compile(r"\bif\s*\(").search(masked, pos, end)
        if m is None or m.start() > call:
            return served, _other_control(masked[start:call])
        chain_start = m.start()
        if _other_control(masked[pos:chain_start]):
            return served, _other_control(masked[pos:chain_start])
        earlier = frozenset()  # dtypes taken by the chain's earlier branches
        chain_pos = m.start()
        while True:  # one branch of the if / else if / else chain
            cond_text = ""
            if masked.startswith("if", chain_pos):
                open_paren = masked.index("(", chain_pos)
                close = _close(masked, open_paren)
                cond_text = masked[open_paren + 1 : close]
                body_start = close + 1
            else:
                body_start = chain_pos
            body_start = _skip_space(masked, body_start, end)
            if masked.startswith("{", body_start):
                body_end = match_brace(masked, body_start) + 1
                if body_end <= 0:
                    return served, "has unbalanced braces"
            else:
                semicolon = masked.find(";", body_start, end)
                body_end = (semicolon if semicolon >= 0 else end) + 1
            if cond_text:
                dtypes, why = _condition_dtypes(cond_text)
                if why:
                    if body_start <= call < body_end or "return" in masked[body_start:body_end]:
                        return served, why
                    dtypes = None
            else:
                dtypes = _ALL_DTYPES - earlier  # else
            if body_start <= call < body_end:
                if dtypes is not None:
                    served = served & (dtypes - earlier)
                return _served_at(masked, body_start + 1 if masked.startswith("{", body_start) else body_start,
                                  body_end - 1, call, served)
            if dtypes is not None:
                if re.search(r"\breturn\b", masked[body_start:body_end]):
                    served = served - (dtypes - earlier)
                earlier = earlier | dtypes
            after = _skip_space(masked, body_end, end)
            if re.match(r"else\b", masked[after:end]):
                chain_pos = _skip_space(masked, after + 4, end)
                continue
            pos = body_end
            break


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _other_control(code: str) -> str:
    m = _OTHER_CONTROL.search(code)
    return f"calls its kernel after a `{m.group(0)}` mpsgen does not follow" if m else ""


def _condition_dtypes(cond: str) -> tuple[frozenset[str] | None, str]:
    """The dtypes for which `cond` holds (None: it does not depend on the dtype), or why it
    cannot be read."""
    if not _DTYPE_WORDS.search(cond):
        return None, ""
    terms = [t.strip() for t in re.split(r"\|\|", cond)]
    out: set[str] = set()
    for term in terms:
        while term.startswith("(") and term.endswith(")") and _close(term, 0) == len(term) - 1:
            term = term[1:-1].strip()
        m = _PREDICATE.fullmatch(term)
        if m is None:
            return None, f"branches on `{' '.join(cond.split())}`, a dtype condition mpsgen does not read"
        negated, name, args = m.groups()
        if name == "isFloatingType":
            dtypes = FLOATS
        elif name == "isComplexType":
            dtypes = COMPLEX
        else:
            parts = [a.strip() for a in args.split(",")]
            include_bool = len(parts) > 1 and re.sub(r"/\*.*?\*/", "", parts[-1]).strip() == "true"
            dtypes = INTEGERS if include_bool else INTEGERS - {"bool"}
        out |= (_ALL_DTYPES - dtypes) if negated else dtypes
    return frozenset(out), ""


def _close(text: str, open_index: int) -> int:
    """The parenthesis closing the one at `open_index` (`cpp.match_brace`), or the text's last index."""
    close = match_brace(text, open_index)
    return close if close >= 0 else len(text) - 1


# ------------------------------------------------------------------------------ choosing groups


def groups_for_dtypes(dtypes: frozenset[str], supports: tuple[str, ...], promotes: bool, covers=None) -> tuple[str, ...]:
    """The groups of `supports` that register the dtypes (integer inputs: `int2float` when the op
    promotes integers to float or the body only has that form, else `integer`; bool by its own group
    where the chosen integer group does not register it: `covers`, as in `choose_groups`)."""

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
    """Integer inputs of the op give float: its OpInfo says so first (`promotes_int_to_float`),
    else its CPU implementation builds a float output for them (`OpFacts.cpu_output`); an unknown
    CPU output keeps the OpInfo's answer."""
    return bool(int_to_float_reason(facts))


def int_to_float_reason(facts: OpFacts) -> str:
    """Why integer inputs of the op give float ("" when nothing says they do)."""

    ref = next((ref for ref in facts.refs if ref.kind != "python-ref" and ref.promotes_int_to_float), None)
    if ref is not None:
        return f"its OpInfo at {ref.location} sets promotes_int_to_float"
    cpu = facts.cpu_output
    if cpu.kind == INT2FLOAT:
        return f"its CPU implementation builds a float output for them at {cpu.location}"
    return ""


def bool_output_reason(facts: OpFacts, body_output: str = "") -> str:
    """Why the op writes bool for every input ("" when nothing says so): the functor body's own
    output type (the catalog's `output = "bool"`), else an OpInfo's `always_returns_bool=True`."""

    if body_output == "bool":
        return f"the catalog's {facts.op} body writes bool for every input"
    cpu = facts.cpu_output
    if cpu.kind == BOOL:
        return f"its CPU meta function at {cpu.location} builds a bool output (a `_force_boolean_` builder)"
    ref = next((ref for ref in facts.refs if ref.kind != "python-ref" and ref.always_returns_bool), None)
    return f"its OpInfo at {ref.location} says always_returns_bool" if ref is not None else ""


def output_type(facts: OpFacts, body_output: str = "") -> str:
    """The Metal output type of every registration of the op's functor: `bool` where the body
    (the catalog's `output`) or the CPU meta function (`build_borrowing_unary_force_boolean_op`:
    signbit) says the op writes bool for every input, as 2.15 compiles such ops
    (`isposinf_dense_bool_float`: `<op>_dense_<out>_<in>`); else "" (as the dtype group says)."""

    if body_output:
        return body_output
    return "bool" if facts.cpu_output.kind == BOOL else ""


def refuse_uncalled_groups(facts: OpFacts, requested: tuple[str, ...] | None, body_output: str = "") -> str:
    """Refuse (exit 2, before anything is planned) a requested `--dtypes` group whose kernels the
    op never looks up, as its meta function (or the catalog) decides the output dtype: `int2float`
    (integer in, float out) for an op whose CPU meta function keeps the input dtype (an integer
    input looks up an integer-output kernel) or that writes bool. The hint is the request without
    that group.

    Where the checkout cannot say (no CPU .cpp to read, as in a wheel's files) and nothing else says
    integers give float (no OpInfo's `promotes_int_to_float`), the kernels may never be looked up:
    returns that warning with its reason ("" when there is nothing to say), for the plan's notes."""

    if not requested or "int2float" not in requested:
        return ""
    cpu = facts.cpu_output
    bool_reason = bool_output_reason(facts, body_output)
    rest = [g for g in requested if g != "int2float"]
    works = ",".join(rest) or "float"
    if bool_reason:
        why = f"{facts.op} writes bool for every input ({bool_reason})"
    elif int_to_float_reason(facts):
        return ""
    elif cpu.kind == SAME:
        why = (f"{facts.op} keeps the input dtype (its CPU meta function at {cpu.location} builds the iterator "
               f"without promoting integers), so an integer input looks up an integer-output kernel")
    else:
        opinfos = [ref for ref in facts.refs if ref.kind != "python-ref"]
        said = (f"its OpInfo at {opinfos[0].location} does not set promotes_int_to_float" if opinfos
                else "no OpInfo of it")
        reference = reference_dtypes_of(facts)
        if reference is not None and not reference & frozenset(TORCH_DTYPES["int2float"]):
            said += ", and its CPU reference takes no integer dtype"
        return (f"dtype group 'int2float' registers integer-in, float-out kernels that an integer input looks up "
                f"only if {facts.op}'s meta function promotes integers to float, and nothing here says it does "
                f"({said}; {cpu.why}): they may never be called (pass --dtypes {works} unless it promotes them)")
    raise MpsgenError(
        f"{why}: dtype group 'int2float' registers integer-in, float-out kernels that would never be called",
        location=facts.entries[0].location,
        hint=f"pass --dtypes {works}; nothing was written",
    )


def cpu_takes_complex(facts: OpFacts, defaults: tuple[str, ...]) -> bool:
    """The op's CPU kernel takes complex inputs: the body's default groups (the catalog's, what
    upstream registers) hold complex, or an OpInfo's CPU dtypes do. Complex kernels are then
    registered where the body serves them, tested on MPS or not (nan_to_num's OpInfo tests no
    complex; CPU and 2.14's MPS kernel take it)."""

    if "complex" in defaults:
        return True
    reference = reference_dtypes_of(facts)
    return bool(reference and reference & COMPLEX)


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
    promotes them to float (`promotes_int_to_float`: the OpInfo, else the CPU kernel) are refused as
    `integer` (integer output)."""

    covers = covers or torch_dtypes_for
    allowed = allowed or tuple(GROUPS)
    reason = int_to_float_reason(facts)
    promotes = bool(reason)
    exp = expectation(views, facts)
    requested = explicit is not None and not body.startswith("the existing ")  # --dtypes, not the file's own
    if requested and "integer" in explicit and promotes and "int2float" in allowed:
        proposal = ",".join(g for g in GROUPS if g in set(explicit) - {"integer"} | {"int2float"})
        raise MpsgenError(
            f"{facts.op}: integer inputs give float ({reason}); dtype group 'integer' would register "
            f"integer outputs for them",
            location=facts.entries[0].location,
            hint=f"pass --dtypes {proposal}",
        )
    if explicit is not None:
        groups = explicit
    elif minimal:
        wanted = exp.expected | covers(defaults)
        groups = groups_for_dtypes(wanted, supports, promotes, covers)
    elif exp.tested is None:
        groups = defaults
    else:
        groups = groups_for_dtypes(exp.tested, supports, promotes, covers) or defaults
        if "complex" in supports and "complex" not in groups and cpu_takes_complex(facts, defaults):
            groups = tuple(g for g in GROUPS if g in groups or g == "complex")
    lost = sorted(exp.expected - covers(groups) - served_by_shared_code(facts))
    if lost:
        where = exp.source or "the default float32/float16"
        needed = _proposal(groups, exp.expected - served_by_shared_code(facts), allowed, promotes, covers)
        need = ",".join(needed)
        if body == "the --expr body":  # what an expression serves is the user's to say
            what = f"an --expr registers float unless told: if {body} serves them, pass --dtypes {need}"
        elif set(needed) <= set(supports):
            what = f"{body} serves them too: pass --dtypes {need}"
        else:
            what = f"{body} cannot serve them: pass --expr with a body that does and --dtypes {need}"
        raise MpsgenError(
            f"{facts.op}: registering {', '.join(groups) or 'nothing'} would lose {', '.join(lost)}, which the "
            f"tests expect to work now (tested by the OpInfo at {where}; no xfail declares them failing)",
            location=facts.entries[0].location,
            hint=what,
        )
    return groups


# ------------------------------------------------------------------ "MPS lacks the op" reasons


# "The operator 'aten::heaviside.out' is not currently implemented for the MPS device" (with or
# without an error-class prefix, wrapped over comment lines), "`aten::logit_` is not supported on MPS"
_NOT_ON_MPS = r"\s+(?:is\s+|are\s+)?not\s+(?:currently\s+|yet\s+)?(?:implemented|supported)\s+(?:for|on|by|in)\s+(?:the\s+)?MPS\b"
_NAMED = re.compile(r"""[`'"]?aten::(?P<name>[A-Za-z_]\w*(?:\.\w+)?)[`'"]?""" + _NOT_ON_MPS, re.IGNORECASE)
# a quoted name without `aten::`: "`_upsample_bilinear2d_aa_backward_out` not implemented for MPS"
_QUOTED = re.compile(r"""[`'"](?P<name>[A-Za-z_]\w*(?:\.\w+)?)[`'"]""" + _NOT_ON_MPS, re.IGNORECASE)
# the same statement without naming the operator
_UNNAMED = re.compile(
    r"\bnot\s+(?:currently\s+|yet\s+)?(?:implemented|supported)\s+(?:for|on|by|in)\s+(?:the\s+)?MPS\b"
    r"|\bNotImplementedError\s+(?:for|on)\s+(?:the\s+)?MPS\b"
    r"|\black\s+of\b[^.]*?\bimplementation\b[^.]*?\bMPS\b"
    r"|\bno\s+MPS\s+implementation\b",
    re.IGNORECASE,
)
_ATEN = re.compile(r"aten::([A-Za-z_]\w*(?:\.\w+)?)")
# words that make a reason about something besides the missing operator
_OTHER_BEHAVIOUR = re.compile(
    r"precision|accura|\bnans?\b|mismatch|not equal|different dtypes|mixed|random|flaky|non-?determin|undefined"
    r"|toleran|not raised|AssertionError|downstream|complex|integ|\bbool\b|half|float|\bdtype",
    re.IGNORECASE,
)

# the out= behaviour test_out / test_out_warning check, which the shared out kernel (structured, or
# a `CPU, CUDA` one resizing with at::native::resize_output) provides: a device mismatch raised, a
# wrong-shaped out resized (with its warning)
_OUT_BEHAVIOUR = re.compile(
    r"\bout\.device\b|Resized\s+a\s+non-empty\s+tensor|did\s+not\s+warn"
    r"|attribute\s+'(?:shape|stride)'\s+do\s+not\s+match",
    re.IGNORECASE,
)
OUT_TESTS = frozenset({"test_out", "test_out_warning"})

# "TypeError: Trying to convert ComplexDouble to the MPS backend but it does not have support for that
# dtype", "MPS does not support float64": the backend cannot hold the dtype at all; no kernel fixes it
_BACKEND_DTYPE = re.compile(
    r"\bconvert\s+\w+\s+to\s+the\s+MPS\s+backend\b"
    r"|\bMPS\s+backend\b[^.]*?\bdoes\s+not\s+have\s+support\s+for\s+that\s+dtype\b"
    r"|\bMPS\b[^.]*?\b(?:does\s+not|doesn't|cannot)\s+(?:support|handle)\b[^.]*?\b(?:float64|double|complex128|ComplexDouble)\b"
    r"|\b(?:float64|double|complex128|ComplexDouble)\b[^.]*?\bnot\s+supported\s+(?:on|by|in)\s+(?:the\s+)?MPS\b",
    re.IGNORECASE,
)

# a reason about the numbers a dtype gives (closeness, precision, inf/NaN), which registering the dtype
# does not change: "Tensor-likes are not close! Greatest absolute difference: inf"
_NUMERICAL = re.compile(
    r"not\s+close|precision|accura|toleran|greatest\s+(?:absolute|relative)\s+difference|mismatch|\binf\b|\bnans?\b"
    r"|overflow|underflow|high\s+errors?",
    re.IGNORECASE,
)

# Reason kinds (`Reason.kind`)
BACKEND_DTYPE = "backend-dtype"  # the backend cannot hold or convert a dtype: stays whatever the kernel registers
MISSING_OP = "missing-op"  # MPS lacks the op (or an overload the change serves): the kernel fixes it
OUT_BEHAVIOUR = "out-behaviour"  # test_out's out= checks, failing in the separate MPS out kernel
OTHER_OP = "other-op"  # MPS lacks another operator, or an overload the change does not serve
AMBIGUOUS = "ambiguous"  # says MPS lacks something, but not clearly (only) this op
OTHER = "other"  # about some other behaviour
LEGACY_RAISE = "legacy-raise"  # an error the separate MPS kernel the change removes raises: goes with it
NO_REASON = "none"


@dataclass(frozen=True)
class Reason:
    """What a test expectation's stated reason (its comments, a skip's message) says."""

    kind: str
    quote: str = ""  # the reason as one line (comment markers dropped)
    operator: str = ""  # the operator it names (`heaviside.out`), "" when unnamed

    @property
    def fixed(self) -> bool:
        return self.kind == MISSING_OP

    def fixes_out(self, test_name: str) -> bool:
        """An expectation on `test_name` with this reason goes with a change moving the out= entry
        to the shared kernel: the reason is the out= behaviour test_out/test_out_warning check."""
        return (self.kind == OUT_BEHAVIOUR and test_name in OUT_TESTS) or self.kind == LEGACY_RAISE

    overload: bool = False  # OTHER_OP: the operator is an overload of the op the change does not serve

    @property
    def keeps_entry(self) -> bool:
        """A common_mps.py entry with this reason stays whatever the kernel registers: MPS lacks
        another operator (or an overload the change does not serve), or the backend's dtype support."""
        return self.kind in (OTHER_OP, BACKEND_DTYPE)

    @property
    def backend_dtype(self) -> bool:
        """The reason is the MPS backend's dtype support: a decorator with it stays."""
        return self.kind == BACKEND_DTYPE

    @property
    def legacy_raise(self) -> bool:
        """The reason is an error the removed separate MPS kernel raises: it goes with that kernel."""
        return self.kind == LEGACY_RAISE

    @property
    def numerical(self) -> bool:
        """The reason is about the numbers a dtype gives (not close, precision, inf/NaN), not a missing kernel."""
        return self.kind in (OTHER, AMBIGUOUS) and bool(_NUMERICAL.search(self.quote))

    def why_kept(self) -> str:
        """Why an expectation with this reason stays (OTHER_OP, AMBIGUOUS, OTHER, NO_REASON)."""
        if self.kind == OTHER_OP:
            if self.overload:
                what = f"aten::{self.operator}, an overload this change does not serve"
            else:
                what = f"aten::{self.operator}, another operator" if self.operator else "another operator"
            return f"its reason is that MPS lacks {what} ({self.quote!r})"
        if self.kind == AMBIGUOUS:
            return f"its reason says MPS lacks an operator but may be about more (dtypes, behaviour); check it by hand ({self.quote!r})"
        if self.kind == OUT_BEHAVIOUR:
            return f"its reason is the out= behaviour of test_out, not a missing operator ({self.quote!r})"
        if self.kind == OTHER:
            return f"its reason is other behaviour, not a missing operator ({self.quote!r})"
        if self.kind == BACKEND_DTYPE:
            return f"its reason is the MPS backend's dtype support, which no kernel changes ({self.quote!r})"
        return "no stated reason says MPS lacks the op"


def reason_text(lines: str) -> str:
    """Comment lines (or a skip's message) as one line: `#` markers and line breaks dropped."""
    parts = [ln.strip().lstrip("#").strip() for ln in lines.splitlines()]
    return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class MissingOpRule:
    """Test expectations fixed by a kernel because their reason is that MPS lacks the operator.

    `served`: the yaml entry names (`heaviside.out`, `heaviside`, `heaviside_`, `logit_`) MPS
    serves natively after the change; `bases`: the op's base names (to tell "an overload this change
    does not serve" from "another operator").

    Recognised: "[NotImplementedError: ][The operator ]'aten::<name>' is [not currently|not yet|not]
    implemented|supported for|on the MPS [device]" (the name quoted or not, wrapped over lines), the
    same with a quoted name without `aten::`. A reason that the backend cannot hold or convert a dtype
    ("Trying to convert ComplexDouble to the MPS backend", "MPS does not support float64") is
    `BACKEND_DTYPE`: the expectation stays, whatever the kernel registers. It is fixed when every operator the reason names is
    served and nothing else in it speaks of other behaviour (precision, NaN, dtypes, mismatches,
    random results, downstream functions, ...). Unnamed statements ("not implemented for MPS",
    "NotImplementedError for MPS device", "lack of op implementation on MPS") are ambiguous on an
    OpInfo decorator (kept with a note) and name the entry's own op in a common_mps.py list (`entry_is_op`).
    """

    served: frozenset[str]
    bases: frozenset[str]
    # the change moves an out= entry from a separate MPS kernel to the shared one: a reason that is
    # the out= behaviour test_out checks is then `OUT_BEHAVIOUR`, fixed for those tests (`fixes_out`)
    shared_out: bool = False
    # the errors the separate MPS kernels the change removes raise (`legacy_raises`): a reason quoting
    # one is that kernel's own behaviour (2.14's conj_physical test_out: "Expected self.is_complex() to
    # be true, but got false", its MPSGraph kernel's TORCH_CHECK), gone with it
    legacy_raises: tuple[str, ...] = ()

    def judge(self, lines: str, message: str = "", *, entry_is_op: bool = False) -> Reason:
        """The reason stated by comment `lines` and a skip's `message`."""
        said = reason_text(lines)
        text = " ".join(part for part in (said, message.strip()) if part)
        if not text:
            return Reason(NO_REASON)
        if message.strip() and (not said or any(p.search(message) for p in (_NAMED, _QUOTED, _UNNAMED))):
            said = message.strip()
        reason = self._judge(text, entry_is_op)
        return Reason(reason.kind, said, reason.operator, reason.overload)

    def _judge(self, text: str, entry_is_op: bool) -> Reason:
        if _BACKEND_DTYPE.search(text):
            return Reason(BACKEND_DTYPE, text)
        flat = " ".join(text.split())
        if any(raised in flat for raised in self.legacy_raises):
            return Reason(LEGACY_RAISE, text)
        named = [m.group("name") for pattern in (_NAMED, _QUOTED) for m in pattern.finditer(text)]
        if named:
            others = [n for n in named + _ATEN.findall(text) if n not in self.served]
            if others:
                return Reason(OTHER_OP, text, others[0], overload=self._overload(others[0]))
            rest = text
            for pattern in (_NAMED, _QUOTED):
                rest = pattern.sub(" ", rest)
            if _OTHER_BEHAVIOUR.search(rest):
                return Reason(AMBIGUOUS, text, named[0])
            return Reason(MISSING_OP, text, named[0])
        if _UNNAMED.search(text):
            others = [n for n in _ATEN.findall(text) if n not in self.served]
            if others or "downstream" in text.lower():
                name = others[0] if others else ""
                return Reason(OTHER_OP, text, name, overload=bool(name) and self._overload(name))
            if entry_is_op and not _OTHER_BEHAVIOUR.search(_UNNAMED.sub(" ", text)):
                return Reason(MISSING_OP, text)
            return Reason(AMBIGUOUS, text)
        others = [n for n in _ATEN.findall(text) if n not in self.served]
        if others or "downstream" in text.lower():  # waits on another operator
            name = others[0] if others else ""
            return Reason(OTHER_OP, text, name, overload=bool(name) and self._overload(name))
        if self.shared_out and _OUT_BEHAVIOUR.search(text):
            return Reason(OUT_BEHAVIOUR, text)
        return Reason(OTHER, text)

    def _overload(self, name: str) -> bool:
        return name.partition(".")[0] in self.bases or name.partition(".")[0].rstrip("_") in self.bases


def reference_of_ref(facts: OpFacts):
    """ref -> the dtypes its CPU reference supports (a python ref: those of the OpInfo its
    `torch_opinfo_name` names); None when unreadable."""

    by_name = {ref.name: reference_dtypes(ref) for ref in facts.refs if ref.kind != "python-ref"}

    def reference(ref) -> frozenset[str] | None:
        return by_name.get(ref.torch_opinfo_name or "") if ref.kind == "python-ref" else reference_dtypes(ref)

    return reference


def reference_dtypes_of(facts: OpFacts) -> frozenset[str] | None:
    """The dtypes the op's CPU reference supports, over its OpInfos; None when one is unreadable."""

    found: frozenset[str] = frozenset()
    for ref in facts.refs:
        if ref.kind == "python-ref":
            continue
        dtypes = reference_dtypes(ref)
        if dtypes is None:
            return None
        found |= dtypes
    return found or None


def tested_of_ref(facts: OpFacts):
    """ref -> the dtypes MPS runs for it (a python ref: those of the OpInfo its `torch_opinfo_name`
    names); None when unreadable. Gradients only (floating, complex) for a `*_backward` op."""

    by_name: dict[str, frozenset[str] | None] = {}
    for ref in facts.refs:
        if ref.kind != "python-ref":  # variants of one name: all of their dtypes (None when one is unreadable)
            found, known = tested_dtypes(ref), by_name.get(ref.name, frozenset())
            by_name[ref.name] = None if found is None or known is None else known | found

    def tested(ref) -> frozenset[str] | None:
        found = by_name.get(ref.torch_opinfo_name or "") if ref.kind == "python-ref" else tested_dtypes(ref)
        if found is not None and facts.backward:
            found = found & (FLOATS | COMPLEX)
        return found

    return tested


def served_overloads(facts: OpFacts, *, after_change: bool) -> frozenset[str]:
    """The op's yaml entries MPS serves through the shared kernel: those whose shared line names MPS
    (`after_change`: every shared line, as new-op/migrate add MPS to each) and those delegating to them."""
    joined = {(site.entry.name, site.line.kernel) for site in facts.shared if "MPS" in site.line.keys}
    direct = {site.entry.name for site in facts.shared
              if after_change or (site.entry.name, site.line.kernel) in joined}
    return frozenset(direct | {e.name for e in facts.entries if (e.structured_delegate or "") in direct})


def moves_out_to_shared_kernel(facts: OpFacts) -> bool:
    """The op has an out= entry (`Tensor(a!) out` in its schema) served on MPS by a separate
    `MPS: x_mps` kernel and a shared `CPU, CUDA` kernel the change gives MPS."""
    legacy = {site.entry.name for site in facts.legacy}
    shared = {site.entry.name for site in facts.shared}
    return any(e.name in legacy and e.name in shared and re.search(r"!\)\s+out\b", e.schema) for e in facts.entries)


def missing_op_rule(facts: OpFacts, *, after_change: bool, legacy_raises: tuple[str, ...] = ()) -> MissingOpRule:
    return MissingOpRule(served_overloads(facts, after_change=after_change), frozenset(e.base for e in facts.entries),
                         shared_out=after_change and moves_out_to_shared_kernel(facts),
                         legacy_raises=legacy_raises if after_change else ())


_TORCH_CHECK = re.compile(r"\bTORCH_CHECK\s*\(")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def raised_messages(code: str) -> tuple[str, ...]:
    """The error texts `code`'s `TORCH_CHECK(cond, ...)` calls raise: the first string literal of the
    message arguments, or with none c10's own `Expected <cond> to be true, but got false` (whitespace
    collapsed). Messages shorter than 12 characters are left out (too common to tell a kernel by)."""
    masked = mask_code(code)
    out: list[str] = []
    for m in _TORCH_CHECK.finditer(masked):
        close = match_brace(masked, m.end() - 1)
        if close < 0:
            continue
        args, flat = code[m.end():close], masked[m.end():close]
        depth, cut = 0, len(args)
        for i, ch in enumerate(flat):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == "," and depth == 0:
                cut = i
                break
        cond, rest = args[:cut], args[cut + 1:]
        literal = _STRING.search(rest)
        message = literal.group(1) if literal else f"Expected {' '.join(cond.split())} to be true, but got false"
        message = " ".join(message.split()).rstrip(" .:")
        if len(message) >= 12:
            out.append(message)
    return tuple(dict.fromkeys(out))
