"""`mpsgen audit --json`: one document with every op's outcome and every finding."""

from __future__ import annotations

import math


def _number(x):
    if isinstance(x, complex):
        return {"re": _number(x.real), "im": _number(x.imag)}
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x


def report_to_json(report) -> dict:
    return {
        "root": report.root,
        "jobs": report.jobs,
        "seconds": round(report.seconds, 2),
        "exit_code": report.exit_code,
        "ops_run": sum(o.status != "not-run" for o in report.ops),
        "by_kind": report.by_kind(),
        "ops": [
            {
                "op": o.op, "status": o.status, "reason": o.reason, "functor": o.functor,
                "path": o.location.path if o.location else None, "line": o.location.line if o.location else None,
                "dtypes": list(o.dtypes), "seconds": round(o.seconds, 2),
                "findings": [
                    {"dtype": f.dtype, "metal_type": f.metal_type, "out_type": f.out_type, "scalars": f.scalars,
                     "kind": f.kind, "count": f.count, "uncertain": f.uncertain or None, "note": f.note,
                     "unclassified": f.unclassified,
                     "tolerance": None if f.tolerance is None else {"rtol": f.tolerance[0], "atol": f.tolerance[1]},
                     "cases": [{"inputs": [_number(v) for v in c.inputs], "mps": _number(c.got), "cpu": _number(c.want)}
                               for c in f.cases],
                     "reproducer": f.reproducer}
                    for f in o.findings
                ],
            }
            for o in report.ops
        ],
        "skipped": [{"op": op, "reason": why} for op, why in report.skipped],
    }
