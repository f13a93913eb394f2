"""Human summaries of plans, rendered with rich."""

from __future__ import annotations

from itertools import groupby

from mpsgen.model import Plan

STEP_PREFIXES = ("build:", "test:")


def summary_lines(plan: Plan) -> list[tuple[str, str, str]]:
    """(where, what, detail) rows; consecutive changes of one kind in one file share a row."""
    rows = []
    for (path, kind), group in groupby(plan.changes, key=lambda c: (c.location.path, c.kind)):
        items = list(group)
        details = [c.detail for c in items]
        detail = details[0] if len(details) == 1 else f"{details[0]} … (+{len(details) - 1} more)"
        rows.append((str(items[0].location), kind, detail))
    return rows


def render_summary(plan: Plan, *, command: str, dry_run: bool, to_stderr: bool) -> None:
    from rich.console import Console
    from rich.markup import escape

    from mpsgen.apply import line_counts

    console = Console(stderr=to_stderr, highlight=False, soft_wrap=True)
    ops = ", ".join(plan.ops)
    steps = [n for n in plan.notes if n.startswith(STEP_PREFIXES)]
    others = [n for n in plan.notes if n not in steps]
    if plan.empty:
        console.print(f"[green]{escape(ops)}: already native Metal; nothing to change.[/green]")
        for note in others:
            console.print(f"  {escape(note)}")
        return
    added, removed = line_counts(plan)
    verb = "would change" if dry_run else "changed"
    console.print(f"[bold]mpsgen {command} {escape(ops)}[/bold]: {verb} {len(plan.edits)} files (+{added} / -{removed} lines)")
    rows = summary_lines(plan)
    width = max(len(r[0]) for r in rows)
    kind_width = max(len(r[1]) for r in rows)
    for where, kind, detail in rows:
        console.print(f"  {escape(where):<{width}}  [cyan]{kind:<{kind_width}}[/cyan]  {escape(detail)}")
    for note in others:
        console.print(f"[yellow]note[/yellow]: {escape(note)}")
    if steps:
        console.print("[bold]next steps[/bold]" if not dry_run else "[bold]after applying[/bold]")
        for step in steps:
            console.print(f"  {escape(step)}")
