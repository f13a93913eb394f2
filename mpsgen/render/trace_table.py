"""`mpsgen trace` for a terminal: one rich table, then the totals (no colour under NO_COLOR)."""

from __future__ import annotations

from mpsgen.commands.trace.analysis import TraceReport
from mpsgen.render.mode import console as make_console
from mpsgen.render.trace_rows import HEADER, RIGHT, closing_lines, rows, status_line, title


def render_trace(report: TraceReport) -> None:
    from rich.table import Table

    console = make_console()
    status = status_line(report)
    if status:
        console.print(status, style="yellow", markup=False)
    table = Table(title=title(report), title_justify="left")
    body = rows(report)
    for i, column in enumerate(HEADER):
        if column == "reason":
            table.add_column(column, overflow="fold")
        else:  # short words and counts: kept on one line
            width = max(len(column), *(len(row[i]) for row in body)) if body else len(column)
            table.add_column(column, justify="right" if i in RIGHT else "left", min_width=width)
    for row in body:
        table.add_row(*row, style="bold" if row[2] == "mpsgraph" else None)
    console.print(table)
    for line in closing_lines(report):
        console.print(line, markup=False)
