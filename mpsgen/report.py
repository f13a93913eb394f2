"""Human summaries of plans, rendered with rich."""

from __future__ import annotations

from mpsgen.model import Plan


def render_summary(plan: Plan, *, command: str, dry_run: bool, to_stderr: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from mpsgen.apply import line_counts

    console = Console(stderr=to_stderr, highlight=False, soft_wrap=True)
    ops = ", ".join(plan.ops)
    if plan.empty:
        console.print(f"[green]{ops}: already native Metal; nothing to change.[/green]")
        for note in plan.notes:
            if not note.startswith(("build:", "test:")):
                console.print(f"  {note}")
        return
    added, removed = line_counts(plan)
    verb = "would change" if dry_run else "changed"
    console.print(f"[bold]mpsgen {command} {ops}[/bold]: {verb} {len(plan.edits)} files (+{added} / -{removed} lines)")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("where")
    table.add_column("what")
    table.add_column("detail", overflow="fold")
    for change in plan.changes:
        table.add_row(str(change.location), change.kind, change.detail)
    console.print(table)
    steps = [n for n in plan.notes if n.startswith(("build:", "test:"))]
    others = [n for n in plan.notes if n not in steps]
    for note in others:
        console.print(f"note: {note}")
    if steps:
        console.print("[bold]next steps[/bold]" if not dry_run else "[bold]after applying[/bold]")
        for step in steps:
            console.print(f"  {step}")
