"""A `ScanReport` for a terminal: rich tables of the candidates, the backings and the host files\n(no colour under NO_COLOR)."""

from __future__ import annotations

from mpsgen.commands.scanreport import ScanReport
from mpsgen.render.mode import console as make_console
from mpsgen.render.scan_rows import candidate_rows, candidates_line, file_rows, summary_rows


def render_scan(report: ScanReport, candidates: bool) -> None:
    """Print the tables; a cell too long for the terminal folds onto the next line, never cut."""
    from rich.table import Table

    console = make_console()
    if candidates:
        header = ("#", "op", "tier", "backing", "implementation", "lines", "graph", "xfails", "reason")
        rows = [(rank, op, tier, backing, where.rsplit("/", 1)[-1], lines, graph, xfails, reason)
                for rank, op, tier, backing, where, lines, graph, _stub, xfails, reason in candidate_rows(report)]
        table = Table(title="Candidates for mpsgen migrate, easiest first", title_justify="left")
        for i, column in enumerate(header):
            if column in ("op", "implementation", "reason"):
                table.add_column(column, overflow="fold")
            else:  # short words: kept on one line, never folded
                width = max(len(column), *(len(row[i]) for row in rows)) if rows else len(column)
                table.add_column(column, justify="left" if column in ("tier", "backing") else "right", min_width=width)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    table = Table(title=f"MPS backing of {len(report.ops)} operators", title_justify="left")
    for column in ("backing", "meaning", "ops", "graph sites in kernels"):
        table.add_column(column, justify="left" if column in ("backing", "meaning") else "right", overflow="fold")
    for row in summary_rows(report):
        table.add_row(*row)
    console.print(table)
    console.print(candidates_line(report, listed=candidates), markup=False)
    table = Table(title=f"Graph sites per host file ({report.graph_sites} in all)", title_justify="left")
    for column in ("host file", "graph sites", "MPSGraph kernels", "other MPS kernels"):
        table.add_column(column, justify="left" if column == "host file" else "right", overflow="fold")
    for row in file_rows(report):
        table.add_row(*row)
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
