"""OpInfos in `common_methods_invocations.py` (and `opinfo/definitions/*.py`): find an op's entries
fast, then edit their MPS decorators and `dtypesIfMPS=`.

Locating never parses the whole file (libcst needs ~7 s for it): a regex finds every `...Info(` call
that opens with a quoted name and every `aten_name=` / `aten_backward_name=` / `torch_opinfo_name=`
keyword; a bracket matcher that skips strings and comments delimits the calls of interest; the
stdlib `ast` parser then parses only those calls (libcst's import alone cost ~0.2 s).

Which entries belong to an aten op `op` (rules the issue leaves to us):
- `name == op`, `name` with dots as underscores `== op` (`special.ndtri` for `special_ndtri`),
  `nn.functional.<op>`, or `aten_name=` / `aten_backward_name=` `== op` (`sigmoid` for
  `sigmoid_backward`, `nn.functional.glu` for `glu`); `aten_names` adds more names to match.
- python-ref entries whose `torch_opinfo_name=` names a matched entry (or matches by the rules above).

Which MPS decorators go (`plan_opinfo_edits`), among `skips=`/`decorators=` elements that are an
expected failure or a skip (`unittest.expectedFailure`, `unittest.skip(...)`, `skipMPS`,
`expectedFailureMPS`, ...) for `device_type='mps'` (or an MPS-only decorator):
- removed when its `dtypes=` is readable and every MPS-testable dtype in it is registered, but for
  a test outside `TestConsistency` (`TestCommon.test_out`, ...) only when its stated reason is that
  MPS lacks the op: otherwise it is a behaviour of its own (2.15 keeps such failures beside kernels);
- removed when it targets `TestConsistency` and names no dtypes;
- removed when it names no dtypes and its stated reason (governing comments, a skip's message) is
  that MPS lacks an overload the change serves (`mpsgen.facts.rules.MissingOpRule`, passed as `reasons`),
  provided the kernel registers every dtype the OpInfo tests (`tested`);
- kept otherwise (other test classes without dtypes are about behaviour, not dtype coverage; the note
  says which reason was read), and tolerance/precision overrides always stay.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.checkout import COMMON_METHODS
from mpsgen.read.pylists import (
    NodeSpans,
    match_bracket,
    parse_python,
)
from mpsgen.read.testlists import canonical_dtype
from mpsgen.textedit import LineIndex

_CALL = re.compile(r"""\b([A-Z]\w*Info)\(\s*(?:name\s*=\s*)?[rRuU]?(['"])([^'"\n]+)\2""")
_KEYWORD = re.compile(r"""\b(aten_name|aten_backward_name|torch_opinfo_name)\s*=\s*[rRuU]?(['"])([^'"\n]+)\2""")
OPENING = re.compile(r"[(\[]")
_NOT_OPINFOS = frozenset({"DecorateInfo"})

# Dtypes the MPS tests never run (test_mps filters to MPS dtypes); they never decide anything here.
NOT_ON_MPS = frozenset({"float64", "complex128"})

_F = frozenset({"float32", "float64"})
_I = frozenset({"uint8", "int8", "int16", "int32", "int64"})
_C = frozenset({"complex64", "complex128"})
# torch.testing._internal.common_dtype helpers: the dtypes each returns before its extra arguments.
DTYPE_HELPERS = {
    "empty_types": frozenset(),
    "custom_types": frozenset(),
    "floating_types": _F,
    "floating_types_and": _F,
    "floating_types_and_half": _F | {"float16"},
    "floating_and_complex_types": _F | _C,
    "floating_and_complex_types_and": _F | _C,
    "integral_types": _I,
    "integral_types_and": _I,
    "all_types": _F | _I,
    "all_types_and": _F | _I,
    "all_types_and_half": _F | _I | {"float16"},
    "all_types_and_complex": _F | _I | _C,
    "all_types_and_complex_and": _F | _I | _C,
    "complex_types": _C,
    "complex_types_and": _C,
    "double_types": frozenset({"float64", "complex128"}),
}

FAILURE_DECORATORS = frozenset({"expectedFailure", "skip", "skipIf", "skipMPS", "expectedFailureMPS", "skipMPSIf", "skipIfMPS"})
MPS_ONLY_DECORATORS = frozenset({"skipMPS", "expectedFailureMPS", "skipMPSIf", "skipIfMPS"})
TOLERANCE_DECORATORS = frozenset({"toleranceOverride", "precisionOverride"})


@dataclass(frozen=True)
class OpInfoRef:
    """One OpInfo (or python-ref) call: its identity, where it is, and its dtype arguments' text."""

    name: str
    variant_test_name: str
    key: str  # name + variant_test_name: the key common_mps.py uses
    aten_name: str | None
    kind: str  # the call (`OpInfo`, `UnaryUfuncInfo`, ...) or `python-ref`
    location: Location
    span: tuple[int, int]  # the whole call expression in the file text
    dtypes: str | None  # text of `dtypes=`
    aliases: tuple[str, ...] = ()
    dtypes_if_mps: str | None = None  # text of `dtypesIfMPS=`
    aten_backward_name: str | None = None
    torch_opinfo_name: str | None = None  # python refs: the OpInfo they point at
    call: str = ""  # the class called, also for python refs
    promotes_int_to_float: bool = False  # `promotes_int_to_float=True`: integer inputs give float
    always_returns_bool: bool = False  # `always_returns_bool=True`: the output is bool for every input
    # the keyword arguments its samples pass to the op (`op_kwargs={...}`, `sample_kwargs=lambda ...:
    # ({...}, ...)`): a variant passing `decimals` calls `round.decimals`, not `round`
    call_keywords: tuple[str, ...] = ()


def _line_of(text: str, offset: int, lines: LineIndex | None = None) -> int:
    return lines.line_of(offset) if lines is not None else text.count("\n", 0, offset) + 1


def _name_matches(name: str, targets: frozenset[str]) -> bool:
    if name in targets or name.replace(".", "_") in targets:
        return True
    return name.startswith("nn.functional.") and name[len("nn.functional.") :] in targets


def _call_starts(text: str) -> list[tuple[int, str, str]]:
    """Every `...Info(` call in code: one on a commented-out line (`# BinaryUfuncInfo('igammac', ...`)
    is not a call."""
    return [(m.start(), m.group(1), m.group(3)) for m in _CALL.finditer(text)
            if m.group(1) not in _NOT_OPINFOS and not _commented(text, m.start())]


def _commented(text: str, offset: int) -> bool:
    return "#" in text[text.rfind("\n", 0, offset) + 1 : offset]


def _enclosing(starts_offsets: list[int], starts, offset: int) -> int | None:
    import bisect

    i = bisect.bisect_right(starts_offsets, offset) - 1
    return i if i >= 0 else None


def names_index(index: dict) -> dict[str, list[int]]:
    """name -> the `scan_calls` start indices of the calls `_name_matches` would match for it (the
    call's name, with dots read as underscores, and without `nn.functional.`)."""
    out: dict[str, list[int]] = {}
    for i, (_, _, name) in enumerate(index["starts"]):
        keys = {name, name.replace(".", "_")}
        if name.startswith("nn.functional."):
            keys.add(name[len("nn.functional.") :])
        for key in keys:
            out.setdefault(key, []).append(i)
    return out


def scan_calls(text: str) -> dict:
    """The file's index (JSON data, cacheable per file): every `...Info(` call start as
    [offset, class, name] and every aten_name=/aten_backward_name=/torch_opinfo_name= keyword as
    [offset, keyword, value]. Two regex passes over the file (~0.1 s for the real one)."""
    keywords = [[m.start(), m.group(1), m.group(3)] for m in _KEYWORD.finditer(text)]
    return {"starts": [list(s) for s in _call_starts(text)], "keywords": keywords}


@functools.lru_cache(maxsize=4)
def _scanned(text: str) -> dict:
    """`scan_calls(text)`, once a process per text (only read: `find_opinfos` never changes it)."""
    return scan_calls(text)


def find_opinfos(
    text: str, path: str, op: str, aten_names: frozenset[str] = frozenset(), *, index: dict | None = None,
    lines: LineIndex | None = None, by_name: dict[str, list[int]] | None = None,
) -> tuple[OpInfoRef, ...]:
    """The OpInfo and python-ref entries testing aten op `op`, in file order. `index` is
    `scan_calls(text)` and `lines` the text's LineIndex, when the caller has them (e.g. from
    `mpsgen.read.cache`, `mpsgen.facts.views.Views`)."""
    targets = frozenset({op}) | aten_names
    index = index if index is not None else _scanned(text)
    starts = [tuple(s) for s in index["starts"]]
    offsets = [s[0] for s in starts]
    chosen: dict[int, int] = {}  # start index -> call end
    ends: dict[int, int] = {}

    def end_of(i: int) -> int:
        if i not in ends:
            paren = text.index("(", starts[i][0])
            end = match_bracket(text, paren)
            if end < 0:
                raise MpsgenError(
                    f"unbalanced brackets in {starts[i][1]}({starts[i][2]!r} ...)",
                    location=Location(path, _line_of(text, starts[i][0], lines)),
                    hint="fix the file so that it parses",
                )
            ends[i] = end
        return ends[i]

    if by_name is not None:
        for i in sorted({i for target in targets for i in by_name.get(target, ())}):
            chosen[i] = end_of(i)
    else:
        for i, (_, _, name) in enumerate(starts):
            if _name_matches(name, targets):
                chosen[i] = end_of(i)
    ref_hits: list[tuple[int, str]] = []
    for at, keyword, value in index["keywords"]:
        if keyword == "torch_opinfo_name":
            ref_hits.append((at, value))
        elif value in targets:
            i = _enclosing(offsets, starts, at)
            if i is not None and at < end_of(i):
                chosen[i] = end_of(i)
    refs = [_read_call(text, path, starts[i][0], chosen[i], lines) for i in sorted(chosen)]
    matched_names = {ref.name for ref in refs}
    for offset, value in ref_hits:
        if value in matched_names or _name_matches(value, targets):
            i = _enclosing(offsets, starts, offset)
            if i is not None and i not in chosen and offset < end_of(i):
                chosen[i] = end_of(i)
                refs.append(_read_call(text, path, starts[i][0], chosen[i], lines))
    if not refs:
        names = sorted({s[2] for s in starts})
        close = difflib.get_close_matches(op, names + [n.replace(".", "_") for n in names], n=5, cutoff=0.6)
        raise MpsgenError(
            f"no OpInfo tests {op!r}",
            location=Location(path, 1),
            hint=f"close names: {', '.join(dict.fromkeys(close))}" if close else "pass --opinfo NAME, or add an OpInfo first",
        )
    return tuple(sorted(refs, key=lambda r: r.span[0]))


def opinfo_calls(checkout, op: str) -> tuple[tuple[OpInfoRef, ast.Call | None], ...] | None:
    """The OpInfo entries testing `op` in the checkout's common_methods_invocations.py (python-refs
    left out), each with its call parsed alone (None where that span does not parse); () when the file
    names no entry for it or cannot be read, None when the checkout has no such file. Read once per
    text and op: try's domain, samples and tolerance readings all take this one reading."""
    if not checkout.exists(COMMON_METHODS):
        return None
    return _calls_of(checkout.read(COMMON_METHODS), COMMON_METHODS, op)


@functools.lru_cache(maxsize=16)
def _calls_of(text: str, path: str, op: str) -> tuple[tuple[OpInfoRef, ast.Call | None], ...]:
    try:
        refs = find_opinfos(text, path, op)
    except (MpsgenError, ValueError):  # no entry, or an unreadable file: nothing is known of it
        return ()
    calls = []
    for ref in refs:
        if ref.kind == "python-ref":
            continue
        try:
            call = ast.parse(text[ref.span[0] : ref.span[1]], mode="eval").body
        except SyntaxError:
            call = None
        calls.append((ref, call if isinstance(call, ast.Call) else None))
    return tuple(calls)


def parse_call(text: str, path: str, start: int, end: int, first_line: int) -> tuple[ast.Call, NodeSpans]:
    """The call at text[start:end] (starting on `first_line`), parsed alone; its NodeSpans give
    spans in file coordinates."""
    snippet = text[start:end]
    tree = parse_python(snippet, path, "OpInfo call", first_line=first_line, mode="eval")
    if not isinstance(tree.body, ast.Call):
        raise MpsgenError("not a call", location=Location(path, first_line), hint="mpsgen reads OpInfo(...) calls only")
    return tree.body, NodeSpans(snippet, base=start)


def string_constant(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value
        return value if isinstance(value, str) else value.decode()
    return None


def _kwargs(call: ast.Call) -> dict[str, ast.keyword]:
    return {arg.arg: arg for arg in call.keywords if arg.arg is not None}


def syntactic_span(node: ast.expr, spans: NodeSpans) -> tuple[int, int]:
    """The span of an expression without the parentheses around a tuple (ast includes them, libcst
    did not; edits such as `dtypesIfMPS=(...)` keep their parentheses)."""
    start, end = spans.span(node)
    text, base = spans.text, spans.base
    if isinstance(node, ast.Tuple) and node.elts and text[start - base] == "(" and text[end - base - 1] == ")":
        start = spans.span(node.elts[0])[0]
        end -= 1
        while text[end - base - 1] in " \t\r\n":
            end -= 1
    return start, end


def _read_call(text: str, path: str, start: int, end: int, lines: LineIndex | None = None) -> OpInfoRef:
    location = Location(path, _line_of(text, start, lines))
    call, spans = parse_call(text, path, start, end, location.line)
    kwargs = _kwargs(call)
    positional = call.args
    name = string_constant(positional[0]) if positional else string_constant(kwargs["name"].value) if "name" in kwargs else None
    if name is None:
        raise MpsgenError("OpInfo name is not a string literal", location=location, hint="mpsgen reads literal names only")
    variant = ""
    if "variant_test_name" in kwargs:
        variant = string_constant(kwargs["variant_test_name"].value)  # type: ignore[assignment]
        if variant is None:
            raise MpsgenError(
                "variant_test_name is not a string literal", location=location, hint="mpsgen reads literal names only"
            )

    def text_of(keyword: str) -> str | None:
        return spans.source(kwargs[keyword].value) if keyword in kwargs else None

    aliases: tuple[str, ...] = ()
    if "aliases" in kwargs and isinstance(kwargs["aliases"].value, (ast.Tuple, ast.List)):
        aliases = tuple(a for a in (string_constant(el) for el in kwargs["aliases"].value.elts) if a)
    cls = call.func.id if isinstance(call.func, ast.Name) else spans.source(call.func)
    torch_opinfo_name = string_constant(kwargs["torch_opinfo_name"].value) if "torch_opinfo_name" in kwargs else None
    return OpInfoRef(
        name=name,
        variant_test_name=variant,
        key=name + variant,
        aten_name=string_constant(kwargs["aten_name"].value) if "aten_name" in kwargs else None,
        kind="python-ref" if torch_opinfo_name is not None else cls,
        location=location,
        span=(start, end),
        dtypes=text_of("dtypes"),
        aliases=aliases,
        dtypes_if_mps=text_of("dtypesIfMPS"),
        aten_backward_name=string_constant(kwargs["aten_backward_name"].value) if "aten_backward_name" in kwargs else None,
        torch_opinfo_name=torch_opinfo_name,
        call=cls,
        promotes_int_to_float=_is_true(kwargs.get("promotes_int_to_float")),
        always_returns_bool=_is_true(kwargs.get("always_returns_bool")),
        call_keywords=_call_keywords(kwargs),
    )


def _call_keywords(kwargs: dict[str, ast.keyword]) -> tuple[str, ...]:
    """The string keys of the dict literals an OpInfo's samples pass to the op: `op_kwargs={...}`
    inside `sample_inputs_func=`, every dict `sample_kwargs=` builds."""
    dicts: list[ast.Dict] = []
    if "sample_kwargs" in kwargs:
        dicts += [node for node in ast.walk(kwargs["sample_kwargs"].value) if isinstance(node, ast.Dict)]
    if "sample_inputs_func" in kwargs:
        for node in ast.walk(kwargs["sample_inputs_func"].value):
            if isinstance(node, ast.keyword) and node.arg == "op_kwargs" and isinstance(node.value, ast.Dict):
                dicts.append(node.value)
    names = [key.value for node in dicts for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    return tuple(dict.fromkeys(names))


def _is_true(keyword: ast.keyword | None) -> bool:
    return keyword is not None and isinstance(keyword.value, ast.Constant) and keyword.value.value is True


def canonical_torch_dtype(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return canonical_dtype(node.attr)
    return None


def evaluate_dtypes(node) -> frozenset[str] | None:
    """The dtypes a `dtypes=`-style `ast` expression names (canonical names), or None when it is
    not a literal list of `torch.<dtype>` or a common_dtype helper call over them."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        names = [canonical_torch_dtype(el) for el in node.elts]
        return frozenset(names) if all(names) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DTYPE_HELPERS:
        names = [canonical_torch_dtype(arg) for arg in node.args]
        if all(names) and not node.keywords:
            return DTYPE_HELPERS[node.func.id] | frozenset(names)  # type: ignore[arg-type]
    return None


def tested_dtypes(ref: OpInfoRef) -> frozenset[str] | None:
    """The dtypes the MPS tests run for this OpInfo (`dtypesIfMPS` else `dtypes`, without float64 and
    complex128), or None when they cannot be read statically."""
    source = ref.dtypes_if_mps or ref.dtypes
    if source is None:
        return None
    try:
        found = evaluate_dtypes(ast.parse(source.strip(), mode="eval").body)
    except SyntaxError:
        return None
    return None if found is None else found - NOT_ON_MPS


def reference_dtypes(ref: OpInfoRef) -> frozenset[str] | None:
    """The dtypes the CPU reference supports (`dtypes=`, the list every device falls back to and the
    CPU uses), or None when they cannot be read statically. MPS's consistency tests compare with the
    CPU op, so an MPS expected failure on a dtype outside these stays failing whatever Metal does."""
    if ref.dtypes is None:
        return None
    try:
        return evaluate_dtypes(ast.parse(ref.dtypes.strip(), mode="eval").body)
    except SyntaxError:
        return None


def callee_name(node: ast.expr) -> str:
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def skip_message(decorator: ast.expr | None) -> str:
    """The message of `unittest.skip("...")` (a reason like a comment), else ""."""
    if isinstance(decorator, ast.Call) and decorator.args:
        return string_constant(decorator.args[0]) or ""
    return ""
