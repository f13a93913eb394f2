"""Plain text for logs: tables as aligned columns with every cell whole (no truncation, no wrapping
inside a cell, no box-drawing), one record per line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def one_line(text: str) -> str:
    """`text` on one line: line breaks become spaces, so a record never spans lines."""
    return " ".join(text.splitlines()) if "\n" in text or "\r" in text else text


def aligned(header: Sequence[str], rows: Iterable[Sequence[str]], *, right: Iterable[int] = ()) -> list[str]:
    """The header and rows as lines of columns two spaces apart, each column as wide as its widest
    cell; columns in `right` are right-aligned. Trailing spaces are dropped."""
    table = [[one_line(cell) for cell in header]] + [[one_line(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    right = set(right)
    lines = []
    for row in table:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines
