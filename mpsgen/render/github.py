"""A `VerifyReport` as GitHub Actions workflow commands (`mpsgen verify --format github`): an
`::error` per finding, anchored at its file and line so that it shows on the pull request's diff;
an `::error` for a stage that failed without a finding; a `::notice` per skipped check; for a
skipped stage a `::notice` when the skip was asked for or follows from an earlier failure, a
`::warning` when the stage could not run here; then the plain summary line.

Paths are relative to the checkout, which is what GitHub expects when the checkout is the
repository root."""

from __future__ import annotations

from mpsgen.commands.verify import FAILED, SKIPPED, StageResult, VerifyReport
from mpsgen.render.verify_text import stage_summary


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF percent-encoded, as the runner decodes them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file=`, `title=`): also `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: str | int) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def _expected_skip(report: VerifyReport, stage: StageResult, static_only: bool) -> bool:
    earlier = report.stages[: report.stages.index(stage)]
    return (not report.ops or any(s.status == FAILED for s in earlier)
            or (static_only and stage.name != "static"))


def github_lines(report: VerifyReport, *, static_only: bool = False) -> list[str]:
    """The workflow commands for `report`, in stage order, and the summary line. `static_only`:
    the user asked for the static stage only, so the later stages' skips are notices."""
    lines = []
    for stage in report.stages:
        for check in stage.checks:
            for f in check.findings:
                lines.append(command("error", f"{f.message} ({f.hint})", file=f.location.path, line=f.location.line,
                                     title=f"mpsgen {f.check}"))
            if check.status == SKIPPED:
                who = f"{check.op}: " if check.op else ""
                why = f" ({check.reason})" if check.reason else ""
                lines.append(command("notice", f"{who}{check.check} skipped{why}", title=f"mpsgen {check.check}"))
        for n in stage.pre_existing:
            lines.append(command("warning", f"{n.message} ({n.hint})", file=n.location.path, line=n.location.line,
                                 title=f"mpsgen {n.check} (pre-existing)"))
        if stage.status == FAILED and not stage.findings:
            lines.append(command("error", f"{stage.name} failed: {stage.reason}", title=f"mpsgen {stage.name}"))
        elif stage.status == SKIPPED:
            kind = "notice" if _expected_skip(report, stage, static_only) else "warning"
            lines.append(command(kind, f"{stage.name} skipped: {stage.reason}", title=f"mpsgen {stage.name}"))
    lines.append(stage_summary(report))
    return lines
