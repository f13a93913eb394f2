"""Scanning C++, Objective-C++ and Metal source without a compiler.

`mask_code` blanks comments and the contents of string, character and raw-string literals (keeping
every offset and newline), so that braces, parentheses and identifiers can be found in code only.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.textedit import LineIndex

# The next comment or literal. A raw string is found at its quote: `R"delim(` (or `uR`, `UR`, `LR`,
# `u8R`) counts when the identifier-like run before the quote is exactly that prefix.
_LITERAL_START = re.compile(r"""//|/\*|["']""")
_RAW_PREFIXES = frozenset({"R", "uR", "UR", "LR", "u8R"})
_RAW_DELIMITER = re.compile(r"([^()\\\s]{0,16})\(")
_LINE_COMMENT = re.compile(r"//(?:[^\n]*\\\n)*[^\n]*")
_QUOTED_BODY = {
    '"': re.compile(r'(?:[^"\\\n]|\\(?:.|\Z))*', re.S),
    "'": re.compile(r"(?:[^'\\\n]|\\(?:.|\Z))*", re.S),
}
_NOT_NEWLINE = re.compile(r"[^\n]")


def mask_code(text: str) -> str:
    """Return `text` with comments and literal contents replaced by spaces (newlines kept).

    Quotes of literals stay, so `"a{b"` becomes `"   "`. Offsets and line numbers are unchanged.
    Regex-driven: each search jumps to the next comment or literal, so code between them costs
    nothing in Python. The last texts' results are kept in process (`_mask_code`, keyed by the text
    itself: a scan reads each host file once for the scan and again for every candidate it confirms).
    """
    return _mask_code(text)


# texts whose masked code, identifiers, directives and definitions are kept per process: more than a
# checkout's host and kernel files (~170 in 2.15), which scan and each plan read in turn
CACHED_TEXTS = 512


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _mask_code(text: str) -> str:
    parts: list[str] = []
    pos = done = 0
    n = len(text)
    search = _LITERAL_START.search

    def blank(start: int, end: int) -> None:
        nonlocal done
        if end > start:
            parts.append(text[done:start])
            parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
            done = end

    while True:
        m = search(text, pos)
        if m is None:
            break
        i, token = m.start(), m.group(0)
        if token == "//":
            end = _LINE_COMMENT.match(text, i).end()
            blank(i, end)
            pos = end
        elif token == "/*":
            close = text.find("*/", i + 2)
            end = n if close < 0 else close + 2
            blank(i, end)
            pos = end
        else:
            raw = _raw_string_delimiter(text, i) if token == '"' else None
            if raw is not None:
                end_marker = ")" + raw.group(1) + '"'
                close = text.find(end_marker, raw.end())
                end = n if close < 0 else close + len(end_marker)
                blank(raw.end(), end - len(end_marker))
                pos = end
                continue
            if token == "'" and i > 0 and text[i - 1].isalnum() and _is_digit_separator(text, i):
                pos = i + 1
                continue
            body_end = _QUOTED_BODY[token].match(text, i + 1).end()
            blank(i + 1, min(body_end, n))
            pos = body_end + 1
    parts.append(text[done:])
    return "".join(parts)


def _raw_string_delimiter(text: str, quote: int):
    """The `delim(` match after the quote at `quote` when it opens a raw string, else None."""
    if quote == 0 or text[quote - 1] != "R":
        return None
    start = quote - 1
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    if text[start:quote] not in _RAW_PREFIXES:
        return None
    return _RAW_DELIMITER.match(text, quote + 1)


def _is_digit_separator(text: str, i: int) -> bool:
    """`1'000'000`: a quote between digits is a C++14 digit separator, not a char literal."""
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] == "_"):
        j -= 1
    return text[j + 1].isdigit()


_PAIRS = {"{": "}", "(": ")", "[": "]"}


def match_brace(masked: str, open_index: int) -> int:
    """Index of the bracket closing the one at `open_index` in masked text, or -1 if unbalanced."""
    opener = masked[open_index]
    closer = _PAIRS[opener]
    depth = 0
    for k in range(open_index, len(masked)):
        ch = masked[k]
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return k
    return -1


# --------------------------------------------------------------------------------------------------
# Identifiers, preprocessor directives and top-level definitions
# --------------------------------------------------------------------------------------------------

_IDENT = re.compile(r"\b[A-Za-z_]\w*")
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*(\w*)")
_DEFINE_NAME = re.compile(r"[ \t]*#[ \t]*define[ \t]+(\w+)")
_CONDITIONAL_OPEN = {"if", "ifdef", "ifndef"}
_CONDITIONAL_BRANCH = {"else", "elif", "elifdef", "elifndef"}
# torch/library.h's blocks: `TORCH_LIBRARY_IMPL(aten, MPS, m) { m.impl(...); }` defines a static
# registration function the macro names; its braces are the file's own, so the body is delimited
_LIBRARY_MACROS = frozenset({"TORCH_LIBRARY", "TORCH_LIBRARY_IMPL", "TORCH_LIBRARY_FRAGMENT"})
_IMPL_MACROS = {"TORCH_IMPL_FUNC"}
_NOT_NAMES = {"decltype", "alignas", "__attribute__", "__declspec", "sizeof", "noexcept", "requires"}
_DECLARATION_KEYWORDS = {"static_assert", "using", "typedef", "template", "extern", "friend"}


def identifiers(masked_text: str) -> Counter[str]:
    """Identifiers in code: `masked_text` comes from `mask_code`, so comments and literals are gone.
    Numbers (`0x1f`, `1.5e3f`) do not contribute. The caller's own Counter (a copy of the last
    texts' counts, kept in process: a scan plans the same host files once per candidate)."""
    return Counter(_identifiers(masked_text))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _identifiers(masked_text: str) -> Counter[str]:
    return Counter(_IDENT.findall(masked_text))


@dataclass(frozen=True)
class Directive:
    """One preprocessor directive, with its backslash-continued lines. `end` is past the newline."""

    word: str
    start: int
    end: int
    line: int
    name: str = ""  # the macro name of a `#define`


@dataclass(frozen=True)
class Definition:
    """A top-level item of a source file.

    `kind` is one of `function`, `impl-func` (`TORCH_IMPL_FUNC(name)(...) {...}`), `macro`
    (`#define`), `macro-instance` (`SOME_MACRO(args)` at namespace scope), `namespace`, `type`
    (struct/class/enum), `declaration` (prototypes, variables, `using`), `objc` (`@interface`...).
    `start`/`end` cover whole lines: the attached comment lines above and one blank line (the following
    one, or else the preceding one) so that deleting `text[start:end]` leaves the file tidy.
    `code_start`/`code_end` delimit the item itself.
    """

    kind: str
    name: str
    start: int
    end: int
    location: Location
    line_count: int
    identifiers: Counter[str] = field(compare=False, hash=False, repr=False)
    code_start: int = 0
    code_end: int = 0
    namespace: str = ""
    is_static: bool = False
    args: tuple[str, ...] = ()  # identifiers among a macro instance's arguments


def find_directives(text: str, masked: str | None = None) -> list[Directive]:
    """Preprocessor directives of `text`, each with its continuation lines (the last texts' kept in
    process, as `identifiers`)."""
    return list(_find_directives(text, mask_code(text) if masked is None else masked))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _find_directives(text: str, masked: str) -> tuple[Directive, ...]:
    index = LineIndex(text)
    out: list[Directive] = []
    pos, n = 0, len(text)
    while pos < n:
        eol = text.find("\n", pos)
        eol = n if eol < 0 else eol
        m = _DIRECTIVE.match(masked, pos, eol)
        if m:
            end = eol
            # a backslash ending a line continues the directive on the next one
            while end < n and text[pos:end].rstrip("\r").endswith("\\"):
                nxt = text.find("\n", end + 1)
                end = n if nxt < 0 else nxt
            stop = min(end + 1, n)
            dm = _DEFINE_NAME.match(masked, pos, end)
            out.append(Directive(m.group(1), pos, stop, index.line_of(pos), dm.group(1) if dm else ""))
            pos = stop
        else:
            pos = eol + 1
    return tuple(out)


def conditions_by_line(text: str, masked: str | None = None) -> list[tuple[str, ...]]:
    """For each line of `text` (0-based), the conditional blocks it sits in, outermost first: each
    the opening directive's first line, whitespace collapsed (`#if __METAL_VERSION__ >= 310`), or
    "#else" once past an `#else`/`#elif` of that block. A directive line gets the blocks around it
    after it has been read (an `#if` line is outside its own block, an `#endif` line too)."""
    masked = mask_code(text) if masked is None else masked
    lines = masked.split("\n")
    at_line: dict[int, Directive] = {d.line: d for d in find_directives(text, masked)}
    stack: list[str] = []
    out: list[tuple[str, ...]] = []
    for number, line in enumerate(lines, 1):
        d = at_line.get(number)
        if d is not None and d.word in _CONDITIONAL_OPEN:
            out.append(tuple(stack))
            stack.append(re.sub(r"^#\s*", "#", " ".join(line.strip().split())))
            continue
        if d is not None and d.word == "endif":
            stack = stack[:-1]
        elif d is not None and d.word in _CONDITIONAL_BRANCH and stack:
            stack[-1] = "#else"
        out.append(tuple(stack))
    return out


def code_only(masked: str, directives: list[Directive]) -> str:
    """`masked` with preprocessor directives blanked too (newlines kept)."""
    out = list(masked)
    for d in directives:
        for k in range(d.start, d.end):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def _brace_delta(code: str) -> int:
    return code.count("{") - code.count("}")


def _unbalanced_branches(code: str, directives: list[Directive]) -> list[Directive]:
    """Conditional branches (`#if`/`#else`/...) whose code opens or closes more braces than it
    closes or opens: a body split by the preprocessor cannot be delimited without evaluating it."""
    bad: list[Directive] = []
    stack: list[Directive] = []
    for d in directives:
        if d.word in _CONDITIONAL_OPEN:
            stack.append(d)
        elif d.word in _CONDITIONAL_BRANCH or d.word == "endif":
            if not stack:
                bad.append(d)
                continue
            opener = stack[-1]
            if _brace_delta(code[opener.end : d.start]) != 0:
                bad.append(opener)
            stack[-1] = d
            if d.word == "endif":
                stack.pop()
    bad.extend(stack)  # an #if never closed
    return bad


class _Scanner:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.masked = mask_code(text)
        self.directives = find_directives(text, self.masked)
        self.code = code_only(self.masked, self.directives)
        self.index = LineIndex(text)
        self.bad_branches = _unbalanced_branches(self.code, self.directives)
        self.brace_macros = {
            d.name: d
            for d in self.directives
            if d.word == "define" and _brace_delta(self.masked[d.start : d.end]) != 0
        }
        self.found: list[Definition] = []

    # -- errors -----------------------------------------------------------------------------------
    def fail(self, offset: int, message: str, hint: str) -> MpsgenError:
        return MpsgenError(message, location=Location(self.path, self.index.line_of(offset)), hint=hint)

    def check_branches(self, head: int, start: int, end: int, what: str) -> None:
        for d in self.bad_branches:
            if start <= d.start < end:
                raise self.fail(
                    head,
                    f"cannot delimit {what}: the #{d.word} at line {d.line} splits its braces",
                    "make each #if branch open and close its own braces, or edit this file by hand",
                )

    # -- scanning ---------------------------------------------------------------------------------
    def skip_space(self, pos: int, end: int) -> int:
        code = self.code
        while pos < end and code[pos].isspace():
            pos += 1
        return pos

    def scan(self) -> list[Definition]:
        end = self.scan_scope(0, [])
        if end < len(self.code):
            raise self.fail(end, "unbalanced closing brace", "check the braces of the definition above")
        self.add_macros()
        self.found.sort(key=lambda d: (d.code_start, d.kind != "namespace"))
        return self.found

    def scan_scope(self, pos: int, namespaces: list[str]) -> int:
        """Scan statements from `pos` until a `}` closing the scope (returned) or the end."""
        code, n = self.code, len(self.code)
        while True:
            pos = self.skip_space(pos, n)
            if pos >= n:
                if namespaces:
                    raise self.fail(
                        n - 1 if n else 0,
                        f"namespace {namespaces[-1]} is never closed",
                        "check the braces of this file",
                    )
                return n
            if code[pos] == "}":
                if not namespaces:
                    for d in self.bad_branches:
                        if d.start < pos:
                            raise self.fail(
                                d.start,
                                f"cannot delimit definitions: the #{d.word} at line {d.line} splits braces",
                                "make each #if branch open and close its own braces",
                            )
                    return pos
                return pos
            pos = self.statement(pos, namespaces)

    def statement(self, pos: int, namespaces: list[str]) -> int:
        code, n = self.code, len(self.code)
        if code[pos] == "@":
            m = re.match(r"@(interface|implementation|protocol)\b", code[pos:])
            if m:
                stop = code.find("@end", pos)
                if stop < 0:
                    raise self.fail(pos, f"@{m.group(1)} without @end", "close it with @end")
                self.add(pos, stop + 4, "objc", "", namespaces)
                return stop + 4
            if code.startswith("@autoreleasepool", pos):
                raise self.fail(pos, "@autoreleasepool outside a function", "check the braces above")
        j = pos
        while j < n:
            ch = code[j]
            if ch in "([":
                k = match_brace(code, j)
                if k < 0:
                    raise self.fail(j, f"unbalanced '{ch}'", "check the brackets of this statement")
                j = k + 1
                instance = self.macro_instance(pos, j)
                if instance is not None:
                    return self.add_macro_instance(pos, instance, namespaces)
                continue
            if ch == ";":
                self.add_declaration(pos, j + 1, namespaces)
                return j + 1
            if ch == "}":
                raise self.fail(pos, "statement without ';' before '}'", "check this statement")
            elif ch == "{":
                head = code[pos:j]
                m = re.fullmatch(r"\s*(?:inline\s+)?namespace\s*([\w:]*)\s*(?:\[\[[^\]]*\]\]\s*)?", head)
                if m or re.fullmatch(r'\s*extern\s+"\s*"\s*', head):
                    name = m.group(1) if m else "extern"
                    close = self.scan_scope(j + 1, [*namespaces, name])
                    if close >= n:
                        raise self.fail(pos, f"namespace {name} is never closed", "check the braces")
                    self.add(pos, close + 1, "namespace", name, namespaces)
                    return close + 1
                initializer = _has_initializer(head)
                close = match_brace(code, j)
                self.check_branches(pos, pos, close if close >= 0 else n, "this definition")
                if close < 0:
                    raise self.fail(pos, "unbalanced '{': the body never closes", "check the braces of this definition")
                if initializer or re.search(r"\b(struct|class|union|enum)\b", _flatten(head)):
                    j = close + 1  # an initializer or a type: the statement goes on to its ';'
                    kind = "declaration" if initializer else "type"
                    end = self.skip_space(j, n)
                    if end < n and code[end] == ";":
                        self.add(pos, end + 1, kind, _type_name(head) if kind == "type" else "", namespaces)
                        return end + 1
                    if kind == "declaration":
                        continue
                    j = end
                    continue
                end = close + 1
                after = self.skip_space(end, n)
                if after < n and code[after] == ";" and "\n" not in code[end:after]:
                    end = after + 1  # a stray `};` after a function body goes with it
                self.add_function(pos, j, end, namespaces)
                return end
            j += 1
        raise self.fail(pos, "statement never ends", "check this statement")

    def macro_instance(self, pos: int, j: int) -> tuple[int, str, tuple[str, ...]] | None:
        """`NAME(args)` at statement start not followed by `(`, `{` or more declarator: an
        instantiation of a macro. Returns (end, macro name, argument identifiers)."""
        code = self.code
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*\((.*)\)", code[pos:j], re.S)
        if not m or m.group(1) in _DECLARATION_KEYWORDS:
            return None
        k = self.skip_space(j, len(code))
        if k < len(code) and code[k] in "({:":
            return None
        if k < len(code) and code[k] == ";":
            j = k + 1
        elif k < len(code) and code[k] not in "}" and self.index.line_of(k) == self.index.line_of(j - 1):
            return None  # more declarator on the same line: not a lone instantiation
        return j, m.group(1), tuple(_IDENT.findall(m.group(2)))

    # -- recording --------------------------------------------------------------------------------
    def add_macro_instance(self, pos: int, instance: tuple[int, str, tuple[str, ...]], namespaces: list[str]) -> int:
        end, macro, args = instance
        if macro in self.brace_macros:
            d = self.brace_macros[macro]
            raise self.fail(
                pos,
                f"cannot delimit {macro}(...): its body is hidden in the macro defined at line {d.line}",
                "the macro opens or closes braces its caller must match; edit this file by hand",
            )
        self.add(pos, end, "macro-instance", macro, namespaces, args=args)
        return end

    def add_declaration(self, pos: int, end: int, namespaces: list[str]) -> None:
        head = self.code[pos:end]
        name = ""
        flat = _flatten(_strip_template(head))
        if "=" not in flat and not re.match(r"\s*(using|typedef|static_assert)\b", flat):
            name = _declarator_name(head) or ""
        static = bool(name) and bool(re.search(r"\bstatic\b", flat.split(name)[0]))
        self.add(pos, end, "declaration", name, namespaces, static=static)

    def add_function(self, pos: int, brace: int, end: int, namespaces: list[str]) -> None:
        head = self.code[pos:brace]
        m = re.match(r"\s*([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*[,)]", head)
        second = re.fullmatch(r"\s*[A-Za-z_]\w*\s*(\([^()]*\))\s*\(.*", head, re.S)
        if m and second:
            kind = "impl-func" if m.group(1) in _IMPL_MACROS else "function"
            self.add(pos, end, kind, m.group(2), namespaces, static=False)
            return
        library = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", head, re.S)
        if library and library.group(1) in _LIBRARY_MACROS:
            self.add(pos, end, "library-block", library.group(1), namespaces, args=tuple(_IDENT.findall(library.group(2))))
            return
        name = _declarator_name(head)
        if not name or re.fullmatch(r"\s*[A-Za-z_]\w*\s*\(.*\)\s*", head, re.S):
            raise self.fail(
                pos,
                "cannot tell what this body defines",
                "a body hidden behind a macro is not delimited with certainty; edit this file by hand",
            )
        static = bool(re.search(r"\bstatic\b", _flatten(_strip_template(head)).split(name)[0]))
        self.add(pos, end, "function", name, namespaces, static=static)

    def add(self, code_start: int, code_end: int, kind: str, name: str, namespaces: list[str], *,
            static: bool = False, args: tuple[str, ...] = ()) -> None:
        text, masked, index = self.text, self.masked, self.index
        first_line = index.line_of(code_start)
        last_line = index.line_of(max(code_end - 1, code_start))
        line_start = index.start_of(first_line)
        start = line_start if not masked[line_start:code_start].strip() else code_start
        line = first_line
        if start == line_start:
            # comment lines directly above belong to the definition
            while line > 1:
                prev_start, prev_end = index.start_of(line - 1), index.end_of(line - 1)
                if text[prev_start:prev_end].strip() and not masked[prev_start:prev_end].strip():
                    line -= 1
                    start = prev_start
                else:
                    break
        line_end = index.end_of(last_line)
        end = line_end if not masked[code_end:line_end].strip() else code_end
        line_count = last_line - line + 1
        if start == index.start_of(line) and end == line_end:
            # one blank line goes with the item, so that deleting it leaves one blank line between
            # its neighbours: the one below when the item is separated from what is above it, else
            # (the last item of a scope) the one above; none inside a group of adjacent lines.
            above = text[index.start_of(line - 1) : start] if line > 1 else ""
            separated_above = line == 1 or not above.strip() or self.code[index.start_of(line - 1) : start].rstrip().endswith("{")
            nxt_end = index.end_of(last_line + 1)
            if separated_above and last_line < index.line_count and not text[line_end:nxt_end].strip():
                end = nxt_end
            elif line > 1 and not above.strip() and self.ends_scope(line_end):
                start = index.start_of(line - 1)
        self.found.append(
            Definition(
                kind=kind,
                name=name,
                start=start,
                end=end,
                location=Location(self.path, first_line),
                line_count=line_count,
                identifiers=identifiers(masked[code_start:code_end]),
                code_start=code_start,
                code_end=code_end,
                namespace="::".join(n for n in namespaces if n),
                is_static=static,
                args=args,
            )
        )

    def ends_scope(self, offset: int) -> bool:
        """Whether the next code after `offset` closes a scope (or the file ends)."""
        k = self.skip_space(offset, len(self.code))
        return k >= len(self.code) or self.code[k] == "}"

    def add_macros(self) -> None:
        inside = [(d.code_start, d.code_end) for d in self.found if d.kind not in ("namespace",)]
        for d in self.directives:
            if d.word != "define" or any(s <= d.start < e for s, e in inside):
                continue
            enclosing = [
                x.name
                for x in sorted(self.found, key=lambda x: x.code_start)
                if x.kind == "namespace" and x.code_start <= d.start < x.code_end
            ]
            code_end = d.end - 1 if self.text[d.end - 1 : d.end] == "\n" else d.end
            self.add(d.start, code_end, "macro", d.name, enclosing)


def _flatten(code: str) -> str:
    """`code` with the contents of (), [] and {} groups removed (the brackets stay)."""
    out: list[str] = []
    depth = 0
    for ch in code:
        if ch in "([{":
            if depth == 0:
                out.append(ch)
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _has_initializer(head: str) -> bool:
    """`... = {` or `... = [](){`: the braces that follow initialise a variable."""
    flat = re.sub(r"\boperator\s*[^\s\w(]*", "operator", _flatten(_strip_template(head)))
    return bool(re.search(r"(?<![=!<>])=(?!=)", flat))


def _strip_template(head: str) -> str:
    """Drop leading `template <...>` clauses."""
    while True:
        m = re.match(r"\s*template\s*<", head)
        if not m:
            return head
        depth, k = 0, m.end() - 1
        while k < len(head):
            if head[k] == "<":
                depth += 1
            elif head[k] == ">":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        head = head[k + 1 :]


_NAME_AT_END = re.compile(r"(~?[A-Za-z_]\w*|operator\s*[^\s\w(]+|operator\s*\(\s*\))\s*$")


def _drop_template_arguments(prefix: str) -> str:
    """`... get_type_str<int64_t>` -> `... get_type_str`: the name of an explicit specialization
    (`template <> T name<int64_t>() {...}`) is the template's."""
    stripped = prefix.rstrip()
    if not stripped.endswith(">") or stripped.endswith("->"):
        return prefix
    depth = 0
    for i in range(len(stripped) - 1, -1, -1):
        if stripped[i] == ">":
            depth += 1
        elif stripped[i] == "<":
            depth -= 1
            if depth == 0:
                return stripped[:i]
    return prefix


def _declarator_name(head: str) -> str | None:
    """The name before the parameter list: the first `(` outside brackets and template arguments."""
    head = _strip_template(head)
    angle = 0
    k = 0
    while k < len(head):
        ch = head[k]
        if ch == "<":
            angle += 1
        elif ch == ">" and head[k - 1 : k] != "-":
            angle -= 1
        elif ch == "(" and angle <= 0:
            m = _NAME_AT_END.search(head[:k]) or _NAME_AT_END.search(_drop_template_arguments(head[:k]))
            if m and m.group(1) not in _NOT_NAMES:
                name = m.group(1)
                return name if not name.startswith("operator") else re.sub(r"\s+", "", name)
            close = match_brace(head, k)
            if close < 0 or (m and m.group(1) not in _NOT_NAMES):
                return None
            k = close
        k += 1
    return None


def _type_name(head: str) -> str:
    m = re.search(r"\b(?:struct|class|union|enum(?:\s+class)?)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)", head)
    return m.group(1) if m else ""


def find_definitions(text: str, path: str) -> list[Definition]:
    """Top-level items of `text` (inside any namespaces), in file order, namespaces included.

    Raises `MpsgenError` at the item's line when a body cannot be delimited with certainty:
    unbalanced braces, a body whose braces come from a macro, an `#if` branch splitting a body.
    The last texts' definitions are kept in process (`_definitions`, keyed by the text and path; a
    refusal is not kept: it is raised afresh).
    """
    return list(_definitions(text, path))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _definitions(text: str, path: str) -> tuple[Definition, ...]:
    return tuple(_Scanner(text, path).scan())


def definition_to_json(d: Definition) -> list:
    """A Definition as JSON data (its path is the file's: `definition_from_json` takes it back)."""
    return [d.kind, d.name, d.start, d.end, d.location.line, d.line_count, dict(d.identifiers), d.code_start,
            d.code_end, d.namespace, d.is_static, list(d.args)]


def definition_from_json(data: list, path: str) -> Definition:
    kind, name, start, end, line, line_count, ids, code_start, code_end, namespace, is_static, args = data
    return Definition(kind, name, start, end, Location(path, line), line_count, Counter(ids), code_start, code_end,
                      namespace, is_static, tuple(args))


def split_top_level(text: str, opening: str = "([", closing: str = ")]") -> list[str]:
    """`text` split at the commas outside any bracket pair (parameters and schema arguments)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts
