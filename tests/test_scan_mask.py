"""`cpp.mask_code` is regex-driven for speed (scan reads every header and host file). These tests prove
it gives exactly the output of the character-by-character reference below, on every real header of
the PyTorch 2.13.0 wheel, every fixture file, hand-picked edge cases and random strings."""

from __future__ import annotations

import random
import re

import pytest

from mpsgen.read.cpp import mask_code

from support import FIXTURE_CHECKOUT

_RAW_PREFIX = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


def reference_mask_code(text: str) -> str:
    """The original character-by-character implementation (kept here as the specification)."""
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
        elif c == "R" or (c in "uUL" and i + 1 < n and text[i + 1] in "R8"):
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
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] == "_"):
        j -= 1
    return text[j + 1].isdigit()


EDGE_CASES = [
    "",
    "a // comment",
    "a // comment \\\n continued\nb",
    "a // ends with backslash \\",
    "x /* unterminated",
    "x /*/ still comment */ y",
    'R"(raw)" uR"d(x)d" u8R"xy(a)"b)xy" LR"(z)" UR"(q)"',
    'fooR"(not raw)" _R"(no)"',
    'R"d(unterminated raw',
    '"unterminated\nnext"',
    '"escaped \\" quote" \'\\\'\' \'{\'',
    '"backslash at end \\',
    "1'000'000 + 0x1'f u8'a' x'y'",
    "'a' L'b' u8\"s\"",
    '"line \\\ncontinued" after',
    "a\r\n// crlf\r\n\"s\"\r\n",
    "é'x' ü\"y\" ß // ü",
    "/",
    "'",
    '"',
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_mask_code_matches_reference_on_edge_cases(text):
    assert mask_code(text) == reference_mask_code(text)


def test_mask_code_matches_reference_on_random_text():
    rng = random.Random(187455)
    alphabet = ['/', '*', '"', "'", "\\", "\n", "R", "u", "8", "L", "U", "(", ")", "d", "1", "a", " ", "_", "\r", "{"]
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert mask_code(text) == reference_mask_code(text), repr(text)


def test_mask_code_matches_reference_on_fixture_files():
    files = [p for p in FIXTURE_CHECKOUT.rglob("*") if p.suffix in (".h", ".mm", ".metal")]
    assert len(files) >= 15
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert mask_code(text) == reference_mask_code(text), path


def test_mask_code_matches_reference_on_real_headers(real_torch_files):
    files = sorted(real_torch_files.glob("aten/src/ATen/native/**/*.h")) + sorted(real_torch_files.glob("c10/metal/*.h"))
    assert len(list(real_torch_files.glob("aten/src/ATen/native/*.h"))) >= 43
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert mask_code(text) == reference_mask_code(text), path
