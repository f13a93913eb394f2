"""clang-format on the lines mpsgen adds, by the checkout's own `.clang-format`, and nowhere else.

clang-format is asked for its replacements (`--output-replacements-xml`) restricted to the added
line ranges (`--lines=A:B`); only replacements that lie wholly inside those lines are applied, so
every byte outside them stays as it was even where clang-format would like to touch a neighbour.
The executable is the one the `clang-format` Python package ships (a dependency of mpsgen, so the
version is the one mpsgen was installed with), else `clang-format` on PATH. Formatting is not
optional: without an executable, commands that write stop before writing (exit 2); only a checkout
without a `.clang-format` gets its added lines as the templates write them, with a note."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from mpsgen.edit.apply import text_opcodes
from mpsgen.errors import MpsgenError
from mpsgen.read.cpp import mask_code
from mpsgen.model import Location
from mpsgen.read.cache import cached_result, executable_identity
from mpsgen.textedit import LineIndex, replace_spans

# Files clang-format formats, and the name it is told to assume for each (it has no idea of Metal:
# PyTorch lints .metal files as C++).
ASSUMED_SUFFIX = {".metal": ".cpp", ".h": ".h", ".cpp": ".cpp", ".cc": ".cpp", ".cu": ".cu", ".mm": ".mm", ".m": ".m"}
STYLE_FILES = (".clang-format", "_clang-format")
INSTALL_HINT = "reinstall mpsgen: clang-format is one of its dependencies"
TIMEOUT_S = 60


@dataclass(frozen=True)
class Replacement:
    """One change clang-format asks for: `length` characters at `offset` become `text`."""

    offset: int
    length: int
    text: str


class ClangFormatError(Exception):
    """clang-format could not be run, or did not understand its input."""


def find_executable() -> str | None:
    """The binary of the `clang-format` Python package, else `clang-format` on PATH, else None."""
    try:
        import clang_format
    except ImportError:
        return shutil.which("clang-format")
    path = Path(clang_format.get_executable("clang-format"))
    return str(path) if path.is_file() else shutil.which("clang-format")


def find_style(root: Path) -> Path | None:
    """The checkout's own `.clang-format` (or `_clang-format`) at its root."""
    for name in STYLE_FILES:
        if (Path(root) / name).is_file():
            return Path(root) / name
    return None


# Objective-C in a header (OperationUtils.h's `@autoreleasepool` blocks): PyTorch formats such a
# header as Objective-C (its style's `Language: ObjC` section: 120 columns), as its .mm files
_OBJC_HEADER = re.compile(r"@(?:autoreleasepool|interface|implementation|protocol|end)\b")


def assumed_suffix(rel: str, text: str) -> str:
    """The suffix clang-format is told the file has: by its own, a header holding Objective-C `.mm`."""
    suffix = ASSUMED_SUFFIX.get(Path(rel).suffix, ".cpp")
    if suffix == ".h" and _OBJC_HEADER.search(mask_code(text)):
        return ".mm"
    return suffix


def formats(rel: str) -> bool:
    """Whether clang-format handles this file (C++, Objective-C++, Metal)."""
    return Path(rel).suffix in ASSUMED_SUFFIX


def added_line_ranges(before: str, after: str) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of `after` that are not in `before`: the `+` lines of the diff."""

    return [(j1 + 1, j2) for tag, _i1, _i2, j1, j2 in text_opcodes(before, after) if tag in ("insert", "replace") and j2 > j1]


def replacements(text: str, ranges: list[tuple[int, int]], *, executable: str, style: Path, rel: str) -> list[Replacement]:
    """What clang-format would change on `ranges` of `text` (offsets in characters of `text`),
    keeping only replacements inside those lines."""
    if not ranges:
        return []
    assumed = "mpsgen-input" + assumed_suffix(rel, text)
    argv = [executable, f"--style=file:{style}", f"--assume-filename={assumed}", "--output-replacements-xml"]
    argv += [f"--lines={a}:{b}" for a, b in ranges]
    data = text.encode("utf-8")

    def run() -> dict:
        try:
            result = subprocess.run(argv, input=data, capture_output=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClangFormatError(f"cannot run {executable}: {exc}") from None
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip().splitlines()[:1] or [f"exit code {result.returncode}"]
            raise ClangFormatError(f"{Path(executable).name} failed on {rel}: {message[0]}")
        return {"xml": result.stdout.decode("utf-8", "surrogateescape")}

    # the same text, lines, style and clang-format give the same replacements: kept in the user
    # cache (a dry run, then the run; a failed run is not kept)
    identity = executable_identity(executable)
    try:
        settings = Path(style).read_bytes()
    except OSError:
        settings = None  # clang-format itself says what is wrong with it
    kept = cached_result("clang-format", [identity, settings, *argv[1:], data], run) \
        if identity is not None and settings is not None else run()
    try:
        root = ElementTree.fromstring(kept["xml"].encode("utf-8", "surrogateescape"))
    except ElementTree.ParseError as exc:
        raise ClangFormatError(f"cannot read clang-format's replacements for {rel}: {exc}") from None
    spans = _byte_spans(data, ranges)
    out = []
    for node in root.iter("replacement"):
        offset, length = int(node.get("offset", "0")), int(node.get("length", "0"))
        new = node.text or ""
        old = data[offset : offset + length].decode("utf-8")
        if old == new or not any(lo <= offset and offset + length <= hi for lo, hi in spans):
            continue
        out.append(Replacement(len(data[:offset].decode("utf-8")), len(old), new))
    return out


def _byte_spans(data: bytes, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte offsets [start of line A, end of line B including its newline) for each range."""
    starts = [0]
    pos = data.find(b"\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1)
    def start(line: int) -> int:
        return starts[line - 1] if line - 1 < len(starts) else len(data)
    return [(start(a), start(b + 1)) for a, b in ranges]


def apply_replacements(text: str, found: list[Replacement]) -> str:
    return replace_spans(text, [(r.offset, r.offset + r.length, r.text) for r in found])


def lines_to_rewrite(text: str, found: list[Replacement]) -> list[int]:
    """The 1-based lines of `text` that the replacements touch."""

    index = LineIndex(text)
    lines: set[int] = set()
    for r in found:
        old, new = text[r.offset : r.offset + r.length], r.text
        # what old and new share at either end is not rewritten: a replacement of "\n  " by
        # "\n    " re-indents the next line and leaves the line it starts on alone
        head = len(_common_prefix(old, new))
        tail = len(_common_prefix(old[head:][::-1], new[head:][::-1]))
        start, end = r.offset + head, r.offset + r.length - tail
        first = index.line_of(start)
        last = index.line_of(max(start, end - 1))
        lines.update(range(first, last + 1))
    return sorted(lines)


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


@dataclass(frozen=True)
class Formatter:
    """clang-format as one checkout wants it: its executable and the checkout's style file, or the
    reason it cannot run (then `reason` says why and nothing is formatted)."""

    executable: str | None
    style: Path | None

    @classmethod
    def for_checkout(cls, root: Path) -> Formatter:
        style = find_style(root)
        return cls(find_executable() if style is not None else None, style)

    @property
    def reason(self) -> str | None:
        if self.style is None:
            return "the checkout has no .clang-format at its root"
        if self.executable is None:
            return f"no clang-format executable found ({INSTALL_HINT})"
        return None

    def format_added(self, rel: str, before: str, after: str) -> str:
        """`after` with clang-format applied to the lines that are not in `before`."""
        if self.reason is not None or not formats(rel):
            return after
        ranges = added_line_ranges(before, after)
        found = replacements(after, ranges, executable=self.executable, style=self.style, rel=rel)
        return apply_replacements(after, found) if found else after


def format_planned_texts(root: Path, texts: dict[str, tuple[str, str]]) -> tuple[dict[str, str], str | None]:
    """The planned after-texts (`rel -> (before, after)`) with their added C++/Metal/Objective-C++
    lines formatted by the checkout's `.clang-format`, and a note when the checkout has none (then the
    lines stay as the templates write them). No clang-format executable, or one that fails, is an
    error: nothing is written unformatted.
    Files clang-format does not handle, and files with nothing added, come back unchanged."""
    candidates = {rel: pair for rel, pair in texts.items() if formats(rel) and added_line_ranges(*pair)}
    out = {rel: after for rel, (_before, after) in texts.items()}
    if not candidates:
        return out, None
    formatter = Formatter.for_checkout(root)
    if formatter.style is None:
        return out, f"added C++/Metal lines left as the templates write them: {formatter.reason}"
    if formatter.executable is None:
        raise MpsgenError("no clang-format executable found to format the added lines by the checkout's .clang-format",
                          location=Location(str(formatter.style), 1), hint=INSTALL_HINT)
    for rel, (before, after) in candidates.items():
        try:
            out[rel] = formatter.format_added(rel, before, after)
        except ClangFormatError as exc:
            raise MpsgenError(f"cannot format the lines added to {rel}: {exc}", location=Location(rel, 1),
                              hint="check the checkout's .clang-format with clang-format --dump-config") from None
    return out, None
