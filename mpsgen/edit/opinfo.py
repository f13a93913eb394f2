"""The edits of the OpInfo decorators in `common_methods_invocations.py`, given the verdicts of the rules."""

from __future__ import annotations

import ast

from mpsgen.edit.testlists import TestListChange
from mpsgen.model import Location
from mpsgen.read.opinfo import (
    FAILURE_DECORATORS,
    MPS_ONLY_DECORATORS,
    NOT_ON_MPS,
    OPENING,
    TOLERANCE_DECORATORS,
    OpInfoRef,
    callee_name,
    evaluate_dtypes,
    parse_call,
    skip_message,
    string_constant,
    syntactic_span,
)
from mpsgen.read.pylists import (
    Element,
    governing_comments,
    match_bracket,
    removal_spans,
    whole_lines_span,
)
from mpsgen.read.testlists import canonical_dtype
from mpsgen.textedit import LineIndex, replace_spans


def _classify(element: ast.expr, covered: frozenset[str], reason=None, tested: frozenset[str] | None = None,
              reference: frozenset[str] | None = None, python_ref: bool = False) -> tuple[str | None, str, str]:
    """(verdict, why, the reason's text when the verdict is that MPS lacks the op). `reason(message)`
    judges the element's stated reason (its comments plus `message`, a skip's text) by
    `mpsgen.facts.rules.MissingOpRule`; `tested`: the dtypes the OpInfo runs on MPS (None: unreadable);
    `reference`: the dtypes its CPU reference supports (None: unreadable, no limit); `python_ref`: the
    element belongs to a python reference (`_refs.*`), whose dtype expectations go only for a stated
    reason that MPS lacks the op. A dtype expectation whose reason is the backend's dtype support or the
    numbers the dtype gives stays."""
    callee = callee_name(element)
    if callee != "DecorateInfo":
        if callee in MPS_ONLY_DECORATORS:
            return "kept", f"{callee} applies to every test of the OpInfo; not tied to dtype coverage", ""
        return None, "", ""
    assert isinstance(element, ast.Call)
    positional = list(element.args)
    kw = {arg.arg: arg.value for arg in element.keywords if arg.arg is not None}
    decorator = positional[0] if positional else kw.get("decorators")
    slots = ("cls_name", "test_name", "device_type", "dtypes")
    for slot, value in zip(slots, positional[1:]):
        kw.setdefault(slot, value)
    what = callee_name(decorator) if decorator is not None else ""
    device = string_constant(kw.get("device_type"))
    if device != "mps" and what not in MPS_ONLY_DECORATORS:
        return None, "", ""
    cls_name = string_constant(kw.get("cls_name")) or ""
    test_name = string_constant(kw.get("test_name")) or ""
    target = ".".join(part for part in (cls_name, test_name) if part) or "every test"
    if what in TOLERANCE_DECORATORS:
        return "kept", f"{what} for {target} is a tolerance, not a failure", ""
    if what not in FAILURE_DECORATORS:
        return "kept", f"{what or 'decorator'} for {target} is not an expected failure or skip", ""
    kind = "skip" if "skip" in what.lower() else "expected failure"
    if "dtypes" in kw:
        dtypes = evaluate_dtypes(kw["dtypes"])
        if dtypes is None:
            return "kept", f"{kind} for {target}: dtypes are not statically readable", ""
        relevant = dtypes - NOT_ON_MPS
        beyond_cpu = sorted(relevant - reference) if reference is not None else []
        if relevant and beyond_cpu:
            return "kept", (f"{kind} for {target}: the CPU reference does not support {', '.join(beyond_cpu)}, "
                            "so the test keeps failing whatever the kernel registers"), ""
        missing = sorted(relevant - covered)
        stated = reason(skip_message(decorator)) if reason is not None and relevant and not missing else None
        if stated is not None and stated.backend_dtype:
            return "kept", f"{kind} for {target}: {stated.why_kept()}", ""
        if stated is not None and stated.numerical:
            return "kept", (f"{kind} for {target}: its reason is the numbers the dtype gives ({stated.quote!r}), "
                            "which registering it does not change"), ""
        if python_ref and stated is not None and not stated.fixed:
            return "kept", (f"{kind} for {target} of a python reference on {', '.join(sorted(relevant))}: with no "
                            "stated reason that MPS lacks the op, it is about the reference, not the kernel"), ""
        if relevant and not missing and cls_name not in ("", "TestConsistency"):
            # another class's test (TestCommon.test_out, ...) fails for a reason of its own, which a
            # kernel fixes only when the reason is that MPS lacks the op (nansum's float32 test_out
            # expected failure stays beside its native kernel)
            why = reason(skip_message(decorator)) if reason is not None else None
            if why is None or not (why.fixed or why.fixes_out(test_name)):
                return "kept", f"{kind} for {target} on {', '.join(sorted(relevant))} is about behaviour, not dtype coverage", ""
        if relevant and not missing:
            return "removed-decorator", f"{kind} for {target} on {', '.join(sorted(relevant))}: now registered", ""
        return "kept", f"{kind} for {target}: the kernel does not register {', '.join(missing or sorted(dtypes))}", ""
    if cls_name == "TestConsistency":
        return "removed-decorator", f"{kind} for {target}: the Metal kernel replaces the implementation under test", ""
    if reason is None:
        return "kept", f"{kind} for {target} is about behaviour, not dtype coverage", ""
    why = reason(skip_message(decorator))
    out_fixed = why.fixes_out(test_name)
    if not why.fixed and not out_fixed:
        return "kept", f"{kind} for {target}: {why.why_kept()}", ""
    if tested is None:
        return ("kept", f"{kind} for {target}: its reason is that MPS lacks the op ({why.quote!r}), but the dtypes "
                "the OpInfo tests cannot be read statically: remove it by hand once the kernel serves them all", "")
    unserved = sorted(tested - NOT_ON_MPS - covered)
    if unserved:
        return ("kept", f"{kind} for {target}: its reason is that MPS lacks the op ({why.quote!r}), but the kernel does "
                f"not register {', '.join(unserved)}: those would still fail (narrow it with dtypes=)", "")
    if out_fixed and why.legacy_raise:
        return ("removed-decorator", f"{kind} for {target}: its reason is an error the removed MPS kernel raises "
                f"({why.quote!r}), which goes with it", "")
    if out_fixed:
        return ("removed-decorator", f"{kind} for {target}: its reason is the out= behaviour ({why.quote!r}), which the "
                "shared out kernel now serving MPS provides", "")
    return "removed-decorator", f"{kind} for {target}: its reason is that MPS lacks the op ({why.quote!r}); the kernel adds it", why.quote


def plan_opinfo_edits(
    text: str, path: str, refs: tuple[OpInfoRef, ...], covered: frozenset[str], lines: LineIndex | None = None,
    *, reasons=None, tested=None, reference=None,
) -> tuple[str, tuple[TestListChange, ...]]:
    """The new text with the refs' MPS failures that a kernel registering `covered` fixes removed.
    `dtypesIfMPS=` is never touched: what MPS tests stays tested, and what still fails is stated
    in common_mps.py. `reasons`: a `mpsgen.facts.rules.MissingOpRule` (decorators whose stated reason is
    that MPS lacks the op go when the kernel serves every dtype `tested(ref)` says the OpInfo runs);
    None leaves such decorators alone. `reference(ref)`: the dtypes its CPU reference supports (a
    decorator naming a dtype outside them stays: the comparison with CPU keeps failing)."""
    covered = frozenset(canonical_dtype(d) for d in covered)
    spans: list[tuple[int, int, str]] = []
    changes: list[TestListChange] = []
    index: LineIndex | None = lines
    for ref in refs:
        call, nodes = parse_call(text, path, *ref.span, ref.location.line)
        first_line = ref.location.line

        def span_of(node: ast.AST) -> tuple[int, int]:
            return syntactic_span(node, nodes) if isinstance(node, ast.expr) else nodes.span(node)

        def line_of(node: ast.expr) -> int:
            return first_line + node.lineno - 1

        if index is None:
            index = LineIndex(text)
        for arg in call.keywords:
            keyword = arg.arg
            if keyword in ("skips", "decorators") and isinstance(arg.value, (ast.Tuple, ast.List)):
                elements = list(arg.value.elts)
                ref_tested = tested(ref) if tested is not None else None
                ref_cpu = reference(ref) if reference is not None else None
                verdicts = [_classify(el, covered, _judge(reasons, text, index, elements, i, span_of, nodes.span(arg.value)[1] - 1),
                                      ref_tested, ref_cpu, ref.kind == "python-ref") for i, el in enumerate(elements)]
                remove = [verdict == "removed-decorator" for verdict, _, _ in verdicts]
                for el, (verdict, detail, reason) in zip(elements, verdicts):
                    if verdict is not None:
                        changes.append(TestListChange(verdict, ref.key, keyword, Location(path, line_of(el)), detail, reason))
                if remove and all(remove):
                    whole = whole_lines_span(text, *span_of(arg), index)
                    if whole is not None:
                        spans.append((whole[0], whole[1], ""))
                        continue
                    # the argument shares a line with the call's end: leave an empty container
                    opening = OPENING.search(text, span_of(arg)[0])
                    if opening is not None and opening.start() < span_of(arg.value)[0]:
                        closing = match_bracket(text, opening.start())
                        if closing > 0:
                            spans.append((opening.start(), closing, "()" if opening.group() == "(" else "[]"))
                            continue
                close = len(text)  # a Tuple's position leaves out its parentheses; commas stop the scan anyway
                parts = [Element(*span_of(el)) for el in elements]
                spans.extend(removal_spans(text, parts, remove, close, index))
    return replace_spans(text, spans), tuple(changes)


def _judge(reasons, text: str, index: LineIndex, elements: list, i: int, span_of, close: int):
    """`reason(message)` for element `i` of a skips/decorators container (None without a rule): its
    governing comments plus `message` judged by `reasons`. Comments are read only when asked for."""
    if reasons is None:
        return None

    def reason(message: str):
        parts = [Element(*span_of(el)) for el in elements]
        return reasons.judge(governing_comments(text, index, parts, close)[i], message)

    return reason
