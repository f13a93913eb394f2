"""A `ScanReport` for a terminal: rich tables of the candidates, the backings and the host files."""

from __future__ import annotations

from mpsgen.render.scan_rows import candidate_rows, file_rows, summary_rows
from mpsgen.scan import ScanReport


def render_scan(report: ScanReport, candidates: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if candidates:
        table = Table(title="Candidates for mpsgen migrate, easiest first", title_justify="left")
        for column in ("#", "op", "tier", "backing", "implementation", "lines", "graph", "xfails", "reason"):
            numeric = column in ("#", "lines", "graph", "xfails")
            table.add_column(column, justify="right" if numeric else "left", no_wrap=column != "reason")
        for rank, op, tier, backing, where, lines, graph, _stub, xfails, reason in candidate_rows(report):
            table.add_row(rank, op, tier, backing, where.rsplit("/", 1)[-1], lines, graph, xfails, reason)
        console.print(table)
    table = Table(title=f"MPS backing of {len(report.ops)} operators", title_justify="left")
    for column in ("backing", "meaning", "ops", "graph sites in kernels"):
        table.add_column(column, justify="left" if column in ("backing", "meaning") else "right")
    for row in summary_rows(report):
        table.add_row(*row)
    console.print(table)
    tiers = {t: sum(1 for r in report.ops if r.candidate and r.candidate.tier == t) for t in ("ready", "expr", "port")}
    console.print(f"candidates: {tiers['ready']} ready, {tiers['expr']} need --expr, {tiers['port']} need a hand-written port"
                  + ("" if candidates else " (mpsgen scan --candidates lists them)"))
    table = Table(title=f"Graph sites per host file ({report.graph_sites} in all)", title_justify="left")
    for column in ("host file", "graph sites", "MPSGraph kernels", "other MPS kernels"):
        table.add_column(column, justify="left" if column == "host file" else "right")
    for row in file_rows(report):
        table.add_row(*row)
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
