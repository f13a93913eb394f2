"""Metal source made host-C++ compilable: same-line rewrites on a copy, and the copy's include tree.

Every rewrite replaces text within one line, so line numbers never move; each copied file starts
with a `#line 1 "<path in the checkout>"` directive, so the compiler names the real file and line.
Comments and string literals are never touched (they are found with `cpp.mask_code`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mpsgen.read.cpp import mask_code, match_brace, split_top_level

# A floating literal without a suffix: `0.5`, `.5`, `1.`, `1e-5`, `2.5e3`. Metal reads these as
# float; a host compiler reads them as double. Hex floats (`0x1.8p3`) are left alone (they start
# with `0x`, so the digits before the dot follow a word character).
UNSUFFIXED_FLOAT = re.compile(
    r"(?<![\w.])(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])"
)
# Metal's half literals: `1.5h`, `2h`.
_HALF_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+)h\b")
# Swizzles read as data members in Metal (`v.zw`); the prelude has them as methods (`v.zw()`).
_SWIZZLE = re.compile(r"(?<=[\w)\]])(\s*\.\s*)([xyzw]{2,4})\b(?!\s*\()")
# `constant const char*`, `static constant constexpr const T`: the address space is `const` in the
# prelude; a second const in the same declaration's specifiers is an error. Macro bodies too.
_SPECIFIERS = r"((?:[ \t]+(?:constexpr|static|inline|volatile)\b)*)"
_CONSTANT_CONST = re.compile(rf"\bconstant\b{_SPECIFIERS}[ \t]+const\b|\bconst\b{_SPECIFIERS}[ \t]+constant\b")
_DIRECTIVE = re.compile(r"^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def _code_spans(masked: str) -> str:
    """The masked text with preprocessor directives blanked too (their numbers are not code)."""
    return _DIRECTIVE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), masked)


def double_literals(text: str) -> list[tuple[int, str]]:
    """(line, literal) of every unsuffixed floating literal in code (not comments, strings or
    preprocessor directives)."""
    code = _code_spans(mask_code(text))
    return [(code.count("\n", 0, m.start()) + 1, m.group(0)) for m in UNSUFFIXED_FLOAT.finditer(code)]


def _attribute_lists(masked: str) -> list[tuple[int, int]]:
    """Spans of `[[...]]` attribute lists in code, macro bodies included."""
    spans = []
    start = masked.find("[[")
    while start >= 0:
        depth, i = 0, start
        while i < len(masked):
            if masked[i] == "[":
                depth += 1
            elif masked[i] == "]":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        if depth != 0:
            break
        spans.append((start, i + 1))
        start = masked.find("[[", i + 1)
    return spans


_KEEP_IN_BLANKS = re.compile(r"\\\r?\n|\n")


def _blank(text: str) -> str:
    """`text` as spaces, keeping its newlines and line continuations (so lines do not move)."""
    out, done = [], 0
    for m in _KEEP_IN_BLANKS.finditer(text):
        out.append(" " * (m.start() - done) + m.group(0))
        done = m.end()
    out.append(" " * (len(text) - done))
    return "".join(out)


_EXPLICIT_SPECIALIZATION = re.compile(r"\btemplate\s*<\s*>")
_CLASS_HEAD = re.compile(r"\b(?:struct|class|union)\b")
# The explicit template arguments of a specialized member function: `operator()<bool>(`, `f<int>(`.
_SPECIALIZED_NAME = re.compile(r"(?:\boperator\s*\(\s*\)|\boperator\s*[^\s\w(]+|\b\w+)\s*(<[^<>;{}()]*(?:<[^<>;{}()]*>[^<>;{}()]*)*>)\s*\(")


def _class_scopes(code: str) -> list[tuple[int, int]]:
    """Spans of `{...}` bodies of struct/class/union definitions in code (directives blanked)."""
    spans, stack = [], []
    head_start = 0
    for brace in _SCOPE_MARKS.finditer(code):  # only braces and semicolons matter: skip the rest at C speed
        i, c = brace.start(), brace.group()
        if c == "{":
            head = code[head_start:i]
            stack.append((i, bool(_CLASS_HEAD.search(head)) and "(" not in head and "namespace" not in head))
            head_start = i + 1
        elif c == "}":
            if stack:
                start, is_class = stack.pop()
                if is_class:
                    spans.append((start, i))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return spans


def _in_class_specializations(code: str) -> list[tuple[int, int]]:
    """What to blank so that an explicit specialization of a member function template written in
    its class (`template <> inline bool operator()(const bool x)`, valid C++17 that clang and
    Metal accept, g++ does not) becomes an overload of it: `template <>`, and explicit template
    arguments after the name. The overload is picked where the specialization would be."""
    found = [m for m in _EXPLICIT_SPECIALIZATION.finditer(code)]
    if not found:
        return []
    scopes = _class_scopes(code)
    out = []
    for m in found:
        inner = [(a, b) for a, b in scopes if a < m.start() < b]
        if not inner:
            continue
        innermost = max(inner)
        # directly in the class body, not inside a member function's body
        nested = [(a, b) for a, b in _brace_spans(code, innermost) if a < m.start() < b]
        if nested:
            continue
        stop = min((k for k in (code.find("{", m.end()), code.find(";", m.end())) if k >= 0), default=len(code))
        declaration = code[m.end():stop]
        if _CLASS_HEAD.search(declaration):
            continue  # a class template specialization: left to the compiler
        out.append((m.start(), m.end()))
        name = _SPECIALIZED_NAME.search(declaration)
        if name:
            out.append((m.end() + name.start(1), m.end() + name.end(1)))
    return out


def _brace_spans(code: str, scope: tuple[int, int]) -> list[tuple[int, int]]:
    """Spans of the brace pairs directly or deeper inside `scope` (not `scope` itself)."""
    spans, stack = [], []
    for i in range(scope[0] + 1, scope[1]):
        if code[i] == "{":
            stack.append(i)
        elif code[i] == "}" and stack:
            spans.append((stack.pop(), i))
    return spans


# Metal's address spaces, which the prelude erases (`constant` becomes `const`, the rest vanish).
_ADDRESS_SPACE = re.compile(r"\b(?:device|constant|thread|threadgroup|threadgroup_imageblock|ray_data|object_data)\b")
_ERASED = re.compile(r"\b(?:device|thread|threadgroup|threadgroup_imageblock|ray_data|object_data)\b")
_NOT_A_FUNCTION = re.compile(r"^\s*(?:if|for|while|switch|catch|do|else|return|namespace|struct|class|union|enum)\b|=\s*$")
_FUNCTION_HEAD = re.compile(r"(?P<name>~?\b\w+|\boperator\s*(?:\(\s*\)|[^\s\w(]+))\s*\((?P<params>.*)\)\s*(?:const\b\s*)?(?:noexcept\b\s*)?$", re.S)


_CLASS_SPECIALIZATION = re.compile(r"\b(?:struct|class|union)\s+(?P<name>\w+)\s*<(?P<params>.*)>\s*(?::[^{]*)?$", re.S)


def _params_key(params: str, named: bool = True) -> tuple[str, ...]:
    """Each parameter's type, address spaces as the prelude has them, names (when `named`: function
    parameters, not template arguments) and defaults dropped."""
    out = []
    for piece in split_top_level(params, "<([{", ">)]}"):
        piece = piece.split("=", 1)[0]
        piece = _ERASED.sub(" ", piece).replace("constant", "const")
        words = re.findall(r"\w+|[^\s\w]", piece)
        if named and len(words) > 1 and re.fullmatch(r"\w+", words[-1]) and words[-2] not in ("const", "unsigned", "signed", "long", "short"):
            words = words[:-1]  # the parameter's name
        words = [w for w in words if w != "const"] + ["const"] * words.count("const")
        out.append(" ".join(words))
    return tuple(p for p in out if p)


def _address_space_twins(code: str) -> list[tuple[int, int]]:
    """Spans of function definitions that repeat an earlier definition in the same scope once
    address spaces are erased, and differ from it only in them: `T f(constant void* p)` and
    `T f(device const void* p)` are two overloads in Metal and one function on the host (2.15's
    c10/metal/indexing.h val_at_offs); so are `S<thread T*>` and `S<device T*>`, partial
    specializations of a class template (2.15's PrefillAttention.h). The later one is dropped: on the host there is one memory,
    and calls that picked either pick the first. A definition repeated with the same address
    spaces is left for the compiler to report."""
    seen: dict[tuple, str] = {}
    spans = []
    stack: list[int] = []
    head_start = 0
    i = 0
    for mark in _SCOPE_MARKS.finditer(code):  # only braces and semicolons matter: skip the rest at C speed
        if mark.start() < i:
            continue  # inside a twin already blanked
        i, c = mark.start(), mark.group()
        if c == "{":
            head = code[head_start:i]
            m = _CLASS_SPECIALIZATION.search(head)
            named = m is None
            if m is None:
                m = _FUNCTION_HEAD.search(head)
                if m and (_NOT_A_FUNCTION.search(head) or "(" in m.group("name")):
                    m = None
            if m:
                before = head[: m.start()]
                template = re.sub(r"\s+", " ", before[before.rfind("template"):] if "template" in before else "")
                key = (stack[-1] if stack else -1, named, template.split(">")[0] if template else "", m.group("name"),
                       _params_key(m.group("params"), named))
                spelled = " ".join(_ADDRESS_SPACE.findall(m.group("params")))
                if key in seen and seen[key] != spelled:
                    end = match_brace(code, i)
                    if end >= 0:
                        start = head_start + len(head) - len(head.lstrip())
                        spans.append((start, end + 1))
                        i = end + 1
                        head_start = i
                        continue
                seen.setdefault(key, spelled)
            stack.append(i)
            head_start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            head_start = i + 1
        else:  # ";"
            head_start = i + 1
    return spans


_SCOPE_MARKS = re.compile(r"[{};]")


@functools.lru_cache(maxsize=128)  # a pure function of the text; headers recur in every compile
def rewrite_metal(text: str) -> str:
    """`text` with Metal-only spellings turned into what the prelude understands, every change
    inside one line: `0.5` -> `0.5f`, `1.5h` -> `1.5_mpsgen_h`, `v.zw` -> `v.zw()`,
    `constant const` -> `constant`, an explicit specialization of a member function written in its
    class turned into an overload (`template <>` blanked: g++ refuses it there), a function
    definition that only repeats an earlier one once address spaces are erased blanked
    (`_address_space_twins`), and attribute
    lists (`[[buffer(0)]]`, `[[host_name("x")]]`) blanked: they mean nothing to the host compiler,
    and clang refuses one after `template` in an explicit instantiation."""
    masked = mask_code(text)
    code = _code_spans(masked)
    edits: list[tuple[int, int, str]] = [(a, b, _blank(text[a:b])) for a, b in _attribute_lists(masked)]
    for m in _HALF_LITERAL.finditer(code):
        edits.append((m.start(), m.end(), m.group(1) + "_mpsgen_h"))
    for m in UNSUFFIXED_FLOAT.finditer(code):
        edits.append((m.end(), m.end(), "f"))
    for m in _SWIZZLE.finditer(code):
        edits.append((m.end(), m.end(), "()"))
    for m in _CONSTANT_CONST.finditer(masked):
        edits.append((m.start(), m.end(), "constant" + (m.group(1) or m.group(2) or "")))
    for start, end in _in_class_specializations(code):
        edits.append((start, end, _blank(text[start:end])))
    for start, end in _address_space_twins(code):
        edits.append((start, end, _blank(text[start:end])))
    edits.sort()
    out: list[str] = []
    done = 0
    for start, end, new in edits:
        if start < done:
            continue  # overlapping matches (cannot happen for well-formed numbers); keep the first
        out.append(text[done:start])
        out.append(new)
        done = end
    out.append(text[done:])
    return "".join(out)


@dataclass(frozen=True)
class CopiedTree:
    """Rewritten copies of a file and of every checkout header it includes, under `directory`."""

    directory: Path
    main: Path
    files: tuple[str, ...]


def include_roots(root: Path) -> tuple[Path, ...]:
    """Where `#include <...>` lines of kernel files find checkout headers: the checkout root
    (`c10/metal/...`) and `aten/src` (`ATen/native/mps/...`)."""
    return (root, root / "aten" / "src")


def includes(text: str) -> list[tuple[str, str]]:
    """(`<` or `"`, name) of the file's #include lines, outside comments."""
    masked = mask_code(text)
    found = []
    for m in _INCLUDE.finditer(masked):
        # The masked text blanks a quoted name; read it from the original text.
        original = _INCLUDE.match(text, m.start())
        if original:
            found.append((original.group(1), original.group(2).strip()))
    return found


def _resolve(root: Path, including: str, kind: str, name: str, planned: frozenset[str] = frozenset()) -> str | None:
    candidates = []
    if kind == '"':
        candidates.append(root / Path(including).parent / name)
    candidates.extend(base / name for base in include_roots(root))
    for path in candidates:
        if path.is_file() or (planned and _rel(root, path) in planned):
            try:
                return path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                return None
    return None


def _rel(root: Path, path: Path) -> str | None:
    try:
        return Path(os.path.normpath(path)).relative_to(Path(os.path.normpath(root))).as_posix()
    except ValueError:
        return None


def copy_tree(root: Path, rel_path: str, directory: Path, main_text: str | None = None,
              texts: Mapping[str, str] | None = None) -> CopiedTree:
    """Copy `rel_path` and the checkout headers it includes (transitively) into `directory`, each
    rewritten with `rewrite_metal` and headed by a `#line` directive naming its checkout path.
    Headers the checkout does not have (`<metal_stdlib>`) are left to the prelude's include path.
    `texts`: files as planned (rel -> text), read in place of the checkout's (new ones too)."""
    texts = dict(texts or {})
    if main_text is not None:
        texts[rel_path] = main_text
    planned = frozenset(texts)
    seen: list[str] = []
    queue = [rel_path]
    while queue:
        rel = queue.pop()
        if rel in seen:
            continue
        seen.append(rel)
        text = texts[rel] if rel in texts else (root / rel).read_text(encoding="utf-8", errors="replace")
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'#line 1 "{rel}"\n' + rewrite_metal(text), encoding="utf-8")
        for kind, name in includes(text):
            found = _resolve(root, rel, kind, name, planned)
            if found is not None and found not in seen:
                queue.append(found)
    return CopiedTree(directory, directory / rel_path, tuple(seen))
