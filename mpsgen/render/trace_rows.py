"""The rows and lines of `mpsgen trace`'s report, shared by the terminal, plain-text and Markdown
renderers."""

from __future__ import annotations

import shlex

from mpsgen.commands.trace.analysis import TraceReport, last_line

HEADER = ("op", "overload", "backing", "calls", "shapes", "graphs", "dtypes", "tier", "reason")
RIGHT = (3, 4, 5)  # the counts


def rows(report: TraceReport) -> list[tuple[str, ...]]:
    """(op, overload, backing, calls, distinct shapes, cached graphs, dtypes, tier, reason)."""
    return [
        (r.op, r.overload.removeprefix("aten::"), r.backing, str(r.calls), str(r.distinct_shapes),
         str(r.graph_entries) if r.backing == "mpsgraph" else "-", ",".join(r.dtypes) or "-",
         r.candidate or "-", r.reason or "-")
        for r in report.rows
    ]


def title(report: TraceReport) -> str:
    run = report.script
    command = shlex.join([run.path, *run.args])
    devices = f", tensors on {', '.join(report.devices)}" if report.devices else ""
    return f"ATen ops called by {command} (torch {report.torch_version}{devices})"


def status_line(report: TraceReport) -> str | None:
    """What became of the script, when it did not finish normally."""
    run = report.script
    if run.exception:
        return f"the script stopped with {run.exception} (exit status {run.exit_status}): the trace covers what ran before"
    if run.exit_status:
        return f"the script exited with status {run.exit_status}"
    return None


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def totals_line(report: TraceReport) -> str:
    graph = report.graph_rows()
    ops = len({r.op for r in report.rows})
    return (f"{_n(report.calls, 'call')} of {_n(len(report.rows), 'overload')} ({_n(ops, 'op')}); "
            f"MPSGraph: {_n(sum(r.calls for r in graph), 'call')} of {_n(len(report.graph_ops()), 'op')}, "
            f"{_n(report.graph_entries(), 'distinct input signature')} (one cached graph each)")


def closing_lines(report: TraceReport) -> list[str]:
    return [totals_line(report), last_line(report)]
