"""Benchmark `mpsgen scan --json` on a real-size checkout against the naive full-parse approach.

The checkout is assembled in a temporary directory from the PyTorch 2.15.0 macOS arm64 wheel (native_functions.yaml,
tags.yaml, ATen/native headers, c10/metal headers, common_mps.py, common_methods_invocations.py) plus
the fixture's `.mm` and `.metal` files (the wheel ships none). Both sides run as whole processes:

- scan: `python -m mpsgen -C <checkout> scan --json` (output discarded);
- baseline: what a straightforward implementation parses — a ruamel.yaml round-trip load of
  native_functions.yaml and a libcst parse of common_mps.py and common_methods_invocations.py.

Each is run once to warm the OS caches, then 5 times; the medians, their ratio and the machine are
printed as a table and written to benchmarks/results-scan.json.

    python benchmarks/bench_scan.py [--runs N] [--wheel PATH]
"""

from __future__ import annotations

import argparse
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
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "pytorch"
RESULTS = Path(__file__).resolve().parent / "results-scan.json"
TORCH_VERSION = "2.15.0"  # tests/releases.py NEWEST
BUDGET_SECONDS = 1.0

# wheel member prefix -> checkout directory; members taken (by suffix, one level only unless exact)
LAYOUT = (
    ("torchgen/packaged/ATen/native/", "aten/src/ATen/native/", ".yaml"),
    ("torch/include/ATen/native/mps/", "aten/src/ATen/native/mps/", ".h"),
    ("torch/include/ATen/native/", "aten/src/ATen/native/", ".h"),
    ("torch/include/c10/metal/", "c10/metal/", ".h"),
    ("torch/testing/_internal/common_mps.py", "torch/testing/_internal/common_mps.py", None),
    ("torch/testing/_internal/common_methods_invocations.py", "torch/testing/_internal/common_methods_invocations.py", None),
)
FROM_FIXTURE = ("aten/src/ATen/native/mps/operations", "aten/src/ATen/native/mps/kernels")

BASELINE = r"""
import sys
from pathlib import Path
import libcst
from ruamel.yaml import YAML

root = Path(sys.argv[1])
YAML().load((root / "aten/src/ATen/native/native_functions.yaml").read_text(encoding="utf-8"))
for rel in ("torch/testing/_internal/common_mps.py", "torch/testing/_internal/common_methods_invocations.py"):
    libcst.parse_module((root / rel).read_text(encoding="utf-8"))
"""


def find_wheel(explicit: str | None) -> Path:
    """--wheel, else the newest release's macOS arm64 wheel (tests/releases.py: the tests' cache, or
    pip download there)."""
    if explicit:
        return Path(explicit)
    spec = importlib.util.spec_from_file_location("mpsgen_tests_releases", REPO / "tests" / "releases.py")
    releases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(releases)  # type: ignore[union-attr]
    return releases.fetch_wheel(TORCH_VERSION)


def assemble(wheel: Path, root: Path) -> dict[str, int]:
    """Lay the wheel's files and the fixture's host/kernel files out as a checkout; returns counts."""
    counts: dict[str, int] = {}
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            for prefix, dest, suffix in LAYOUT:
                if suffix is None:
                    target = dest if member == prefix else None
                elif member.startswith(prefix) and member.endswith(suffix) and "/" not in member[len(prefix):]:
                    target = dest + member[len(prefix):]
                else:
                    target = None
                if target:
                    path = root / target
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(archive.read(member))
                    counts[Path(target).suffix] = counts.get(Path(target).suffix, 0) + 1
                    break
    for rel in FROM_FIXTURE:
        (root / rel).mkdir(parents=True, exist_ok=True)
        for path in (FIXTURE / rel).iterdir():
            shutil.copy(path, root / rel / path.name)
            counts[path.suffix] = counts.get(path.suffix, 0) + 1
    return counts


def _env() -> dict[str, str]:
    """This checkout's mpsgen first on the path (an editable install may point at another one)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def timed(command: list[str], runs: int) -> list[float]:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=REPO, env=_env())  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=REPO, env=_env())
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--wheel", default=None, help=f"path to the torch {TORCH_VERSION} wheel")
    args = parser.parse_args()

    wheel = find_wheel(args.wheel)
    with tempfile.TemporaryDirectory(prefix="mpsgen-bench-scan-") as tmp:
        root = Path(tmp) / "pytorch"
        counts = assemble(wheel, root)
        lines = {
            rel: (root / rel).read_text(encoding="utf-8").count("\n")
            for rel in ("aten/src/ATen/native/native_functions.yaml", "torch/testing/_internal/common_mps.py",
                        "torch/testing/_internal/common_methods_invocations.py")
        }
        env_python = [sys.executable]
        scan_cmd = env_python + ["-m", "mpsgen", "-C", str(root), "scan", "--json"]
        out = subprocess.run(scan_cmd, check=True, capture_output=True, text=True, cwd=REPO, env=_env()).stdout
        document = json.loads(out)
        scan_times = timed(scan_cmd, args.runs)
        baseline_times = timed(env_python + ["-c", BASELINE, str(root)], args.runs)

    scan_median = statistics.median(scan_times)
    baseline_median = statistics.median(baseline_times)
    result = {
        "benchmark": "mpsgen scan --json (whole process) vs naive full parse (ruamel round-trip yaml + libcst on common_mps.py and common_methods_invocations.py)",
        "torch_version": TORCH_VERSION,
        "runs": args.runs,
        "files": counts,
        "lines": lines,
        "ops": document["totals"]["ops"],
        "scan_seconds": [round(t, 4) for t in scan_times],
        "baseline_seconds": [round(t, 4) for t in baseline_times],
        "scan_median_seconds": round(scan_median, 4),
        "baseline_median_seconds": round(baseline_median, 4),
        "speedup": round(baseline_median / scan_median, 1),
        "budget_seconds": BUDGET_SECONDS,
        "within_budget": scan_median <= BUDGET_SECONDS,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"real-size checkout: {result['ops']} ops; files {counts}; lines {lines}")
    print(f"{'':38} {'median':>9} {'min':>9} {'max':>9}")
    for name, times in (("mpsgen scan --json", scan_times), ("baseline (ruamel + libcst full parse)", baseline_times)):
        print(f"{name:38} {statistics.median(times):8.3f}s {min(times):8.3f}s {max(times):8.3f}s")
    verdict = "within" if result["within_budget"] else "OVER"
    print(f"speedup x{result['speedup']}; scan {verdict} the {BUDGET_SECONDS:.1f} s budget; written to {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
