"""`mpsgen try`'s report as rich tables, for a terminal."""

from __future__ import annotations

from mpsgen.render.try_text import coverage_lines, nearer_summary


def render_try(report) -> None:
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # Not a terminal (a log, a pipe): wide enough that the table never truncates a number.
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    where = "on MPS" if report.backend == "mps" else "on the host"
    console.print(f"ran {escape(report.ran)} ({escape(str(report.location))}) {where}: {escape(report.backend_detail)}")
    for note in report.not_run:
        console.print(f"not run: {escape(note)}", style="dim")
    console.print(f"reference: {escape(report.reference)}" + (f" ({escape(report.reference_note)})" if report.reference_note else ""))
    table = Table(title=f"mpsgen try {escape(report.op)} (seed {report.seed})", title_justify="left")
    scalars = bool(report.scalar_sets)
    if scalars:
        table.add_column("scalars", no_wrap=True)
    for column in ("dtype", "in -> out", "cases", "max abs", "max rel", "rtol/atol", "bad", "status"):
        table.add_column(column, justify="right" if column in ("cases", "max abs", "max rel", "bad") else "left", no_wrap=True)
    colour = {"passed": "green", "failed": "red", "skipped": "yellow"}
    for r in report.results:
        tolerance = "exact" if r.tolerance is None else f"{r.tolerance[0]:g}/{r.tolerance[1]:g}"
        table.add_row(*((escape(r.scalars),) if scalars else ()), r.dtype, f"{r.metal_type} -> {r.out_type or '-'}", str(r.cases), f"{r.max_abs:.3g}", f"{r.max_rel:.3g}",
                      tolerance, str(r.mismatches), f"[{colour[r.status]}]{r.status}[/]")
    console.print(table)
    notes = set()
    for r in report.results:
        where = f"{r.dtype} [{r.scalars}]" if r.scalars else r.dtype
        if r.note and (r.dtype, r.note) not in notes:
            notes.add((r.dtype, r.note))
            console.print(f"{escape(where)}: {escape(r.note)}", style="dim")
        shown = r.examples[:3]
        for m in shown:
            args = ", ".join(repr(v) for v in m.inputs)
            console.print(f"[red]mismatch[/] {escape(where)}: {escape(report.op)}({escape(args)}) = {m.got!r}, reference {m.want!r}")
        if r.mismatches > len(shown):
            console.print(f"  ... {r.mismatches - len(shown)} more {escape(where)} mismatches (--json lists the first {len(r.examples)})")
    for line in coverage_lines(report):
        style = "yellow" if line.startswith(("untaken", "warning")) else "red" if line.startswith("error") else None
        console.print(escape(line), style=style)
    failed = [r.dtype + (f" [{r.scalars}]" if r.scalars else "") for r in report.results if r.status == "failed"]
    compared = any(r.status == "passed" for r in report.results)
    console.print(f"[bold]{len(report.results)} dtype(s):[/bold] " + (f"[red]mismatches in {', '.join(failed)}[/]" if failed else
                                                                       "[green]all match[/]" + nearer_summary(report) if compared else
                                                                       "[yellow]nothing compared (every one skipped)[/]"))
