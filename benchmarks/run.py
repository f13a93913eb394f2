"""Time mpsgen's commands, as whole processes, on a real-size PyTorch checkout.

    python benchmarks/run.py [--wheel PATH] [--kernels-from PYTORCH | --checkout DIR] [--runs 5] [--keep DIR] [--compare-rev REV] [--output benchmarks/results.json]

Assembles a checkout in a temporary directory from the newest release's macOS arm64 wheel, torch
2.15.0 (native_functions.yaml,
ATen/native headers, c10/metal, common_mps.py, common_methods_invocations.py, opinfo/, laid out as
tests/conftest.py does) plus the fixture's `.mm`/`.metal` files (`--kernels-from PYTORCH`: a PyTorch
source checkout's instead, the real-file checkout), then runs each command once to warm
up (its time is kept as `first_s`: a cold index cache) and `--runs` more times, and reports the
median wall time and the peak resident memory (`ru_maxrss` from `os.wait4`). In the same run it
times a naive baseline, what a straightforward implementation does before it can plan anything: a
ruamel.yaml round-trip load of native_functions.yaml and a full libcst parse (with positions) of
both test files, and (`--compare-rev`) the same commands with the mpsgen of an earlier git revision,
so "before" and "after" are measured on the same checkout in the same run, their runs alternating
(a change in the machine's load weighs on both). Both trees are run with
their bytecode compiled, as a `pip install`ed mpsgen is. Prints a table and writes JSON. Not a test:
nothing here asserts.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "pytorch"
MPS_FIXTURE_DIRS = ("aten/src/ATen/native/mps/kernels", "aten/src/ATen/native/mps/operations")

# (label, arguments after `mpsgen -C ROOT`, what it stands for); `--help` runs without -C
COMMANDS = (
    ("--help", ["--help"], "startup"),
    # ops still MPSGraph-backed on 2.15 (the checkout's release)
    ("migrate sgn --dry-run", ["migrate", "sgn", "--dry-run"], "unary"),
    ("migrate hardtanh_backward --dry-run", ["migrate", "hardtanh_backward", "--dry-run"], "binary, params"),
    ("migrate threshold --dry-run", ["migrate", "threshold", "--dry-run"], "activation, params"),
    ("new-op special_ndtri --dry-run", ["new-op", "special_ndtri", "--dry-run"], "new op"),
    ("verify logaddexp --static-only", ["verify", "logaddexp", "--static-only"], "static checks"),
    ("verify --all-native --static-only", ["verify", "--all-native", "--static-only"], "every native op"),
    ("scan --json", ["scan", "--json"], "whole checkout"),
)
BASELINE = "naive baseline"
TARGETS = {  # label prefix -> seconds (issue 7: --help; issue 11: migrate, scan, verify --all-native)
    "--help": 0.15,
    "migrate": 0.3,
    "scan": 0.6,
    "verify --all-native": 1.5,
}
# The same targets as ratios to `--help` timed in the same run (issue 29: the absolute targets over
# --help's 0.055 s on a quiet machine), which a loaded or slower machine does not blur: CPU-seconds
# ratios, the processes' user + system time.
HELP_RATIO_TARGETS = {"migrate": 0.3 / 0.055, "scan": 0.6 / 0.055}
# The mpsgen the figures are compared with in the same run: the commit before the shared op model.
DEFAULT_COMPARE_REV = "1661c80"
TARGET_RATIO = 15.0
TARGET_PEAK_MB = 150.0

NAIVE = r"""
import sys
from ruamel.yaml import YAML
import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
root = sys.argv[1]
with open(root + "/aten/src/ATen/native/native_functions.yaml", encoding="utf-8") as handle:
    YAML(typ="rt").load(handle)
for rel in ("torch/testing/_internal/common_mps.py", "torch/testing/_internal/common_methods_invocations.py"):
    with open(root + "/" + rel, encoding="utf-8") as handle:
        MetadataWrapper(cst.parse_module(handle.read())).resolve(PositionProvider)
"""


def _tests_module(name: str):
    """tests/<name>.py, loaded with tests/ on the path: conftest.py and releases.py import their
    neighbour support.py."""
    if str(REPO / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "tests"))
    spec = importlib.util.spec_from_file_location(f"mpsgen_tests_{name}", REPO / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _conftest():
    return _tests_module("conftest")


def _releases():
    return _tests_module("releases")


def find_wheel(explicit: str | None) -> Path:
    """--wheel, else the newest release's macOS arm64 wheel from the tests' wheel cache (downloaded
    there as the tests do, tests/releases.py)."""
    if explicit:
        return Path(explicit)
    releases = _releases()
    return releases.fetch_wheel(releases.NEWEST)


def assemble_checkout(wheel: Path, root: Path, kernels_from: Path | None = None) -> None:
    """The wheel's files in checkout layout (tests/conftest.py's mapping) + the `.metal` and `.mm`
    files the wheel does not ship: a PyTorch source tree's (`kernels_from`), else the fixture's."""
    _conftest().extract_checkout(wheel, root)
    copy_kernels(kernels_from or FIXTURE, root)
    # a PyTorch checkout's style file (the fixture's is PyTorch's settings): mpsgen formats the
    # lines it adds with it, part of the job a contributor's run does
    style = kernels_from / ".clang-format" if kernels_from and (kernels_from / ".clang-format").is_file() else None
    shutil.copyfile(style or FIXTURE / ".clang-format", root / ".clang-format")


def copy_kernels(source: Path, root: Path) -> int:
    """Copy `kernels/*.metal` and `operations/*.mm` of the MPS tree under `source` (a PyTorch
    checkout's layout) into `root`; the number of files copied. A source without them is an error:
    a benchmark of a checkout without its host files would time a different job."""
    copied = 0
    for rel, pattern in zip(MPS_FIXTURE_DIRS, ("*.metal", "*.mm")):
        files = sorted((source / rel).glob(pattern))
        if not files:
            raise SystemExit(f"benchmarks/run.py: error: {source / rel} holds no {pattern} file "
                             "(--kernels-from takes the root of a PyTorch source checkout)")
        (root / rel).mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, root / rel / path.name)
            copied += 1
    return copied


def export_revision(rev: str, dest: Path) -> Path:
    """This repository's `mpsgen/` (and templates) at `rev`, unpacked under dest, bytecode compiled."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "mpsgen", "templates"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    # a source checkout finds its templates beside the package, as this worktree does
    compile_bytecode(dest)
    return dest


def compile_bytecode(tree: Path) -> None:
    """What `pip install` does for a wheel: the package's .pyc files, so a timed run does not spend
    its first ~50 ms compiling mpsgen (this machine sets PYTHONDONTWRITEBYTECODE)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "mpsgen")], check=True,
                   stdout=subprocess.DEVNULL)


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in MB, exit code, CPU seconds: user + system) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def measure(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> dict:
    return _summary([run_once(argv, env, cwd) for _ in range(runs + 1)], runs)


def measure_pair(argv: list[str], env: dict[str, str], other_env: dict[str, str] | None, cwd: Path,
                 runs: int) -> tuple[dict, dict | None]:
    """`measure` of this tree and (`other_env`) the compared revision, their runs alternating (this,
    other, this, other, ...) so that a change in the machine's load during the run weighs on both."""
    if other_env is None:
        return measure(argv, env, cwd, runs), None
    shutil.rmtree(cwd / ".mpsgen", ignore_errors=True)
    samples: list[list[tuple[float, float, int, float]]] = [[], []]
    for _ in range(runs + 1):  # the first of each is its warm-up
        for k, environment in enumerate((env, other_env)):
            samples[k].append(run_once(argv, environment, cwd))
            shutil.rmtree(cwd / ".mpsgen", ignore_errors=True)
    return _summary(samples[0], runs), _summary(samples[1], runs)


def _summary(samples: list[tuple[float, float, int, float]], runs: int) -> dict:
    (first, first_peak, code, _), timed = samples[0], samples[1:]
    times = [t for t, _, _, _ in timed]
    return {
        "median_cpu_s": round(statistics.median(c for _, _, _, c in timed), 4),
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "first_s": round(first, 4),
        "peak_mb": round(max([first_peak] + [p for _, p, _, _ in timed]), 1),
        "exit_codes": sorted({code} | {c for _, _, c, _ in timed}),
        "runs": runs,
    }


def scan_available(env: dict[str, str], root: Path) -> bool:
    probe = subprocess.run([sys.executable, "-m", "mpsgen", "scan", "--help"], env=env, cwd=root,
                           capture_output=True, text=True)
    return probe.returncode == 0


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "mpsgen_commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _target_for(label: str) -> float | None:
    for prefix, seconds in TARGETS.items():
        if label.startswith(prefix):
            return seconds
    return None


def table(results: dict) -> str:
    baseline = results["commands"].get(BASELINE, {}).get("median_s")
    compare = results.get("compare", {})
    before = compare.get("commands", {})
    rev = compare.get("rev", "")
    help_ = results["commands"].get("--help", {})
    rows = [("command", "median s", "cpu s", "x --help (cpu)", "first s", "peak MB", f"{rev} s" if rev else "before s",
             "vs before", "vs naive", "target")]
    for label, data in results["commands"].items():
        if "median_s" not in data:
            rows.append((label, data.get("status", "n/a"), "", "", "", "", "", "", "", ""))
            continue
        times_help = ""
        if help_.get("median_cpu_s") and label != "--help":
            cpu_ratio = data["median_cpu_s"] / help_["median_cpu_s"]
            times_help = f"{data['median_s'] / help_['median_s']:.1f}x ({cpu_ratio:.1f}x)"
        old = before.get(label, {}).get("median_s")
        old_cell = f"{old:.3f}" if old else ""
        speedup = f"{old / data['median_s']:.1f}x" if old else ""
        ratio = f"{baseline / data['median_s']:.1f}x" if baseline and label != BASELINE else ""
        goal = _target_for(label)
        verdicts = []
        if goal is not None:
            verdicts.append(f"<= {goal} s " + ("ok" if data["median_s"] <= goal else "MISSED"))
        ratio_goal = next((v for k, v in HELP_RATIO_TARGETS.items() if label.startswith(k)), None)
        if ratio_goal is not None and help_.get("median_cpu_s"):
            ok = data["median_cpu_s"] / help_["median_cpu_s"] <= ratio_goal
            verdicts.append(f"cpu <= {ratio_goal:.1f}x --help " + ("ok" if ok else "MISSED"))
        if label.startswith("migrate") and baseline:
            verdicts.append(f">= {TARGET_RATIO:.0f}x " + ("ok" if baseline / data["median_s"] >= TARGET_RATIO else "MISSED"))
        if label != BASELINE and data["peak_mb"] > TARGET_PEAK_MB:
            verdicts.append(f"peak > {TARGET_PEAK_MB:.0f} MB")
        rows.append((label, f"{data['median_s']:.3f}", f"{data['median_cpu_s']:.3f}", times_help, f"{data['first_s']:.3f}",
                     f"{data['peak_mb']:.0f}", old_cell, speedup, ratio, ", ".join(verdicts)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="a torch wheel (default: the 2.15.0 macOS arm64 wheel from the tests' wheel cache, or pip download)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command after one warm-up (default 5)")
    parser.add_argument("--baseline-runs", type=int, default=None, help="timed runs of the naive baseline (default: --runs)")
    parser.add_argument("--keep", metavar="DIR", help="assemble the checkout in DIR and keep it")
    parser.add_argument("--kernels-from", metavar="PYTORCH",
                        help="take the assembled checkout's kernels/*.metal and operations/*.mm from this PyTorch "
                             "source checkout (its aten/src/ATen/native/mps) instead of the fixture's")
    parser.add_argument("--checkout", metavar="DIR",
                        help="time on this checkout as it is instead (e.g. a PyTorch source checkout); "
                             "commands are read-only")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results.json"), help="where the JSON goes")
    parser.add_argument("--compare-rev", default=DEFAULT_COMPARE_REV,
                        help=f"also time the mpsgen of this git revision, same checkout, same run (default {DEFAULT_COMPARE_REV}; '' skips)")
    args = parser.parse_args(argv)
    if args.checkout and (args.kernels_from or args.wheel or args.keep):
        parser.error("--checkout times a checkout as it is: --wheel, --kernels-from and --keep assemble one")

    compile_bytecode(REPO)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")
    env.pop("MPSGEN_ASSUME_MPS", None)
    with tempfile.TemporaryDirectory(prefix="mpsgen-bench-") as tmp:
        if args.checkout:
            root = Path(args.checkout).resolve()
            source = f"as given: {root}"
        else:
            root = Path(args.keep) if args.keep else Path(tmp) / "pytorch"
            root.mkdir(parents=True, exist_ok=True)
            wheel = find_wheel(args.wheel)
            kernels_from = Path(args.kernels_from).resolve() if args.kernels_from else None
            assemble_checkout(wheel, root, kernels_from)
            shutil.rmtree(root / ".mpsgen", ignore_errors=True)
            source = wheel.name + (f" + kernels and host files of {kernels_from}" if kernels_from else "")
        env["MPSGEN_CACHE_DIR"] = str(Path(tmp) / "index-cache")  # outside the checkout, cold at the first warm-up
        shutil.rmtree(env["MPSGEN_CACHE_DIR"], ignore_errors=True)
        print(f"checkout: {root} ({source})", file=sys.stderr)
        results = {"machine": machine(), "checkout": source, "commands": {}}
        has_scan = scan_available(env, root)
        old_env = None
        if args.compare_rev:
            old = export_revision(args.compare_rev, Path(tmp) / "compare")
            # its own index cache, cold at its first warm-up too (the two revisions may keep it apart)
            old_env = dict(env, PYTHONPATH=str(old) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                           MPSGEN_CACHE_DIR=str(Path(tmp) / "index-cache-compare"))
            results["compare"] = {"rev": args.compare_rev, "commands": {}}
        for label, cmd, kind in COMMANDS:
            if cmd[0] == "scan" and not has_scan:
                results["commands"][label] = {"status": "not available", "kind": kind}
                continue
            argv_ = [sys.executable, "-m", "mpsgen"] + (cmd if cmd == ["--help"] else ["-C", str(root)] + cmd)
            print(f"timing {label}" + (f" (and at {args.compare_rev}, run for run)" if old_env else "") + " ...",
                  file=sys.stderr)
            measured = measure_pair(argv_, env, old_env, root, args.runs)
            results["commands"][label] = {"kind": kind, **measured[0]}
            if old_env is not None:
                results["compare"]["commands"][label] = measured[1]
        env["MPSGEN_CACHE_DIR"] = str(Path(tmp) / "index-cache")  # outside the checkout, cold at the first warm-up
        shutil.rmtree(env["MPSGEN_CACHE_DIR"], ignore_errors=True)
        print(f"timing {BASELINE} (ruamel round-trip load + libcst parse of both test files) ...", file=sys.stderr)
        results["commands"][BASELINE] = {
            "kind": "ruamel rt load of native_functions.yaml + libcst parse of common_mps.py and common_methods_invocations.py",
            **measure([sys.executable, "-c", NAIVE, str(root)], env, root, args.baseline_runs or args.runs),
        }
    baseline = results["commands"][BASELINE]["median_s"]
    for label, data in results["commands"].items():
        if label != BASELINE and "median_s" in data:
            data["speedup_vs_naive"] = round(baseline / data["median_s"], 1)
    results["table"] = table(results)
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    m = results["machine"]
    print(f"{m['cpu']}, {m['cores']} cores, {m['os']}, Python {m['python']}, mpsgen {m['mpsgen_commit']}, {m['date']}")
    print(results["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
