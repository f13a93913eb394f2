"""A `VerifyReport` for a terminal: a rich table of every check, then the findings and the stages,
coloured by status (no colour under NO_COLOR)."""

from __future__ import annotations

from mpsgen.commands.verify import PASSED, VerifyReport
from mpsgen.render.mode import console as make_console
from mpsgen.render.verify_text import check_rows

STATUS_STYLE = {"passed": "green", "failed": "red", "skipped": "yellow"}


def render_verify(report: VerifyReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = make_console()

    def status(word: str) -> str:
        return f"[{STATUS_STYLE[word]}]{word}[/]" if word in STATUS_STYLE else word

    table = Table(title=f"mpsgen verify {escape(' '.join(report.ops)) or '(no ops)'}", title_justify="left")
    for column in ("stage", "op", "check", "status", "detail"):
        table.add_column(column, overflow="fold")  # a narrow terminal folds a path, never cuts it
    for stage, op, check, word, detail in check_rows(report):
        table.add_row(stage, escape(op), check, status(word), escape(detail))
    console.print(table)
    for finding in (f for stage in report.stages for f in stage.findings):
        console.print(f"[red]{escape(str(finding.location))}[/]: {escape(finding.message)} ([dim]{escape(finding.hint)}[/])")
    for note in (n for stage in report.stages for n in stage.pre_existing):
        console.print(f"[yellow]{escape(str(note.location))}[/]: {escape(note.message)} ([dim]{escape(note.hint)}[/])")
    for stage in report.stages:
        if stage.log:
            console.print(f"{stage.name} log: {escape(stage.log)}")
    summary = ", ".join(f"{s.name} {status(s.status)}" + (f" ({escape(s.reason)})" if s.status != PASSED and s.reason else "")
                        for s in report.stages)
    console.print(f"[bold]{len(report.ops)} op(s):[/bold] {summary}")
