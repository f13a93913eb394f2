"""A `VerifyReport` as plain lines for logs: a title, every check as an aligned row, each finding on
one line `path:line: message (hint)`, then each pre-existing problem the same way (its hint starts
`pre-existing:`), the logs, and a one-line summary of the stages."""

from __future__ import annotations

from mpsgen.commands.verify import PASSED, VerifyReport
from mpsgen.render.text import aligned, one_line


def finding_line(finding) -> str:
    return one_line(str(finding))


def check_rows(report: VerifyReport) -> list[tuple[str, str, str, str, str]]:
    """(stage, op, check, status, detail): a row per check, a row for a stage without checks, and a
    row of test-result counts. A failed check's detail counts its findings, which follow the table."""
    rows = []
    for stage in report.stages:
        if not stage.checks:
            rows.append((stage.name, "", "", stage.status, stage.reason))
        for check in stage.checks:
            detail = check.reason
            if not detail and check.findings:
                detail = f"{len(check.findings)} finding(s)"
            rows.append((stage.name, check.op, check.check, check.status, detail))
        if stage.tests:
            counts: dict[str, int] = {}
            for test in stage.tests:
                counts[test.outcome] = counts.get(test.outcome, 0) + 1
            rows.append((stage.name, "", "results", "", ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))))
    return rows


def stage_summary(report: VerifyReport) -> str:
    """`N op(s): static passed, build skipped (reason), ...`."""
    parts = [f"{s.name} {s.status}" + (f" ({s.reason})" if s.status != PASSED and s.reason else "")
             for s in report.stages]
    return one_line(f"{len(report.ops)} op(s): " + ", ".join(parts))


def verify_lines(report: VerifyReport) -> list[str]:
    lines = [f"mpsgen verify {' '.join(report.ops) or '(no ops)'}"]
    lines += aligned(("stage", "op", "check", "status", "detail"), check_rows(report))
    lines += [finding_line(f) for stage in report.stages for f in stage.findings]
    lines += [finding_line(n) for stage in report.stages for n in stage.pre_existing]
    lines += [f"{stage.name} log: {stage.log}" for stage in report.stages if stage.log]
    lines.append(stage_summary(report))
    return lines
