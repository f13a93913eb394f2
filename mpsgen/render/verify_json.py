"""A `VerifyReport` as one JSON document (`mpsgen verify --json`): stages, every check with its
status, every finding with `path`, `line`, `message` and `hint`, the pre-existing problems (same shape), and the test results."""

from __future__ import annotations

from mpsgen.commands.verify import Finding, VerifyReport


def report_to_json(report: VerifyReport) -> dict:
    def finding(f: Finding) -> dict:
        return {"check": f.check, "op": f.op, "path": f.location.path, "line": f.location.line,
                "message": f.message, "hint": f.hint}

    return {
        "command": "verify",
        "root": report.root,
        "ops": list(report.ops),
        "exit_code": report.exit_code,
        "stages": [
            {
                "name": s.name,
                "status": s.status,
                "reason": s.reason,
                "duration": round(s.duration, 3),
                "log": s.log,
                "command": list(s.command),
                "checks": [{"check": c.check, "op": c.op, "status": c.status, "reason": c.reason,
                            "findings": [finding(f) for f in c.findings]} for c in s.checks],
                "pre_existing": [finding(n) for n in s.pre_existing],
                "tests": [{"op": t.op, "test": t.test, "dtype": t.dtype, "outcome": t.outcome, "detail": t.detail}
                          for t in s.tests],
            }
            for s in report.stages
        ],
        "findings": [finding(f) for s in report.stages for f in s.findings],
        "pre_existing": [finding(n) for s in report.stages for n in s.pre_existing],
    }
