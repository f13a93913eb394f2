"""verify's `format` check: would clang-format, by the checkout's `.clang-format`, rewrite any line
that belongs to the op (its functor and `REGISTER_*` lines in the .metal file, its host function and
`REGISTER_DISPATCH` line in the .mm file)?

Each file is formatted whole, once (as PyTorch's linter does), and only the replacements that touch
the op's lines count."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from mpsgen.edit.clangformat import ASSUMED_SUFFIX, Formatter, Replacement, lines_to_rewrite, replacements
from mpsgen.model import Location


@dataclass(frozen=True)
class FormatProblem:
    location: Location
    message: str
    hint: str


def op_line_ranges(views, facts) -> dict[str, list[tuple[int, int]]]:
    """path -> 1-based inclusive line ranges of the op's own code (`mpsgen.facts.views` views and facts)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    functor = facts.host.kernel if facts.host is not None else None
    for rel in facts.kernel_files:
        index = views.lines(rel)
        kernel = views.kernel(rel)
        if functor in kernel.functors:
            start, end = kernel.functors[functor]
            ranges.setdefault(rel, []).append((index.line_of(start), index.line_of(max(start, end - 1))))
        for registration, past_line in kernel.file.registrations:
            if registration.args[:1] == (functor,):
                line = index.line_of(past_line - 1)
                ranges.setdefault(rel, []).append((line, line))
        for line in sorted({reg.line for reg in kernel.reading.registered(functor)}):
            ranges.setdefault(rel, []).append((line, line))
    if facts.host is not None:
        host = facts.host
        last = host.body_line + host.body.count("\n")
        ranges.setdefault(host.location.path, []).append((host.location.line, last))
    for registration in facts.registrations:
        line = registration.location.line
        ranges.setdefault(registration.location.path, []).append((line, line))
    return {rel: sorted(set(spans)) for rel, spans in ranges.items()}


def format_problems(root: Path, texts: dict[str, str], ranges: dict[str, list[tuple[int, int]]]) -> list[FormatProblem] | str:
    """One problem per line of `ranges` that clang-format would rewrite, or the reason the check
    cannot run (no `.clang-format` in the checkout, no clang-format executable)."""
    formatter = Formatter.for_checkout(root)
    if formatter.reason is not None:
        return formatter.reason
    problems = []
    for rel, spans in sorted(ranges.items()):
        if Path(rel).suffix not in ASSUMED_SUFFIX:
            continue
        text = texts[rel]
        style = formatter.style.read_text(encoding="utf-8")
        found = _whole_file_replacements(formatter.executable, str(formatter.style), style, rel, text)
        wanted = {line for a, b in spans for line in range(a, b + 1)}
        for line in lines_to_rewrite(text, list(found)):
            if line in wanted:
                problems.append(FormatProblem(
                    Location(rel, line),
                    "clang-format would rewrite this line",
                    f"run clang-format -i --lines={line}:{line} {rel} (the checkout's .clang-format)",
                ))
    return problems


@functools.lru_cache(maxsize=32)
def _whole_file_replacements(executable: str, style_path: str, style_text: str, rel: str, text: str) -> tuple[Replacement, ...]:
    """Every replacement clang-format makes in the whole file. Memoised on the inputs themselves
    (style text and file text included), so one verify run formats each file once."""
    del style_text  # part of the key only
    line_count = text.count("\n") + 1
    return tuple(replacements(text, [(1, line_count)], executable=executable, style=Path(style_path), rel=rel))
