"""A `VerifyReport` for a terminal: a rich table of every check, then the findings and the stages."""

from __future__ import annotations

from mpsgen.verify import VerifyReport


def render_verify(report: VerifyReport) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=False)
    colour = {"passed": "green", "failed": "red", "skipped": "yellow"}
    table = Table(title=f"mpsgen verify {escape(' '.join(report.ops)) or '(no ops)'}", title_justify="left")
    for column in ("stage", "op", "check", "status", "detail"):
        table.add_column(column)
    for stage in report.stages:
        rows = stage.checks or ()
        if not rows:
            table.add_row(stage.name, "", "", f"[{colour[stage.status]}]{stage.status}[/]", escape(stage.reason))
        for check in rows:
            detail = check.reason or (str(check.findings[0]) if check.findings else "")
            if len(check.findings) > 1:
                detail += f" (+{len(check.findings) - 1} more)"
            table.add_row(stage.name, escape(check.op), check.check, f"[{colour[check.status]}]{check.status}[/]", escape(detail))
        if stage.tests:
            counts = {}
            for test in stage.tests:
                counts[test.outcome] = counts.get(test.outcome, 0) + 1
            table.add_row(stage.name, "", "results", "", ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    console.print(table)
    findings = [f for stage in report.stages for f in stage.findings]
    for finding in findings:
        console.print(f"[red]{escape(str(finding.location))}[/]: {escape(finding.message)} ([dim]{escape(finding.hint)}[/])")
    for stage in report.stages:
        if stage.log:
            console.print(f"{stage.name} log: {escape(stage.log)}")
    summary = ", ".join(f"{s.name} [{colour[s.status]}]{s.status}[/]" + (f" ({escape(s.reason)})" if s.status != "passed" and s.reason else "")
                        for s in report.stages)
    console.print(f"[bold]{len(report.ops)} op(s):[/bold] {summary}")
