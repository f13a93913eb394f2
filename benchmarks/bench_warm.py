"""Time mpsgen as an installed user runs it, cold (an empty user cache) and warm (issue 43).

    python benchmarks/bench_warm.py --python VENV/bin/python --real DIR --source DIR [--runs 5]

`--python` is the interpreter of a non-editable install (`python -m venv VENV && VENV/bin/pip install
'.[trace]'`: mpsgen as a wheel, with torch 2.13.0 importable, as a contributor has it). `--real` is a
real-size checkout (the release's wheel files plus the mps kernel and host files, no `.cpp`), `--source`
the same with upstream's `aten/src/ATen/native/*.cpp` and `native/cpu/*.cpp` (a source checkout).
Both are copied into a temporary directory first (every command here is read-only anyway).

Every command runs as a whole process (`PYTHON -m mpsgen -C ROOT ...`): `--cold-runs` times with an
empty user cache (`cold`, a cache directory of its own, emptied before each: median, every figure kept
as `cold_all_s`, since one run on a shared machine varies by a third), then `--runs` times with what
the last of them kept (`warm`: median).
In the same run: `--help` (the floor every ratio is taken to, CPU-seconds: user + system of the process
and the programs it waited for, `os.wait4`, which a loaded machine does not swell as it swells wall
time) and the naive full parse (`benchmarks/run.py`'s: ruamel.yaml round-trip load of
native_functions.yaml, libcst parse with positions of common_mps.py and common_methods_invocations.py).

Commands: `scan --json` on both checkouts; `migrate asinh --dry-run` (a catalog body) and
`migrate mse_loss --dry-run` (scan names its body as derived from the CPU kernel; where the
checkout's kernel file already holds `mse_functor`, as the miniature's host files do, migrate keeps
it and checks nothing) and `migrate signbit --dry-run` (a body derived from the MPSGraph graph:
tried before it is planned) on the source checkout; `try hypot --backend host` (the host compiler and torch's CPU op:
`cold` its first runs, `warm` repeated). Targets (issue 43): warm scan <= 10x --help on both;
cold source-checkout scan <= 15 s; `migrate asinh --dry-run` <= 5x --help and >= 25x faster than the
naive parse. Writes `--output` (default benchmarks/results-warm.json) and prints a table."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (label, checkout: real | source | none, arguments after `mpsgen -C ROOT`, the exit codes it may end with)
COMMANDS = (
    ("--help", "none", ["--help"], {0}),
    ("scan --json (real-size)", "real", ["scan", "--json"], {0}),
    ("scan --json (source checkout)", "source", ["scan", "--json"], {0}),
    ("migrate asinh --dry-run", "source", ["migrate", "asinh", "--dry-run"], {0}),
    ("migrate mse_loss --dry-run (CPU-kernel body)", "source", ["migrate", "mse_loss", "--dry-run"], {0}),
    ("migrate signbit --dry-run (graph body)", "source", ["migrate", "signbit", "--dry-run"], {0}),
    # 1: a dtype's values differ from torch's (2.13's hypot kernel in half does): a finding, not a failure
    ("try hypot --backend host", "source", ["try", "hypot", "--backend", "host"], {0, 1}),
)
NAIVE = "naive full parse"
# what the naive parse imports besides mpsgen's own dependencies (libcst is in the test extra)
NAIVE_NEEDS = "import libcst, ruamel.yaml"


class Failed(Exception):
    """A measured command ended with an exit code it should not have: its figures are not a timing."""
TARGETS = {  # label prefix -> (warm CPU-seconds ratio to --help at most, cold seconds at most)
    "scan --json (real-size)": (10.0, None),
    "scan --json (source checkout)": (10.0, 15.0),
    "migrate asinh --dry-run": (5.0, None),
}
NAIVE_RATIO = 25.0  # migrate asinh --dry-run at least this much faster than the naive parse (wall)


def _run_py():
    spec = importlib.util.spec_from_file_location("mpsgen_benchmarks_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def measure(run_once, argv: list[str], env: dict, cwd: Path, runs: int, expected: set[int] = frozenset({0}),
            cold_runs: int = 1) -> dict:
    """`cold_runs` cold runs (each with the cache directory in `env` emptied first: median), then
    `runs` warm ones; `Failed` when a run exits with a code not in `expected`."""
    done = []
    for n in range(cold_runs + runs):
        if n < cold_runs:
            shutil.rmtree(env["MPSGEN_CACHE_DIR"], ignore_errors=True)
        done.append(run_once(argv, env, cwd))
        if done[-1][2] not in expected:
            raise Failed(f"exit code {done[-1][2]} (expected {' or '.join(map(str, sorted(expected)))}): "
                         + " ".join(argv))
    cold, warm = done[:cold_runs], done[cold_runs:]
    return {
        "cold_s": round(statistics.median(c[0] for c in cold), 3),
        "cold_cpu_s": round(statistics.median(c[3] for c in cold), 3),
        "cold_all_s": [round(c[0], 3) for c in cold],
        "warm_s": round(statistics.median(w[0] for w in warm), 3),
        "warm_cpu_s": round(statistics.median(w[3] for w in warm), 3),
        "peak_mb": round(max(r[1] for r in done), 1),
        "exit_codes": sorted({r[2] for r in done}), "runs": runs, "cold_runs": cold_runs,
    }


def table(results: dict) -> str:
    commands = results["commands"]
    floor = commands["--help"]["warm_cpu_s"]
    naive = commands[NAIVE]["warm_s"]
    rows = [("command", "cold s (range)", "cold cpu s", "warm s", "warm cpu s", "warm x --help (cpu)", "vs naive", "target")]
    for label, data in commands.items():
        ratio = data["warm_cpu_s"] / floor
        verdicts = []
        goal = next((v for k, v in TARGETS.items() if label.startswith(k)), None)
        if goal is not None:
            if goal[0] is not None:
                verdicts.append(f"warm <= {goal[0]:g}x " + ("ok" if ratio <= goal[0] else "MISSED"))
            if goal[1] is not None:
                verdicts.append(f"cold <= {goal[1]:g} s " + ("ok" if data["cold_s"] <= goal[1] else "MISSED"))
        if label.startswith("migrate asinh"):
            verdicts.append(f">= {NAIVE_RATIO:g}x naive " + ("ok" if naive / data["warm_s"] >= NAIVE_RATIO else "MISSED"))
        spread = data.get("cold_all_s", [])
        cold = f"{data['cold_s']:.3f}" + (f" ({min(spread):.1f}-{max(spread):.1f})" if len(spread) > 1 else "")
        rows.append((label, cold, f"{data['cold_cpu_s']:.3f}", f"{data['warm_s']:.3f}",
                     f"{data['warm_cpu_s']:.3f}", f"{ratio:.1f}x", f"{naive / data['warm_s']:.1f}x" if label != NAIVE else "",
                     ", ".join(verdicts)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the interpreter of a non-editable install of mpsgen")
    parser.add_argument("--real", required=True, metavar="DIR", help="a real-size checkout (no .cpp)")
    parser.add_argument("--source", required=True, metavar="DIR", help="a source checkout (with native/*.cpp)")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per command (default 5)")
    parser.add_argument("--cold-runs", type=int, default=3,
                        help="cold runs per command, each with an emptied cache (median; default 3)")
    parser.add_argument("--naive-runs", type=int, default=1, help="runs of the naive parse after its first (default 1)")
    parser.add_argument("--output", default=str(HERE / "results-warm.json"), help="where the JSON goes")
    args = parser.parse_args(argv)
    run = _run_py()
    python = str(Path(args.python).absolute())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPSGEN_", "PYTHONPATH"))}
    env["NO_COLOR"] = "1"
    ready = subprocess.run([python, "-c", f"import mpsgen; {NAIVE_NEEDS}"], env=env, capture_output=True, text=True)
    if ready.returncode != 0:
        why = (ready.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"bench_warm: {python} cannot run the benchmark ({why}): install mpsgen and libcst into it "
              "(VENV/bin/pip install . libcst; see docs/performance.md)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mpsgen-bench-warm-") as tmp:
        roots = {"none": Path(tmp)}
        for name, given in (("real", args.real), ("source", args.source)):
            roots[name] = Path(tmp) / name / "pytorch"
            shutil.copytree(given, roots[name], ignore=shutil.ignore_patterns(".git", ".mpsgen"))
        results = {"machine": run.machine(), "python": python, "checkouts": {"real": args.real, "source": args.source},
                   "commands": {}}
        jobs = [(label, [python, "-m", "mpsgen"] + (cmd if where == "none" else ["-C", str(roots[where])] + cmd),
                 str(n), args.runs, expected, args.cold_runs) for n, (label, where, cmd, expected) in enumerate(COMMANDS)]
        jobs.append((NAIVE, [python, "-c", run.NAIVE, str(roots["source"])], "naive", args.naive_runs, {0}, 1))
        for label, argv_, cache, runs, expected, cold_runs in jobs:
            env["MPSGEN_CACHE_DIR"] = str(Path(tmp) / "cache" / cache)
            print(f"timing {label} ...", file=sys.stderr)
            try:
                results["commands"][label] = measure(run.run_once, argv_, env, Path(tmp), runs, expected, cold_runs)
            except Failed as exc:
                print(f"bench_warm: {label}: {exc}; nothing written", file=sys.stderr)
                return 1
    results["table"] = table(results)
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    m = results["machine"]
    print(f"{m['cpu']}, {m['cores']} cores, {m['os']}, Python {m['python']}, mpsgen {m['mpsgen_commit']}, {m['date']}")
    print(results["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
