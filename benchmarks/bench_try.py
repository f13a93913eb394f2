"""`mpsgen try` over the catalog: this tree against an earlier revision, in the same run.

Builds one checkout (the miniature copied to a temporary directory) holding every catalog body
new-op or migrate writes on it (the ops `tests/test_try.py` runs there: the catalog but logaddexp,
already native in the miniature, and logical_not, which the miniature lacks), then times
`python -m mpsgen -C ROOT try OP --backend host --reference torch --json` for each op as a whole
process, this tree and `--compare-rev` (default: the commit issue 46's work started from) alternating
run for run so that the machine's load weighs on both. The user cache is a fresh directory, shared by
both sides (the precompiled prelude is built by the warm-up run); try compiles its program every run.

Reports per op and in total: the median wall seconds and CPU-seconds (user + system of the process
and the compilers it waited for, `os.wait4`) of each side, and their ratio. Prints a table and writes
benchmarks/results-try.json. Not a test: nothing asserts.

    python benchmarks/bench_try.py [--runs 3] [--compare-rev 8279edf] [--ops hypot,softplus]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "pytorch"
RESULTS = Path(__file__).resolve().parent / "results-try.json"
DEFAULT_COMPARE_REV = "8279edf"  # before issue 46
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import compile_bytecode, export_revision, run_once  # noqa: E402

OWN_CHECKOUT = ("logaddexp", "logical_not")


def _env(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    env["MPSGEN_CACHE_DIR"] = str(cache)
    return env


def build_checkout(root: Path, ops: list[str], env: dict[str, str]) -> list[str]:
    """Each op's catalog body written into `root` (new-op, else migrate), as tests/test_try.py does."""
    sys.path.insert(0, str(REPO))
    from mpsgen.facts.catalog import load_catalog

    catalog = load_catalog()
    shutil.copytree(FIXTURE, root)
    written = []
    for op in ops:
        groups = list(catalog[op].supports)
        for attempt in range(2):
            cmd = [sys.executable, "-m", "mpsgen", "-C", str(root), "new-op", op, "--dtypes", ",".join(groups)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode != 0 and "would never be called" in done.stderr and attempt == 0:
                groups = [g for g in groups if g != "int2float"]
                continue
            break
        if done.returncode != 0:
            cmd = [sys.executable, "-m", "mpsgen", "-C", str(root), "migrate", op, "--dtypes", ",".join(groups)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode == 0:
            written.append(op)
        else:
            print(f"skipped {op}: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare-rev", default=DEFAULT_COMPARE_REV)
    parser.add_argument("--ops", default="", help="comma-separated catalog ops (default: every one the miniature takes)")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    from mpsgen.facts.catalog import load_catalog

    ops = [o for o in args.ops.split(",") if o] or sorted(op for op in load_catalog() if op not in OWN_CHECKOUT)
    with tempfile.TemporaryDirectory(prefix="mpsgen-bench-try-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        compile_bytecode(REPO)
        new_env = _env(REPO, cache)
        old_env = _env(export_revision(args.compare_rev, tmp / "compare"), cache) if args.compare_rev else None
        root = tmp / "checkout"
        ops = build_checkout(root, ops, new_env)
        rows, figures = [], {}
        for op in ops:
            argv = [sys.executable, "-m", "mpsgen", "-C", str(root), "try", op, "--backend", "host",
                    "--reference", "torch", "--json"]
            sides = {"new": [], "old": []}
            run_once(argv, new_env, tmp)  # warm-up: the precompiled prelude, the OS caches
            for _ in range(args.runs):
                sides["new"].append(run_once(argv, new_env, tmp))
                if old_env is not None:
                    sides["old"].append(run_once(argv, old_env, tmp))
            figure = {}
            for side, runs in sides.items():
                if runs:
                    figure[side] = {"wall_s": statistics.median(r[0] for r in runs),
                                    "cpu_s": statistics.median(r[3] for r in runs),
                                    "exit_codes": sorted({r[2] for r in runs})}
            figures[op] = figure
            print(f"{op}: {json.dumps(figure)}", file=sys.stderr)
        total = {side: {k: sum(f[side][k] for f in figures.values() if side in f) for k in ("wall_s", "cpu_s")}
                 for side in ("new", "old") if any(side in f for f in figures.values())}
    header = ("op", f"{args.compare_rev or '-'} wall s", "this wall s", f"{args.compare_rev or '-'} CPU s", "this CPU s", "CPU ratio")

    def row(name, f):
        old = f.get("old")
        return (name, f"{old['wall_s']:.2f}" if old else "-", f"{f['new']['wall_s']:.2f}",
                f"{old['cpu_s']:.2f}" if old else "-", f"{f['new']['cpu_s']:.2f}",
                f"{f['new']['cpu_s'] / old['cpu_s']:.2f}x" if old else "-")

    rows = [row(op, f) for op, f in figures.items()] + [row("total", total)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    table = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    table += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    print(machine + (f", load average {load[0]:.1f}" if load else ""))
    print("\n".join(table))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    Path(args.output).write_text(json.dumps({
        "benchmark": "mpsgen try OP --backend host --reference torch over the catalog bodies (the miniature)",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mpsgen": commit, "compare_rev": args.compare_rev, "machine": machine, "runs": args.runs,
        "per_op": figures, "total": total, "table": table,
    }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
