"""The new-op/migrate summary of a plan: what changed where, notes, next steps. Rich styles on a
terminal; elsewhere plain lines, one change per line with nothing elided."""

from __future__ import annotations

from itertools import groupby

from mpsgen.edit.apply import line_counts
from mpsgen.model import Plan, counted
from mpsgen.render.mode import RICH, console
from mpsgen.render.text import one_line


def summary_lines(plan: Plan, *, grouped: bool = True) -> list[tuple[str, str, str]]:
    """(where, what, detail) rows. `grouped`: consecutive changes of one kind in one file share a
    row (`first … (+N more)`), for a terminal; otherwise a row per change."""
    if not grouped:
        return [(str(c.location), c.kind, one_line(c.detail)) for c in plan.changes]
    rows = []
    for (path, kind), group in groupby(plan.changes, key=lambda c: (c.location.path, c.kind)):
        items = list(group)
        details = [c.detail for c in items]
        detail = details[0] if len(details) == 1 else f"{details[0]} … (+{len(details) - 1} more)"
        rows.append((str(items[0].location), kind, detail))
    return rows


def summary_segments(plan: Plan, *, command: str, dry_run: bool, grouped: bool = True) -> list[list[tuple[str, str | None]]]:
    """The summary as lines of (text, style) segments: rich renders the styles on a terminal,
    elsewhere the text is written plainly (and rich is not even imported)."""

    ops = ", ".join(plan.ops)
    steps = list(plan.steps)
    others = list(plan.notes)
    if plan.empty:
        return [[(f"{ops}: already native Metal; nothing to change.", "green")]] + [[(f"  {one_line(str(n))}", None)] for n in others]
    added, removed = line_counts(plan)
    verb = "would change" if dry_run else "changed"
    lines = [[(f"mpsgen {command} {ops}", "bold"), (f": {verb} {counted(len(plan.edits), 'file')} (+{added} / -{removed} lines)", None)]]
    rows = summary_lines(plan, grouped=grouped)
    width = max(len(r[0]) for r in rows)
    kind_width = max(len(r[1]) for r in rows)
    for where, kind, detail in rows:
        lines.append([(f"  {where:<{width}}  ", None), (f"{kind:<{kind_width}}", "cyan"), (f"  {detail}", None)])
    lines += [[("todo" if note.kind == "todo" else "note", "yellow"), (f": {one_line(str(note))}", None)] for note in others]
    if steps:
        lines.append([("after applying" if dry_run else "next steps", "bold")])
        before, after = bench_steps(plan.ops)
        lines += [[(f"  {step}", None)] for step in (*before, *steps, *after)]
    return lines


def bench_steps(ops) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The PR's before/after table (docs/bench.md): each op timed on the build from before the change
    (the build directory holds it until the rebuild), then on the rebuilt one, and compared."""
    before = tuple(f"bench: mpsgen bench {op} --json {op}-before.json   (before rebuilding: the build is still the one "
                   "from before the change)" for op in ops)
    after = tuple(f"bench: mpsgen bench {op} --json {op}-after.json && mpsgen bench --compare {op}-before.json "
                  f"{op}-after.json --markdown   (the table for the PR)" for op in ops)
    return before, after


def render_summary(plan: Plan, *, command: str, dry_run: bool, to_stderr: bool, mode: str) -> None:
    """Write the summary to stderr (`to_stderr`, when stdout carries the diff) or stdout, with rich
    when `mode` is rich."""
    import sys

    lines = summary_segments(plan, command=command, dry_run=dry_run, grouped=mode == RICH)
    stream = sys.stderr if to_stderr else sys.stdout
    if mode != RICH:
        stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))
        stream.flush()
        return
    from rich.text import Text

    out = console(stderr=to_stderr, soft_wrap=True)
    for line in lines:
        out.print(Text.assemble(*[(text, style) if style else text for text, style in line]))
