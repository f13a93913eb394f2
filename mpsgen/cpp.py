"""Scanning C++, Objective-C++ and Metal source without a compiler.

`mask_code` blanks comments and the contents of string, character and raw-string literals (keeping
every offset and newline), so that braces, parentheses and identifiers can be found in code only.
"""

from __future__ import annotations

import re

_RAW_PREFIX = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


def mask_code(text: str) -> str:
    """Return `text` with comments and literal contents replaced by spaces (newlines kept).

    Quotes of literals stay, so `"a{b"` becomes `"   "`. Offsets and line numbers are unchanged.
    """
    out = list(text)
    i, n = 0, len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            # a line comment continues over a backslash-newline
            while j < n and j > 0 and text[j - 1] == "\\":
                k = text.find("\n", j + 1)
                j = n if k < 0 else k
            blank(i, j)
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" or (c in "uUL" and i + 1 < n and text[i + 1] in 'R8'):
            m = _RAW_PREFIX.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                end_marker = ")" + m.group(1) + '"'
                j = text.find(end_marker, m.end())
                j = n if j < 0 else j + len(end_marker)
                blank(m.end(), j - len(end_marker))
                i = j
            else:
                i += 1
        elif c == '"' or c == "'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and _is_digit_separator(text, i):
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


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
