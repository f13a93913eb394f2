"""`torch/testing/_internal/common_mps.py`: the MPS xfail/skip dicts and `SUPPORTED_COMPLEX_OPS`.

Dicts are found by shape, not by name: any dict literal assigned to a name whose values are all
`None` or lists/tuples of `torch.<dtype>`, wherever it sits (function bodies, `if` branches). The
stdlib `ast` parser locates them (C: ~0.02 s for the real file, where libcst took ~0.5 s plus its
import); edits are span replacements, so everything else stays byte-identical.

Rules (the issue leaves these to us):
- A list value loses the dtypes the kernel registers (aliases such as `torch.half` count); the entry
  goes when nothing is left. Dtypes MPS never tests (float64, complex128) never count as "left" only
  if they are absent; a list holding them keeps them and the entry stays.
- A `None` value means "every dtype the OpInfo tests": the entry goes when the kernel covers the
  OpInfo's MPS-tested dtypes (`tested_dtypes[key]`, from `opinfo.tested_dtypes`), or, when those are
  unknown, float + integer + complex64 (`ALL_MPS_DTYPES`). When the kernel covers only some of the
  tested dtypes, `None` becomes the explicit list of the others: what still fails is stated.
- Entries of dicts about something other than a missing kernel are reported, never edited, unless
  `drop_undefined=True`: dicts named `*UNDEFINED*`, and entries whose comment (the comment block
  heading their group, or their own trailing comment) speaks of precision, accuracy, randomness,
  undefined behaviour or flakiness.
- An entry whose comment says MPS lacks another operator (or an overload the change does not serve,
  or a "downstream" function) stays (`mpsgen.rules.MissingOpRule`, passed as `reasons`); one whose
  comment says MPS lacks the op follows the rules above, and its report carries the reason.
- Forward kernels edit the dicts of forward modifiers; `backward=True` (a `*_backward` kernel) edits
  the dicts of functions whose name mentions `grad` instead. Error-input lists are never edited.
- A comment block directly above removed entries goes only when every entry of the group it heads
  goes (a group runs until the next comment block or blank line).
- `SUPPORTED_COMPLEX_OPS` gains the key in sorted position when the set is sorted, else at its end.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass


from mpsgen.dtypes import TORCH_DTYPE_ALIASES, TORCH_DTYPES
from mpsgen.model import Location
from mpsgen.pylists import (
    Element,
    NodeSpans,
    element_lines,
    governing_comments,
    is_plain_string,
    parse_python,
    removal_spans,
    string_quote,
)
from mpsgen.textedit import LineIndex, newline_of, replace_spans

ALL_MPS_DTYPES = frozenset(TORCH_DTYPES["float"] + TORCH_DTYPES["integer"] + ("complex64",))
COMPLEX_SET_NAME = "SUPPORTED_COMPLEX_OPS"
_ELSEWHERE = re.compile(r"precision|accura|random|undefined|non-?determin|flaky", re.IGNORECASE)

ACTIONS = ("removed-dtypes", "removed-entry", "listed-dtypes", "kept", "added-complex", "removed-decorator")
# The order dtypes are written in when mpsgen writes a list.
DTYPE_ORDER = ("float32", "float16", "bfloat16", "int64", "int32", "int16", "uint8", "int8", "bool", "complex64", "complex32")


def dtype_order(dtypes) -> list[str]:
    return [d for d in DTYPE_ORDER if d in dtypes] + sorted(set(dtypes) - set(DTYPE_ORDER))


@dataclass(frozen=True)
class TestListChange:
    """One report item: what happened to one key in one dict (or OpInfo argument), and why."""

    __test__ = False  # not a pytest class

    action: str
    key: str
    dict_name: str
    location: Location
    detail: str
    missing_op: str = ""  # the stated reason, when it is that MPS lacks the op (`mpsgen.rules.MissingOpRule`)

    def __str__(self) -> str:
        return f"{self.location}: {self.action}: {self.dict_name}[{self.key!r}]: {self.detail}"


def canonical_dtype(name: str) -> str:
    """`half` -> `float16`; names without an alias come back unchanged."""
    return TORCH_DTYPE_ALIASES.get(name, name)


@dataclass(frozen=True)
class XfailEntry:
    key: str
    dtypes: tuple[str, ...] | None  # as written after `torch.`; None for a `None` value
    location: Location
    span: tuple[int, int]  # the `"key": value` text
    comment: str  # the comments that govern the entry (group heading + its own)


def section_of(function: str) -> str:
    """Which tests a dict inside `function` is about: `mps_ops_error_inputs_modifier` -> error-inputs,
    `mps_ops_grad_modifier` -> grad, anything else -> forward."""
    if "error" in function:
        return "error-inputs"
    if "grad" in function:
        return "grad"
    return "forward"


@dataclass(frozen=True)
class XfailDict:
    name: str
    function: str  # innermost enclosing function, "" at module level
    location: Location
    entries: tuple[XfailEntry, ...]
    span: tuple[int, int]  # the dict literal, braces included

    @property
    def section(self) -> str:
        return section_of(self.function)

    @property
    def about_something_else(self) -> bool:
        return "UNDEFINED" in self.name.upper()


@dataclass(frozen=True)
class _Container:
    name: str
    function: str
    node: ast.Dict | ast.Set
    span: tuple[int, int]


def _torch_dtype(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return node.attr
    return None


def _dtype_value(node: ast.expr) -> tuple[str, ...] | None | bool:
    """The dtypes of a dict value: a tuple of names, None for `None`, False when not a dtype list."""
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        names = [_torch_dtype(el) for el in node.elts]
        if all(names):
            return tuple(names)  # type: ignore[arg-type]
    return False


def _is_xfail_dict(node: ast.expr, spans: NodeSpans) -> bool:
    if not isinstance(node, ast.Dict) or not node.keys:
        return False
    for key, value in zip(node.keys, node.values):
        if key is None or not is_plain_string(key, spans):
            return False
        if _dtype_value(value) is False:
            return False
    return True


def _is_string_set(node: ast.expr, spans: NodeSpans) -> bool:
    return isinstance(node, ast.Set) and all(is_plain_string(el, spans) for el in node.elts)


class _Collector(ast.NodeVisitor):
    """Every dict/set literal assigned to a name, with its innermost enclosing function."""

    def __init__(self, spans: NodeSpans):
        self.spans = spans
        self.functions: list[str] = []
        self.found: list[_Container] = []

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.spans.span(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _assigned(self, target: ast.expr, value: ast.expr | None) -> None:
        if not isinstance(target, ast.Name) or value is None:
            return
        if _is_xfail_dict(value, self.spans) or (target.id == COMPLEX_SET_NAME and _is_string_set(value, self.spans)):
            function = self.functions[-1] if self.functions else ""
            self.found.append(_Container(target.id, function, value, self.span(value)))  # type: ignore[arg-type]

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._assigned(node.targets[0], node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target, node.value)

    # statements never sit inside expressions: no need to walk them
    def visit_Expr(self, node: ast.Expr) -> None:
        pass


def parse_testlists(text: str, path: str) -> tuple[list[_Container], LineIndex, _Collector]:
    """The dict and set literals of common_mps.py that mpsgen reads (parsed once per text)."""
    module = parse_python(text, path)
    index = LineIndex(text)
    collector = _Collector(NodeSpans(text, index))
    collector.visit(module)
    return collector.found, index, collector


def _string_value(node: ast.Constant) -> str:
    value = node.value
    return value if isinstance(value, str) else value.decode()


def _entries(text: str, path: str, index: LineIndex, collector: _Collector, found: _Container) -> tuple[XfailEntry, ...]:
    node = found.node
    elements = [Element(collector.span(k)[0], collector.span(v)[1]) for k, v in zip(node.keys, node.values)]  # type: ignore[union-attr]
    comments = governing_comments(text, index, elements, found.span[1] - 1)
    entries = []
    for key, value_node, element, comment in zip(node.keys, node.values, elements, comments):  # type: ignore[union-attr]
        value = _dtype_value(value_node)
        entries.append(
            XfailEntry(
                key=_string_value(key),  # type: ignore[arg-type]
                dtypes=value,  # type: ignore[arg-type]
                location=Location(path, index.line_of(element.start)),
                span=(element.start, element.end),
                comment=comment,
            )
        )
    return tuple(entries)


def find_xfail_dicts(text: str, path: str, parsed=None) -> tuple[XfailDict, ...]:
    """Every dict literal shaped like an xfail/skip list (key -> dtype list or None), in file order.
    `parsed`: `parse_testlists(text, path)` when the caller has it."""
    found, index, collector = parsed or parse_testlists(text, path)
    return tuple(_xfail_dicts(text, path, found, index, collector))


def declared_dtypes(parsed, keys) -> tuple[tuple[str, str, tuple[str, ...] | None], ...]:
    """(section, key, dtypes or None) of every xfail/skip entry of `keys` (`parsed`:
    `parse_testlists(...)`): what the rules need of the lists, without reading their comments."""
    found, _index, _collector = parsed
    wanted = set(keys)
    out = []
    for container in found:
        node = container.node
        if not isinstance(node, ast.Dict):
            continue
        section = section_of(container.function)
        for key, value in zip(node.keys, node.values):
            if key is not None and _string_value(key) in wanted:  # type: ignore[arg-type]
                out.append((section, _string_value(key), _dtype_value(value)))  # type: ignore[arg-type]
    return tuple(out)


def complex_set_keys(parsed) -> frozenset[str]:
    """The keys of `SUPPORTED_COMPLEX_OPS` (`parsed`: `parse_testlists(...)`)."""
    found, _index, _collector = parsed
    return frozenset(
        _string_value(el) for c in found if isinstance(c.node, ast.Set) for el in c.node.elts  # type: ignore[arg-type]
    )


def _xfail_dicts(text, path, found, index, collector):
    for item in found:
        if isinstance(item.node, ast.Dict):
            yield XfailDict(
                name=item.name,
                function=item.function,
                location=Location(path, index.line_of(item.span[0])),
                entries=_entries(text, path, index, collector, item),
                span=item.span,
            )


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
    `mpsgen.rules.MissingOpRule` (None: not read). One that MPS lacks another operator (or an
    overload the change does not serve) keeps the entry; the others leave the rules below to decide."""
    if "SPARSE" in table.name.upper():
        return "kept", f"{table.name} is about sparse tensors; a dense Metal kernel does not change it", ()
    if table.section != wanted_section:
        what = {"grad": "a gradient list", "forward": "a forward list", "error-inputs": "an error-inputs list"}
        return "kept", f"{what[table.section]}; a {wanted_section} kernel does not change it", ()
    if reason is not None and reason.kind == "other-op":
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
) -> tuple[str, tuple[TestListChange, ...]]:
    """The new text of common_mps.py and the report, for a kernel registering the torch dtypes
    `covered` (`mpsgen.dtypes.torch_dtypes_for(groups)`) that serves the OpInfo keys `keys`.
    `parsed`: `parse_testlists(text, path)` when the caller has it. `reasons`: a
    `mpsgen.rules.MissingOpRule` judging each entry's comment (None: comments decide as below only)."""
    found, index, collector = parsed or parse_testlists(text, path)
    covered = frozenset(canonical_dtype(d) for d in covered)
    wanted_section = "grad" if backward else "forward"
    spans: list[tuple[int, int, str]] = []
    changes: list[TestListChange] = []
    wanted = set(keys)
    # only dicts holding one of the keys need their entries (and comment groups) read
    holding = [c for c in found if isinstance(c.node, ast.Dict) and any(_string_value(k) in wanted for k in c.node.keys)]
    for table in _xfail_dicts(text, path, holding, index, collector):
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
    if complex_supported:
        for container in found:
            if isinstance(container.node, ast.Set):
                for key in keys:
                    edit = _complex_insertion(text, path, index, collector, container, key)
                    if edit is not None:
                        spans.append(edit[0])
                        changes.append(TestListChange("added-complex", key, container.name, edit[1], edit[2]))
    return replace_spans(text, spans), tuple(changes)


def _list_removal(text, index, collector, value, gone) -> list[tuple[int, int, str]]:
    names = [_torch_dtype(el) for el in value.elts]
    elements = [Element(*collector.span(el)) for el in value.elts]
    remove = [name in gone for name in names]
    close = collector.span(value)[1] - 1
    return removal_spans(text, elements, remove, close, index)


def _complex_insertion(text, path, index, collector, container, key):
    """(span edit, location, detail) adding `key` to a set of strings, or None when it is there."""
    node = container.node
    values = [_string_value(el) for el in node.elts]
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
