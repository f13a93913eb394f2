"""Span edits on the elements of Python list/tuple/dict/set literals, and a small Python lexer.

Shared by `testlists.py` and `opinfo.py`: both locate elements with the stdlib `ast` parser, then remove exactly the
elements (and the comments that belong to them only) by replacing spans of the original text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.textedit import LineIndex

_TOKEN = re.compile(r"""[rRbBuUfF]{0,2}(?:'''|\"\"\"|'|")|#|[()\[\]{}]""")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


def skip_string(text: str, pos: int) -> int:
    """`pos` is at a string's opening quote (after any prefix): the offset just past the string."""
    quote = text[pos : pos + 3] if text[pos : pos + 3] in ('"""', "'''") else text[pos]
    i = pos + len(quote)
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if len(quote) == 1 and ch == "\n":
            return i  # unterminated one-line string: stop at the line's end
        i += 1
    return n


def match_bracket(text: str, open_pos: int) -> int:
    """Offset just past the bracket closing the one at `open_pos`, skipping strings and comments.
    Returns -1 when the text ends first."""
    stack: list[str] = []
    pos = open_pos
    n = len(text)
    while pos < n:
        m = _TOKEN.search(text, pos)
        if m is None:
            return -1
        tok = m.group(0)
        if tok == "#":
            nl = text.find("\n", m.end())
            pos = n if nl < 0 else nl + 1
        elif tok in _OPENERS:
            stack.append(_OPENERS[tok])
            pos = m.end()
        elif tok in ")]}":
            if not stack or stack[-1] != tok:
                return -1
            stack.pop()
            pos = m.end()
            if not stack:
                return pos
        else:
            prefix = tok.rstrip("'\"")
            pos = skip_string(text, m.start() + len(prefix))
    return -1


@dataclass(frozen=True)
class Element:
    """One element of a literal container: the span of its value (`start`, `end`) in the file text."""

    start: int
    end: int


def _comma_end(text: str, end: int, limit: int) -> int | None:
    """Offset just past the comma following an element that ends at `end` (whitespace and comments
    may sit between), or None when the next significant character is not a comma."""
    i = end
    while i < limit:
        ch = text[i]
        if ch in " \t\r\n\\":
            i += 1
        elif ch == "#":
            nl = text.find("\n", i)
            i = limit if nl < 0 else nl + 1
        elif ch == ",":
            return i + 1
        else:
            return None
    return None


def _is_comment_line(line: str) -> bool:
    return line.lstrip().startswith("#")


def _rest_is_blank_or_comment(text: str, pos: int) -> bool:
    nl = text.find("\n", pos)
    rest = text[pos : nl if nl >= 0 else len(text)].strip()
    return rest == "" or rest.startswith("#")


@dataclass(frozen=True)
class ElementLines:
    """An element that owns whole lines: [first_line, last_line] and the comment block right above."""

    first_line: int
    last_line: int
    comment_first: int | None  # first line of the comment block directly above, if any


def element_lines(text: str, index: LineIndex, elements: list[Element], close: int) -> list[ElementLines] | None:
    """Line ownership of each element when every element starts its own line and nothing but its
    comma and a comment follows it on its last line; None otherwise (an inline container)."""
    out: list[ElementLines] = []
    previous_last = 0
    for element in elements:
        first = index.line_of(element.start)
        if text[index.start_of(first) : element.start].strip():
            return None
        comma = _comma_end(text, element.end, close)
        stop = comma if comma is not None and index.line_of(comma - 1) == index.line_of(element.end) else element.end
        if not _rest_is_blank_or_comment(text, stop):
            return None
        last = index.line_of(stop)
        if first <= previous_last:
            return None
        comment_first = None
        line = first - 1
        while line > previous_last and _is_comment_line(text[index.start_of(line) : index.end_of(line)]):
            comment_first = line
            line -= 1
        out.append(ElementLines(first, last, comment_first))
        previous_last = last
    return out


def lines_but_last(text: str, index: LineIndex, elements: list[Element]) -> list[ElementLines] | None:
    """Line ownership when every element but the last owns whole lines and the last starts its own
    line but ends on the closing bracket's line (`..., dtypes=(torch.float32,)),)`); None otherwise.
    The last element's lines cannot go without the bracket: callers only remove the others."""
    if len(elements) < 2:
        return None
    head = element_lines(text, index, elements[:-1], elements[-1].start)
    last = elements[-1]
    first = index.line_of(last.start)
    if head is None or text[index.start_of(first) : last.start].strip() or first <= head[-1].last_line:
        return None
    comment_first = None
    line = first - 1
    while line > head[-1].last_line and _is_comment_line(text[index.start_of(line) : index.end_of(line)]):
        comment_first = line
        line -= 1
    return [*head, ElementLines(first, index.line_of(last.end), comment_first)]


def comment_groups(text: str, index: LineIndex, lines: list[ElementLines]) -> list[list[int]]:
    """Groups of element indices headed by one comment block: an element with its own comment block
    starts a group; following elements without one join it while no blank line separates them."""
    groups: list[list[int]] = []
    for i, owned in enumerate(lines):
        if owned.comment_first is not None or not groups:
            groups.append([i])
            continue
        previous = lines[i - 1]
        gap = range(previous.last_line + 1, owned.first_line)
        if any(not text[index.start_of(ln) : index.end_of(ln)].strip() for ln in gap):
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def governing_comments(text: str, index: LineIndex, elements: list[Element], close: int) -> list[str]:
    """For each element of one container (closing bracket at `close`): the comments that govern it,
    one per line without indentation: the comment block heading its group (`comment_groups`) and
    the comments on its own lines. An inline container has no groups: only its own lines count."""
    owned = element_lines(text, index, elements, close) or lines_but_last(text, index, elements)
    comments: list[str] = []
    previous: list[str] = []  # (inline containers) the heading of the element before, while adjacent
    for i, element in enumerate(elements):
        own = [ln.strip() for ln in _lines(text, index, index.line_of(element.start), index.line_of(element.end))]
        own = [ln[ln.index("#") :] for ln in own if "#" in ln]
        heading: list[str] = []
        if owned is not None:
            for group in comment_groups(text, index, owned):
                if i in group and owned[group[0]].comment_first is not None:
                    head = owned[group[0]]
                    heading = [ln.strip() for ln in _lines(text, index, head.comment_first, head.first_line - 1)]
        else:
            heading = _block_above(text, index, element, elements[i - 1] if i else None, previous)
            previous = heading
        comments.append("\n".join(heading + own))
    return comments


def _block_above(text: str, index: LineIndex, element: Element, before: Element | None, inherited: list[str]) -> list[str]:
    """In a container whose elements do not all own whole lines (`element_lines` is None): the
    comment block right above an element that starts its own line, else the block the element just
    before it had when that one ends on the line above."""
    first = index.line_of(element.start)
    if text[index.start_of(first) : element.start].strip():
        return []
    block: list[str] = []
    line = first - 1
    while line >= 1 and (before is None or line > index.line_of(before.end)):
        stripped = text[index.start_of(line) : index.end_of(line)].strip()
        if not stripped.startswith("#"):
            break
        block.insert(0, stripped)
        line -= 1
    if block:
        return block
    return inherited if before is not None and index.line_of(before.end) == first - 1 else []


def _lines(text: str, index: LineIndex, first: int, last: int) -> list[str]:
    return [text[index.start_of(ln) : index.end_of(ln)] for ln in range(first, last + 1)]


def removal_spans(
    text: str, elements: list[Element], remove: list[bool], close: int, index: LineIndex | None = None
) -> list[tuple[int, int, str]]:
    """Spans (start, end, "") removing the flagged elements of one container whose closing bracket is
    at `close`. Whole-line elements lose their lines, and a comment block directly above goes with the
    group it heads only when every element of that group goes. Inline elements lose `value, `."""
    if not any(remove):
        return []
    index = index or LineIndex(text)
    owned = element_lines(text, index, elements, close)
    if owned is None and not remove[-1]:
        owned = lines_but_last(text, index, elements)
    spans: list[tuple[int, int, str]] = []
    if owned is not None:
        for group in comment_groups(text, index, owned):
            whole_group = all(remove[i] for i in group)
            for i in group:
                if not remove[i]:
                    continue
                first = owned[i].first_line
                if i == group[0] and whole_group and owned[i].comment_first is not None:
                    first = owned[i].comment_first
                spans.append((index.start_of(first), index.end_of(owned[i].last_line), ""))
        return _merge(spans)
    i = 0
    n = len(elements)
    while i < n:
        if not remove[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and remove[j + 1]:
            j += 1
        comma = _comma_end(text, elements[j].end, close)
        run_end = comma if comma is not None else elements[j].end
        if j + 1 < n:
            spans.append((elements[i].start, elements[j + 1].start, ""))
        elif i > 0:
            spans.append((elements[i - 1].end, run_end, ""))
        else:
            spans.append((elements[i].start, run_end, ""))
        i = j + 1
    return spans


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    merged: list[tuple[int, int, str]] = []
    for start, end, new in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), "")
        else:
            merged.append((start, end, new))
    return merged


def whole_lines_span(text: str, start: int, end: int, index: LineIndex) -> tuple[int, int] | None:
    """The span of the lines holding [start, end) plus a trailing comma, when nothing else shares
    those lines; None otherwise."""
    first = index.line_of(start)
    if text[index.start_of(first) : start].strip():
        return None
    comma = _comma_end(text, end, len(text))
    stop = comma if comma is not None and index.line_of(comma - 1) == index.line_of(end) else end
    if not _rest_is_blank_or_comment(text, stop):
        return None
    return index.start_of(first), index.end_of(index.line_of(stop))


def syntax_error_line(text: str, fallback: int) -> int:
    """The line of the first syntax error as CPython reports it (libcst's tokenizer errors often say
    line 1); `fallback` when CPython compiles the text."""
    try:
        compile(text, "<mpsgen>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or fallback
    return fallback


def parse_python(text: str, path: str, what: str = "Python", first_line: int = 1, mode: str = "exec"):
    """`ast.parse(text)`, a SyntaxError becoming an MpsgenError at the file's line (`first_line` is the
    line of the file where `text` starts). The stdlib parser is C: ~0.02 s for common_mps.py where
    libcst needs ~0.5 s plus its import, and it gives every node's exact start and end."""
    import ast

    try:
        return ast.parse(text, mode=mode)
    except SyntaxError as exc:
        raise MpsgenError(
            f"cannot parse {what}: {exc.msg}",
            location=Location(path, first_line + (exc.lineno or 1) - 1),
            hint="fix the syntax error before running mpsgen",
        ) from None


class NodeSpans:
    """Character spans of `ast` nodes in `text` (ast counts columns in UTF-8 bytes). `base` is the
    offset of `text` in the file, so that spans come out in file coordinates."""

    def __init__(self, text: str, index: LineIndex | None = None, base: int = 0):
        self.text = text
        self.index = index or LineIndex(text)
        self.base = base

    def offset(self, line: int, col: int) -> int:
        start = self.index.start_of(line)
        if col:
            prefix = self.text[start : start + col]
            if not prefix.isascii():
                prefix = self.text[start : self.index.end_of(line)].encode("utf-8")[:col].decode("utf-8", "replace")
            col = len(prefix)
        return self.base + start + col

    def span(self, node) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def source(self, node) -> str:
        start, end = self.span(node)
        return self.text[start - self.base : end - self.base]


def is_plain_string(node, spans: NodeSpans) -> bool:
    """A single string literal (what libcst calls a SimpleString): not an f-string, not implicitly
    concatenated pieces (ast merges `"a" "b"` into one constant)."""
    import ast

    if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
        return False
    source = spans.source(node)
    quote = len(source) - len(source.lstrip("rRbBuU"))
    return quote <= 2 and skip_string(source, quote) == len(source)


def string_quote(source: str) -> str:
    """The quote of a string literal's source: `'`, `"`, `'''` or `\"\"\"`."""
    body = source.lstrip("rRbBuU")
    return body[:3] if body[:3] in ('"""', "'''") else body[:1]
