"""`torch/testing/_internal/common_mps.py`: the MPS xfail/skip dicts and the complex list.

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
  or a "downstream" function) stays (`mpsgen.facts.rules.MissingOpRule`, passed as `reasons`); one whose
  comment says MPS lacks the op follows the rules above, and its report carries the reason.
- Forward kernels edit the dicts of forward modifiers; `backward=True` (a `*_backward` kernel) edits
  the dicts of functions whose name mentions `grad` instead. Error-input lists are never edited.
- A comment block directly above removed entries goes only when every entry of the group it heads
  goes (a group runs until the next comment block or blank line).
- The complex list is read from the file, name and meaning: a set of strings assigned to a name
  ending in `COMPLEX_OPS`, whose meaning is how the file tests it: `if key not in <set>:` before the
  complex expected failure (2.13's `SUPPORTED_COMPLEX_OPS`: the ops whose complex tests pass) or
  `if key in <set>:` (2.15's `UNSUPPORTED_COMPLEX_OPS`: the ops whose complex tests fail); the name
  (`UNSUPPORTED...`) decides only when no such test is found. A kernel registering complex adds the
  key to a supported-list (in sorted position when the set is sorted, else at its end) and removes it
  from an unsupported-list.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from mpsgen.dtypes import TORCH_DTYPE_ALIASES, TORCH_DTYPES
from mpsgen.model import Location
from mpsgen.read.pylists import (
    Element,
    NodeSpans,
    governing_comments,
    is_plain_string,
    parse_python,
)
from mpsgen.textedit import LineIndex

ALL_MPS_DTYPES = frozenset(TORCH_DTYPES["float"] + TORCH_DTYPES["integer"] + ("complex64",))
COMPLEX_SET_SUFFIX = "COMPLEX_OPS"

# The order dtypes are written in when mpsgen writes a list.
DTYPE_ORDER = ("float32", "float16", "bfloat16", "int64", "int32", "int16", "uint8", "int8", "bool", "complex64", "complex32")


def dtype_order(dtypes) -> list[str]:
    return [d for d in DTYPE_ORDER if d in dtypes] + sorted(set(dtypes) - set(DTYPE_ORDER))


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


def torch_dtype_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return node.attr
    return None


def _dtype_value(node: ast.expr) -> tuple[str, ...] | None | bool:
    """The dtypes of a dict value: a tuple of names, None for `None`, False when not a dtype list."""
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        names = [torch_dtype_of(el) for el in node.elts]
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
        self.membership: dict[str, set[bool]] = {}  # set name -> how `x in NAME` is tested (True: `not in`)

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
        complex_set = target.id.endswith(COMPLEX_SET_SUFFIX) and _is_string_set(value, self.spans)
        if _is_xfail_dict(value, self.spans) or complex_set:
            function = self.functions[-1] if self.functions else ""
            self.found.append(_Container(target.id, function, value, self.span(value)))  # type: ignore[arg-type]

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._assigned(node.targets[0], node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target, node.value)

    def visit_If(self, node: ast.If) -> None:
        for compare in ast.walk(node.test):
            if isinstance(compare, ast.Compare):
                for op, right in zip(compare.ops, compare.comparators):
                    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Name):
                        self.membership.setdefault(right.id, set()).add(isinstance(op, ast.NotIn))
        self.generic_visit(node)

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


def string_value(node: ast.Constant) -> str:
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
                key=string_value(key),  # type: ignore[arg-type]
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
    return tuple(xfail_dicts(text, path, found, index, collector))


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
            if key is not None and string_value(key) in wanted:  # type: ignore[arg-type]
                out.append((section, string_value(key), _dtype_value(value)))  # type: ignore[arg-type]
    return tuple(out)


@dataclass(frozen=True)
class ComplexList:
    """The file's complex list: its name, whether it lists the ops whose complex tests pass
    (`supported`, 2.13's `SUPPORTED_COMPLEX_OPS`) or those whose complex tests fail (2.15's
    `UNSUPPORTED_COMPLEX_OPS`), and its keys."""

    name: str
    supported: bool
    keys: frozenset[str]

    def complex_expected(self, keys) -> bool:
        """Whether the complex tests of an op with these keys are expected to pass."""
        listed = bool(set(keys) & self.keys)
        return listed if self.supported else not listed


def complex_list(parsed) -> ComplexList | None:
    """The complex list of common_mps.py (`parsed`: `parse_testlists(...)`), None when it has none."""
    found, _index, collector = parsed
    for container in found:
        if isinstance(container.node, ast.Set):
            tested = collector.membership.get(container.name, set())
            supported = tested == {True} if tested in ({True}, {False}) else not container.name.startswith("UNSUPPORTED")
            keys = frozenset(string_value(el) for el in container.node.elts)  # type: ignore[arg-type]
            return ComplexList(container.name, supported, keys)
    return None


def xfail_dicts(text, path, found, index, collector):
    for item in found:
        if isinstance(item.node, ast.Dict):
            yield XfailDict(
                name=item.name,
                function=item.function,
                location=Location(path, index.line_of(item.span[0])),
                entries=_entries(text, path, index, collector, item),
                span=item.span,
            )
