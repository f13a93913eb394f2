"""`mpsgen trace` as plain text for logs (aligned columns, every cell whole) and as GitHub Markdown
(`--markdown`, to paste into an issue)."""

from __future__ import annotations

from mpsgen.commands.trace.analysis import TraceReport, migrate_command
from mpsgen.render.scan_markdown import _md_table
from mpsgen.render.text import aligned, one_line
from mpsgen.render.trace_rows import HEADER, RIGHT, closing_lines, rows, status_line, title


def trace_lines(report: TraceReport) -> list[str]:
    lines = [one_line(title(report))]
    status = status_line(report)
    if status:
        lines.append(one_line(status))
    lines += aligned(HEADER, rows(report), right=RIGHT)
    lines += [one_line(line) for line in closing_lines(report)]
    return lines


def trace_markdown(report: TraceReport) -> str:
    out = [f"### {title(report)}", ""]
    status = status_line(report)
    if status:
        out += [status[0].upper() + status[1:] + ".", ""]
    out += _md_table(HEADER, rows(report))
    totals, last = closing_lines(report)
    command = migrate_command(report)
    if command:
        last = last.replace(command, f"`{command}`", 1)
    out += ["", totals, "", last]
    return "\n".join(out) + "\n"
