"""`mpsgen bench` as rich tables, for a terminal: the cells of `render.bench_text`, slower rows in red."""

from __future__ import annotations

from mpsgen.render.bench_text import (SLOWER, compare_footer, compare_heading, compare_table, header_lines,
                                      memory_lines, memory_table, run_table)
from mpsgen.render.mode import colour_allowed


def _table(title: str, header: list[str], rows: list[list[str]], styles: list[str | None] | None = None):
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title), title_justify="left")
    for i, name in enumerate(header):
        numeric = "µs" in name or name in ("GB/s", "speedup") or name.startswith(("GB/s", "mem/", "new shapes")) \
            or name.endswith("per new shape")
        # every cell but a note whole, however narrow the terminal: a truncated figure is a wrong one
        whole = max([len(name)] + [len(row[i]) for row in rows]) if name != "note" else None
        table.add_column(escape(name), justify="right" if numeric else "left", no_wrap=name != "note", min_width=whole)
    for row, style in zip(rows, styles or [None] * len(rows)):
        table.add_row(*(escape(c) for c in row), style=style)
    return table


def _console():
    """Forced rich (`--format rich` through a pipe too); off a terminal as wide as the tables need."""
    import sys

    from rich.console import Console

    return Console(force_terminal=True, color_system="auto" if colour_allowed() else None, highlight=False,
                   soft_wrap=True, width=None if sys.stdout.isatty() else 240)


def render_run(record) -> None:
    from rich.markup import escape

    out = _console()
    for line in header_lines(record):
        out.print(escape(line))
    if record.rows:
        out.print(_table(f"mpsgen bench {record.op} ({record.device})", *run_table(record)))
    if record.memory:
        out.print(_table("memory growth per new shape (a varying-shape sweep)", *memory_table(record)))
        for line in memory_lines(record):
            out.print(escape(line), style="dim")


def render_compare(cmp) -> None:
    from rich.markup import escape

    out = _console()
    for line in compare_heading(cmp):
        out.print(escape(line))
    header, rows = compare_table(cmp)
    at = header.index("speedup")
    out.print(_table(f"{cmp.op}: before / after", header, rows, ["red" if r[at].endswith(SLOWER) else None for r in rows]))
    for line in compare_footer(cmp):
        out.print(escape(line), style="red" if SLOWER in line and "no row" not in line else None)
