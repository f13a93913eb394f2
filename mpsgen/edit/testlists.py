"""The edits of `common_mps.py`'s expectation lists, given the verdicts of the rules."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.pylists import (
    Element,
    element_lines,
    removal_spans,
    string_quote,
)
from mpsgen.read.testlists import (
    ALL_MPS_DTYPES,
    XfailDict,
    complex_list,
    XfailEntry,
    canonical_dtype,
    dtype_order,
    parse_testlists,
    string_value,
    torch_dtype_of,
    xfail_dicts,
)
from mpsgen.textedit import newline_of, replace_spans

_ELSEWHERE = re.compile(r"precision|accura|random|undefined|non-?determin|flaky", re.IGNORECASE)


ACTIONS = ("removed-dtypes", "removed-entry", "listed-dtypes", "kept", "added-complex", "removed-complex",
           "removed-decorator")


@dataclass(frozen=True)
class TestListChange:
    """One report item: what happened to one key in one dict (or OpInfo argument), and why."""

    __test__ = False  # not a pytest class

    action: str
    key: str
    dict_name: str
    location: Location
    detail: str
    missing_op: str = ""  # the stated reason, when it is that MPS lacks the op (`mpsgen.facts.rules.MissingOpRule`)

    def __str__(self) -> str:
        return f"{self.location}: {self.action}: {self.dict_name}[{self.key!r}]: {self.detail}"


def _fmt(dtypes) -> str:
    return "[" + ", ".join(f"torch.{d}" for d in dtypes) + "]"


def _decide(
    table: XfailDict,
    entry: XfailEntry,
    covered: frozenset[str],
    drop_undefined: bool,
    tested: frozenset[str] | None,
    wanted_section: str,
    reason=None,
) -> tuple[str, str, tuple[str, ...]]:
    """(action, why, dtypes to remove). `reason`: the entry's stated reason judged by
    `mpsgen.facts.rules.MissingOpRule` (None: not read). One that MPS lacks another operator (or an
    overload the change does not serve) keeps the entry; the others leave the rules below to decide."""
    if "SPARSE" in table.name.upper():
        return "kept", f"{table.name} is about sparse tensors; a dense Metal kernel does not change it", ()
    if table.section != wanted_section:
        what = {"grad": "a gradient list", "forward": "a forward list", "error-inputs": "an error-inputs list"}
        return "kept", f"{what[table.section]}; a {wanted_section} kernel does not change it", ()
    if reason is not None and reason.keeps_entry:
        return "kept", reason.why_kept(), ()
    if not drop_undefined:
        if table.about_something_else:
            return "kept", f"{table.name} is about undefined/precision behaviour, not a missing kernel (drop_undefined=True removes it)", ()
        if _ELSEWHERE.search(entry.comment):
            first = next(ln for ln in entry.comment.splitlines() if _ELSEWHERE.search(ln))
            return "kept", f"its comment is about precision/randomness ({first!r}); drop_undefined=True removes it", ()
    if entry.dtypes is None:
        needed = tested if tested is not None else ALL_MPS_DTYPES
        source = "the OpInfo's MPS dtypes" if tested is not None else "all dtypes (float, integer, complex64)"
        missing = tuple(d for d in dtype_order(needed - covered))
        if not missing:
            return "removed-entry", f"None ({source}) is now covered by the kernel", ()
        if tested is not None and needed & covered:
            return "listed-dtypes", f"None -> {_fmt(missing)}: the tested dtypes the kernel does not register", missing
        return "kept", f"None means {source}; the kernel does not register {', '.join(missing)}", ()
    gone = tuple(d for d in entry.dtypes if canonical_dtype(d) in covered)
    left = tuple(d for d in entry.dtypes if canonical_dtype(d) not in covered)
    if not gone:
        return "kept", f"{_fmt(entry.dtypes)}: none of these is registered by the kernel", ()
    if not left:
        return "removed-entry", f"every listed dtype is now covered: {_fmt(entry.dtypes)}", gone
    return "removed-dtypes", f"removed {_fmt(gone)}, kept {_fmt(left)} (not registered by the kernel)", gone


def plan_testlist_edits(
    text: str,
    path: str,
    keys: tuple[str, ...],
    covered: frozenset[str],
    complex_supported: bool,
    drop_undefined: bool = False,
    *,
    tested_dtypes: Mapping[str, frozenset[str]] | None = None,
    backward: bool = False,
    parsed=None,
    reasons=None,
    complex_untested: Mapping[str, str] | None = None,
) -> tuple[str, tuple[TestListChange, ...]]:
    """The new text of common_mps.py and the report, for a kernel registering the torch dtypes
    `covered` (`mpsgen.dtypes.torch_dtypes_for(groups)`) that serves the OpInfo keys `keys`.
    `parsed`: `parse_testlists(text, path)` when the caller has it. `reasons`: a
    `mpsgen.facts.rules.MissingOpRule` judging each entry's comment (None: comments decide as below only).
    `complex_untested`: key -> why a list of the ops whose complex tests pass does not take it
    (`mpsgen.facts.rules.complex_untested`: its OpInfo tests no complex dtype), reported as kept."""
    found, index, collector = parsed or parse_testlists(text, path)
    covered = frozenset(canonical_dtype(d) for d in covered)
    wanted_section = "grad" if backward else "forward"
    spans: list[tuple[int, int, str]] = []
    changes: list[TestListChange] = []
    wanted = set(keys)
    # only dicts holding one of the keys need their entries (and comment groups) read
    holding = [c for c in found if isinstance(c.node, ast.Dict) and any(string_value(k) in wanted for k in c.node.keys)]
    for table in xfail_dicts(text, path, holding, index, collector):
        container = next(c for c in found if c.span == table.span)
        remove_flags = [False] * len(table.entries)
        for i, entry in enumerate(table.entries):
            if entry.key not in keys:
                continue
            tested = tested_dtypes.get(entry.key) if tested_dtypes else None
            reason = reasons.judge(entry.comment, entry_is_op=True) if reasons is not None else None
            action, why, gone = _decide(table, entry, covered, drop_undefined, tested, wanted_section, reason)
            missing_op = ""
            if reason is not None and reason.fixed and action != "kept":
                missing_op = reason.quote
                why = f"{why} (its comment says MPS lacks the op: {reason.quote!r})"
            changes.append(TestListChange(action, entry.key, table.name, entry.location, why, missing_op))
            if action == "removed-entry":
                remove_flags[i] = True
            elif action == "removed-dtypes":
                value = container.node.values[i]  # type: ignore[union-attr]
                spans.extend(_list_removal(text, index, collector, value, gone))
            elif action == "listed-dtypes":
                value = container.node.values[i]  # type: ignore[union-attr]
                spans.append((*collector.span(value), _fmt(gone)))
        elements = [Element(*e.span) for e in table.entries]
        spans.extend(removal_spans(text, elements, remove_flags, table.span[1] - 1, index))
    listed = complex_list((found, index, collector)) if complex_supported else None
    for container in found:
        if listed is None or not isinstance(container.node, ast.Set) or container.name != listed.name:
            continue
        if listed.supported:
            # a key whose OpInfo tests no complex dtype is not added: the entry would change no test
            # (a stale key of 2.15's list of failing ones still goes below: its claim is untrue)
            untested = complex_untested or {}
            at = Location(path, index.line_of(container.span[0]))
            present = {string_value(el) for el in container.node.elts}
            for key in keys:
                if key in untested and key not in present:
                    changes.append(TestListChange("kept", key, container.name, at, f"not added: {untested[key]}"))
            for key in (k for k in keys if k not in untested):
                edit = _complex_insertion(text, path, index, collector, container, key)
                if edit is not None:
                    spans.append(edit[0])
                    changes.append(TestListChange("added-complex", key, container.name, edit[1], edit[2]))
        else:
            spans.extend(_complex_removal(text, path, index, collector, container, keys, changes))
    return replace_spans(text, spans), tuple(changes)


def _list_removal(text, index, collector, value, gone) -> list[tuple[int, int, str]]:
    names = [torch_dtype_of(el) for el in value.elts]
    elements = [Element(*collector.span(el)) for el in value.elts]
    remove = [name in gone for name in names]
    close = collector.span(value)[1] - 1
    return removal_spans(text, elements, remove, close, index)


def _complex_removal(text, path, index, collector, container, keys, changes) -> list[tuple[int, int, str]]:
    """Span edits taking `keys` out of a list of the ops whose complex tests fail (reported in `changes`)."""
    node = container.node
    values = [string_value(el) for el in node.elts]
    remove = [value in keys for value in values]
    for value, element in zip(values, node.elts):
        if value in keys:
            at = collector.span(element)[0]
            changes.append(TestListChange("removed-complex", value, container.name, Location(path, index.line_of(at)),
                                          f"removed {value!r}: the kernel registers complex, its complex tests pass"))
    elements = [Element(*collector.span(el)) for el in node.elts]
    return removal_spans(text, elements, remove, container.span[1] - 1, index)


def _complex_insertion(text, path, index, collector, container, key):
    """(span edit, location, detail) adding `key` to a set of strings, or None when it is there."""
    node = container.node
    values = [string_value(el) for el in node.elts]
    if key in values:
        return None
    spans = [collector.span(el) for el in node.elts]
    close = container.span[1] - 1
    sorted_set = values == sorted(values)
    quote = string_quote(collector.spans.source(node.elts[0])) if node.elts else '"'
    literal = f"{quote}{key}{quote}"
    where = "sorted position" if sorted_set else "end (the set is not sorted)"
    detail = f"added {literal} at the {where}"
    if not spans:
        return (close, close, literal), Location(path, index.line_of(close)), detail
    before = next((i for i, v in enumerate(values) if v > key), None) if sorted_set else None
    owned = element_lines(text, index, [Element(*s) for s in spans], close)
    nl = newline_of(text)
    if owned is not None:
        indent = text[index.start_of(owned[0].first_line) : spans[0][0]]
        if before is not None:
            line = owned[before].comment_first or owned[before].first_line
            at = index.start_of(line)
            return (at, at, f"{indent}{literal},{nl}"), Location(path, line), detail
        last = owned[-1]
        after_last = text[spans[-1][1] : index.end_of(last.last_line)]
        if after_last.lstrip().startswith(","):
            at = index.end_of(last.last_line)
            return (at, at, f"{indent}{literal},{nl}"), Location(path, last.last_line + 1), detail
    if before is not None:
        at = spans[before][0]
        return (at, at, f"{literal}, "), Location(path, index.line_of(at)), detail
    at = spans[-1][1]
    return (at, at, f", {literal}"), Location(path, index.line_of(at)), detail
