"""`mpsgen trace --json`: one document, `{"script", "ops", "totals"}`."""

from __future__ import annotations

from mpsgen.commands.trace.analysis import TraceReport, last_line, migrate_command


def trace_to_json(report: TraceReport) -> dict:
    run = report.script
    graph_ops = report.graph_ops()
    tiers = report.tiers()
    return {
        "script": {"path": run.path, "args": list(run.args), "exit_status": run.exit_status,
                   "exception": run.exception, "torch": report.torch_version, "devices": list(report.devices)},
        "ops": [
            {"op": r.op, "overload": r.overload, "backing": r.backing, "calls": r.calls,
             "distinct_shapes": r.distinct_shapes, "dtypes": list(r.dtypes), "candidate": r.candidate,
             "reason": r.reason}
            for r in report.rows
        ],
        "totals": {
            "calls": report.calls,
            "overloads": len(report.rows),
            "ops": len({r.op for r in report.rows}),
            "calls_by_backing": report.calls_by_backing(),
            "mpsgraph": {
                "ops": len(graph_ops),
                "calls": sum(r.calls for r in report.graph_rows()),
                "distinct_shapes": report.graph_entries(),
            },
            "migrate_now": {
                "ops": list(tiers["ready"] + tiers["reduce"]),
                "distinct_shapes": report.graph_entries(tiers["ready"] + tiers["reduce"]),
                "command": migrate_command(report),
            },
            "expr": list(tiers["expr"]),
            "port": list(tiers["port"]),
            "summary": last_line(report),
        },
    }
