"""Time `mpsgen audit` over every native op of a real-size checkout.

    python benchmarks/bench_audit.py --checkout DIR [--jobs N] [--output PATH]

Runs, as whole processes on the checkout as it is (it is read only):
- the audit: `python -m mpsgen -C DIR audit --json --jobs N` (N: 0, one process per core);
- the baseline in the same run: `python -m mpsgen -C DIR --help`, the cost of starting mpsgen, so the
  audit's figure also reads as a ratio on a machine of another speed or load.
Reports wall and CPU seconds (user + system of the process and every program it waited for:
workers, g++, the try programs; `os.wait4`), the ops run, not run and with findings, the findings by
kind and the mean wall seconds per op run; writes them as JSON (`--output`, default
benchmarks/results-audit.json). Nothing asserts: the figures go to benchmarks/README.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results-audit.json"


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the process tree it waited for, stdout)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", required=True, type=Path)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--report", type=Path, default=None, help="Also keep the audit's JSON report here.")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    mpsgen = [sys.executable, "-m", "mpsgen", "-C", str(args.checkout)]
    help_wall, help_cpu, _ = run([*mpsgen, "--help"], env)
    wall, cpu, out = run([*mpsgen, "audit", "--json", "--jobs", str(args.jobs)], env)
    report = json.loads(out)
    if args.report is not None:
        args.report.write_bytes(out)
    ops = report["ops"]
    ran = [o for o in ops if o["status"] != "not-run"]
    results = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "checkout": str(args.checkout),
        "jobs": report["jobs"],
        "audit": {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "ops": len(ops), "ops_run": len(ran),
                  "ops_not_run": len(ops) - len(ran), "ops_with_findings": sum(o["status"] == "findings" for o in ops),
                  "findings": sum(len(o["findings"]) for o in ops), "by_kind": report["by_kind"],
                  "wall_s_per_op_run": round(wall / max(1, len(ran)), 2)},
        "baseline_help": {"wall_s": round(help_wall, 3), "cpu_s": round(help_cpu, 3)},
        "ratio_wall_vs_help": round(wall / help_wall, 1),
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
