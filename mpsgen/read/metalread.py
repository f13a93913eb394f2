"""Reading a `.metal` kernel file as the Metal compiler does: its functors and registrations come
from the preprocessed file (the file's own macros and those of the headers it includes expanded,
token pasting and stringizing included), each mapped back to the line of the kernel file where it
is written.

The preprocessor is pcpp (pure Python, no C++ compiler needed). Headers are read through a caller's
`read(rel) -> text | None` (a Workspace, so edited texts count) and fed to it as their directive
lines only: a header's macros, conditionals and includes are all a kernel file can use of it, and
skipping the ~7,000 lines of C++ in `c10/metal/*.h` keeps a file's reading fast.

Functors are the `struct <name>_functor {` definitions of the expanded text (however written: the
literal text, a header macro such as `DEFINE_UNARY_FLOATING_FUNCTOR(erf)`, a file's own `#define`).
Registrations are the kernels the file instantiates, read from their `[[host_name("...")]]` strings
(adjacent literals concatenated): exactly the names the compiled library lists. A `<functor>_dense_
<out>_<in>[_<alpha>]` name is one registration of the functor for (in, out).
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable
from dataclasses import dataclass

from mpsgen.model import sha256_text
from mpsgen.read.cache import cached_index
from mpsgen.read.cpp import mask_code, match_brace

# Where `#include <...>` looks, relative to the checkout root (`<c10/metal/x.h>`, `<ATen/...>`).
INCLUDE_DIRS = ("aten/src", "")
# What the Metal compiler defines; `#if __METAL_VERSION__ >= N` paths are taken as Metal 3.1 does
# (the version mpsgen's Metal prelude declares).
PREDEFINED = {"__METAL__": "1", "__METAL_VERSION__": "310"}

_ROOT = "/@checkout"  # the include search paths pcpp sees; mapped back to checkout paths on open

# A Metal scalar or vector type name as written in a host name (`float`, `half2`, `uchar`, ...).
METAL_TYPE = r"(?:u?(?:char|short|int|long)|bool|float|half|bfloat)[234]?"
_DENSE_TYPES = re.compile(rf"({METAL_TYPE})_({METAL_TYPE})(?:_(\w+))?")
_HOST_NAME = re.compile(r"host_name\s*\(\s*((?:\"(?:[^\"\\\n]|\\.)*\"\s*)+)\)")
_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"")
_FUNCTOR_USE = re.compile(r"\b(\w+)_functor\b")
_FUNCTOR_DEF = re.compile(r"\bstruct\s+(\w+)_functor\s*(?:final\s*)?(?::[^{;]*)?\{")
_LINE_DIRECTIVE = re.compile(r"#line (\d+) \"([^\"]*)\"")


@dataclass(frozen=True)
class Functor:
    """A `struct <name>_functor` definition: the kernel-file line it is written on, and the macro
    that writes it ("" when written literally)."""

    name: str
    line: int
    macro: str = ""


@dataclass(frozen=True)
class KernelRegistration:
    """One kernel instantiated for a functor: its host name, the (input, output) Metal types, the
    alpha/params type ("" when none) and the kernel-file line of the statement that instantiates it."""

    functor: str
    input: str
    output: str
    alpha: str
    host_name: str
    line: int


@dataclass(frozen=True)
class KernelReading:
    path: str
    functors: dict[str, Functor]
    registrations: tuple[KernelRegistration, ...]
    host_names: tuple[str, ...]  # every kernel host name the file instantiates, in order
    errors: tuple[str, ...]  # what the preprocessor could not read ("line: message")
    host_name_lines: tuple[int, ...] = ()  # the kernel-file line instantiating each of host_names

    def registered(self, functor: str) -> tuple[KernelRegistration, ...]:
        return tuple(r for r in self.registrations if r.functor == functor)

    def pairs(self, functor: str) -> frozenset[tuple[str, str]]:
        """The (input, output) types `functor` is registered for."""
        return frozenset((r.input, r.output) for r in self.registrations if r.functor == functor)


@functools.lru_cache(maxsize=64)
def directive_lines(text: str, *, keep_code: bool = False, every_kernel: bool = False, compact: bool = False) -> str:
    """`text` with everything but its preprocessor directives blanked (line count kept); with
    `keep_code` the code lines stay; with `compact` the blanked lines go (a header's line numbers
    are never reported, and thousands of empty lines cost the preprocessor time). Either way a `#define` whose body instantiates kernels
    (`host_name`) is cut down to what this reader reads of it (`reduce_define`). Cached per text:
    every kernel file includes the same headers."""
    masked = mask_code(text)
    lines = text.split("\n")
    masked_lines = masked.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        code = masked_lines[i]
        if not code.lstrip().startswith("#"):
            out.append(lines[i] if keep_code else "")
            i += 1
            continue
        end = i
        while end < len(lines) - 1 and masked_lines[end].rstrip().endswith("\\"):
            end += 1
        directive = lines[i : end + 1]
        if "host_name" not in "\n".join(directive) or not _DEFINE_HEAD.match(directive[0]):
            out.extend(directive)
        else:
            reduced = reduce_define("\n".join(directive), every_kernel=every_kernel)
            out.append(reduced)
            out.extend("" for _ in directive[1:])
        i = end + 1
    if compact:
        out = [line for line in out if line.strip()]
    return "\n".join(out) + ("\n" if compact else "")


_DEFINE_HEAD = re.compile(r"\s*#\s*define\s+\w+(?:\([^)]*\))?")
_MACRO_CALL = re.compile(r"\b[A-Z_][A-Z0-9_]*\s*\(")
_FUNCTOR_TOKENS = re.compile(r"\w+\s*##\s*_functor\b|\w+_functor\b")
_STRUCT_FUNCTOR = re.compile(r"\bstruct\s+(?:\w+\s*##\s*)?\w*_functor\s*\{")


def reduce_define(directive: str, *, every_kernel: bool = False) -> str:
    """A one-line `#define` with the same name and parameters whose body keeps, in order, what
    the reader reads of an expansion: each `host_name(...)` with the functor named after it, each
    `struct ..._functor {`, each call of an upper-case macro. The registration macros of
    `c10/metal/indexing.h` are 30-60 lines of template instantiation each; expanding them in full
    for every dtype of every op is what makes a pure-Python preprocessor slow. Unless
    `every_kernel`, only the `"_dense_"` kernels are kept (the registrations; the other kernels of
    a registration, strided, broadcast, scalar, castout, ..., follow the same types), when the
    macro has any."""
    body_text = directive.replace("\\\r\n", " ").replace("\\\n", " ")
    head = _DEFINE_HEAD.match(body_text)
    body = body_text[head.end():]
    masked = mask_code(body)
    pieces: list[tuple[int, int, str]] = []  # (start, end in body, text kept)
    names = []
    for m in re.finditer(r"\bhost_name\s*\(", masked):
        close = _close_paren(masked, m.end() - 1)
        functor = _FUNCTOR_TOKENS.search(masked, close)
        piece = body[m.start() : close + 1] + (" " + body[functor.start() : functor.end()] if functor else "") + ";"
        names.append((m.start(), close + 1, piece, '"_dense_"' in body[m.start() : close + 1]))
    if not every_kernel and any(dense for *_, dense in names):
        names = [name for name in names if name[3]]
    pieces.extend(name[:3] for name in names)
    for m in _STRUCT_FUNCTOR.finditer(masked):
        pieces.append((m.start(), m.end(), body[m.start() : m.end()] + "};"))
    for m in re.finditer(r"\bhost_name\s*\(", masked):
        pieces.append((m.start(), _close_paren(masked, m.end() - 1) + 1, ""))  # never a macro call
    for m in _MACRO_CALL.finditer(masked):
        if any(start <= m.start() < end for start, end, _ in pieces):
            continue
        close = _close_paren(masked, m.end() - 1)
        pieces.append((m.start(), close + 1, body[m.start() : close + 1] + ";"))
    return head.group(0).strip() + " " + " ".join(piece for _, _, piece in sorted(pieces) if piece)


def _close_paren(masked: str, open_index: int) -> int:
    """The parenthesis closing the one at `open_index` (`cpp.match_brace`), or the text's last index."""
    close = match_brace(masked, open_index)
    return close if close >= 0 else len(masked) - 1


def read_kernel(text: str, path: str, read: Callable[[str], str | None], *, every_kernel: bool = False) -> KernelReading:
    """Functors and registrations of the kernel file `path` (checkout-relative) whose text is
    `text`; `read(rel)` gives the text of a header (None when the checkout has none).
    `host_names` holds the `_dense_` kernels only, unless `every_kernel` (slower: every kernel
    kind each registration instantiates, as the compiled library lists them)."""
    from pcpp.preprocessor import Action, OutputDirective, Preprocessor

    errors: list[str] = []

    class _Reader(Preprocessor):
        def on_file_open(self, is_system_include, includepath):
            rel = _relative(includepath)
            header = read(rel) if rel is not None else None
            if rel is not None and getattr(self, "opened", None) is not None:
                self.opened[rel] = header
            if header is None:
                raise OSError(includepath)
            return io.StringIO(directive_lines(header, every_kernel=every_kernel, compact=True))

        def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
            raise OutputDirective(Action.IgnoreAndRemove)  # <metal_stdlib> and the like

        def on_error(self, file, line, msg):
            if _relative(file) == path or file == path:
                errors.append(f"{line}: {msg}")

        def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
            # #error / #warning (a placeholder functor's): pcpp would print them on stderr under its
            # own include path; the compiler-facing checks (placeholder, metal-compile) report them
            if directive.value in ("error", "warning"):
                return True
            return None

    def preprocessor(opened: dict | None = None):
        pp = _Reader()
        pp.line_directive = "#line"
        pp.compress = 0
        for directory in INCLUDE_DIRS:
            pp.add_path(f"{_ROOT}/{directory}".rstrip("/"))
        pp.rewrite_paths = []  # keep #line names as given (not relative to the working directory)
        for name, value in PREDEFINED.items():
            pp.define(f"{name} {value}")
        pp.opened = opened
        return pp

    source = f"{_ROOT}/{path}"
    body = directive_lines(text, keep_code=True, every_kernel=every_kernel)
    block, count = _leading_includes(body)
    if count:
        # the headers a file opens with are read once per process for every file that opens
        # with the same lines (and while their texts stay the same)
        key = (block, every_kernel)
        state = _HEADER_STATES.get(key)
        if state is None or any(read(rel) != seen for rel, seen in state[2].items()):
            opened: dict[str, str | None] = {}
            first = preprocessor(opened)
            first.parse(block, source)
            first.write(io.StringIO())
            state = (dict(first.macros), dict(first.include_once), opened)
            _HEADER_STATES[key] = state
        pp = preprocessor()
        pp.macros = dict(state[0])
        pp.include_once = dict(state[1])
        body = "\n" * count + body.split("\n", count)[count] if body.count("\n") >= count else "\n" * count
    else:
        pp = preprocessor()
    pp.parse(body, source)
    out = io.StringIO()
    pp.write(out)
    expanded = out.getvalue()
    return _read_expanded(expanded, text, path, source, tuple(errors))


def read_kernel_cached(root, text: str, path: str, read: Callable[[str], str | None]) -> KernelReading:
    """`read_kernel`, kept in the user cache (`mpsgen.read.cache`) for a kernel file as the checkout
    holds it (`root`; None: an edited text, read afresh): used while the file's text and every header
    the reading looked at hash the same. A real kernel file takes the preprocessor seconds; this, ms."""
    seen: dict[str, str | None] = {}

    def recording(rel: str) -> str | None:
        header = read(rel)
        seen[rel] = header
        return header

    def build() -> dict:
        reading = read_kernel(text, path, recording)
        return {"headers": {rel: None if t is None else sha256_text(t) for rel, t in sorted(seen.items())},
                "reading": _reading_to_json(reading)}

    def valid(data: dict) -> bool:
        return all((None if (t := read(rel)) is None else sha256_text(t)) == digest
                   for rel, digest in data.get("headers", {}).items())

    return _reading_from_json(cached_index(root, path, text, f"kernel-reading-{_READING_FORMAT}", build, valid)["reading"])


_READING_FORMAT = 2  # 2: host_name_lines


def _reading_to_json(reading: KernelReading) -> dict:
    return {"path": reading.path, "functors": [[f.name, f.line, f.macro] for f in reading.functors.values()],
            "registrations": [[r.functor, r.input, r.output, r.alpha, r.host_name, r.line] for r in reading.registrations],
            "host_names": list(reading.host_names), "errors": list(reading.errors),
            "host_name_lines": list(reading.host_name_lines)}


def _reading_from_json(data: dict) -> KernelReading:
    return KernelReading(data["path"], {name: Functor(name, line, macro) for name, line, macro in data["functors"]},
                         tuple(KernelRegistration(*r) for r in data["registrations"]), tuple(data["host_names"]),
                         tuple(data["errors"]), tuple(data["host_name_lines"]))


_HEADER_STATES: dict = {}  # (leading include lines, every_kernel) -> (macros, include_once, {rel: text})
_LEADING = re.compile(r"(?:[ \t]*(?:#[ \t]*(?:include|pragma)\b[^\n]*|//[^\n]*)?\n)*")


def _leading_includes(text: str) -> tuple[str, int]:
    """The lines a file opens with that are only includes, pragmas, comments or blank (the text
    and its line count); ("", 0) when they include nothing."""
    block = _LEADING.match(text).group(0)
    if "include" not in block:
        return "", 0
    return block, block.count("\n")


def _relative(fullpath: str) -> str | None:
    prefix = _ROOT + "/"
    return fullpath[len(prefix):] if fullpath.startswith(prefix) else None


def _read_expanded(expanded: str, text: str, path: str, source: str, errors: tuple[str, ...]) -> KernelReading:
    """Walk the preprocessed text keeping the (file, line) of each output line; collect what the
    kernel file itself expands to."""
    lines = expanded.split("\n")
    origin: list[int] = []  # kernel-file line of each output line (0: a header's)
    current_file, current_line = "", 0
    for line in lines:
        m = _LINE_DIRECTIVE.fullmatch(line.strip())
        if m:
            current_line, current_file = int(m.group(1)), m.group(2)
            origin.append(0)
            continue
        origin.append(current_line if current_file in (source, path) else 0)
        current_line += 1
    own = "\n".join(line if origin[i] else "" for i, line in enumerate(lines))
    offsets = _line_starts(own)

    def line_of(offset: int) -> int:
        import bisect

        return origin[bisect.bisect_right(offsets, offset) - 1]

    source_lines = text.split("\n")
    functors: dict[str, Functor] = {}
    for m in _FUNCTOR_DEF.finditer(own):
        line = line_of(m.start())
        written = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
        macro = "" if re.search(rf"\bstruct\s+{re.escape(m.group(1))}_functor\b", written) else _macro_called(written)
        functors.setdefault(m.group(1), Functor(m.group(1), line, macro))
    registrations = []
    names = []
    name_lines = []
    for m in _HOST_NAME.finditer(own):
        name = "".join(_STRING.findall(m.group(1)))
        names.append(name)
        name_lines.append(line_of(m.start()))
        after = _FUNCTOR_USE.search(own, m.end())
        if after is None:
            continue
        functor = after.group(1)
        prefix = f"{functor}_dense_"
        if not name.startswith(prefix):
            continue
        types = _DENSE_TYPES.fullmatch(name[len(prefix):])
        if types is None:
            continue
        registrations.append(KernelRegistration(functor, types.group(2), types.group(1), types.group(3) or "", name,
                                                line_of(m.start())))
    return KernelReading(path, functors, tuple(registrations), tuple(names), errors, tuple(name_lines))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _macro_called(line: str) -> str:
    m = re.match(r"\s*(\w+)\s*\(", line)
    return m.group(1) if m else ""
