"""The overhead of `mpsgen trace` over running the same script plainly, on a small model.

The workload (written to a temporary file) trains a small MLP with mish and softplus: forward,
backward and an SGD step per batch, batch sizes cycling through 16, 32, 48, 64, one thread
(`torch.set_num_threads(1)`, so that the figures do not depend on what else the 2 cores run). In one
run, alternating so that both sides see the same machine:

- in process: the workload's `run(steps)` plainly, under an empty `TorchDispatchMode` (what any
  dispatch mode costs) and under mpsgen's recorder (the mode `mpsgen trace` uses), median of
  `--runs`; the ratio is the tracing overhead itself, also per recorded call in microseconds;
- whole processes, `--process-steps` (2000) steps: `python workload.py` against `python -m mpsgen -C
  fixtures/pytorch trace workload.py` (adds mpsgen's start-up, the scan of the checkout and the
  report; `us/call` spreads the difference over the calls of those steps).

Prints a table and writes benchmarks/results-trace.json. Not a test: nothing here asserts.

    python benchmarks/bench_trace.py [--steps 200] [--runs 5] [--process-steps 2000]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "pytorch"
RESULTS = Path(__file__).resolve().parent / "results-trace.json"

WORKLOAD = '''
import sys
import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc3(F.softplus(self.fc2(F.mish(self.fc1(x)))))


def run(steps):
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        batch = (16, 32, 48, 64)[step % 4]
        x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    run(int(sys.argv[1]))
'''


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _process(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=_env())
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--process-steps", type=int, default=2000,
                        help="steps of the whole-process runs (enough that the training outweighs import torch's noise)")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    import torch

    from mpsgen.commands.trace.recorder import _recorder_class

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "workload.py"
        script.write_text(WORKLOAD, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("workload", script)
        workload = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(workload)  # type: ignore[union-attr]
        Recorder = _recorder_class(torch)
        from torch.utils._python_dispatch import TorchDispatchMode

        class Empty(TorchDispatchMode):  # what any dispatch mode costs, before recording anything
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        workload.run(10)  # warm-up
        plain, empty, traced, calls = [], [], [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            workload.run(args.steps)
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            with Empty():
                workload.run(args.steps)
            empty.append(time.perf_counter() - start)
            recorder = Recorder()
            start = time.perf_counter()
            with recorder:
                workload.run(args.steps)
            traced.append(time.perf_counter() - start)
            calls = sum(count for count, _ in recorder.counts.values())
            overloads = len({func for func, _ in recorder.counts})
            signatures = len(recorder.counts)

        plain_process, traced_process = [], []
        mpsgen = [sys.executable, "-m", "mpsgen", "-C", str(FIXTURE), "trace", str(script), str(args.process_steps)]
        _process([sys.executable, str(script), "1"])  # warm the OS caches
        for _ in range(args.runs):
            plain_process.append(_process([sys.executable, str(script), str(args.process_steps)]))
            traced_process.append(_process(mpsgen))

    p, e, t = statistics.median(plain), statistics.median(empty), statistics.median(traced)
    pp, tp = statistics.median(plain_process), statistics.median(traced_process)
    rows = [
        ("in process, empty TorchDispatchMode", f"{p:.3f}", f"{e:.3f}", f"{e / p:.2f}x", f"{(e - p) / calls * 1e6:.1f}"),
        ("in process, mpsgen's recorder", f"{p:.3f}", f"{t:.3f}", f"{t / p:.2f}x", f"{(t - p) / calls * 1e6:.1f}"),
        (f"whole process, {args.process_steps} steps", f"{pp:.3f}", f"{tp:.3f}", f"{tp / pp:.2f}x",
         f"{(tp - pp) / (calls * args.process_steps / args.steps) * 1e6:.1f}"),
    ]
    header = ("measure", "plain s", "traced s", "ratio", "us/call")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    table = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    table += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}, torch {torch.__version__}"
    print(f"{args.steps} steps of a 64-256-256-10 MLP (mish, softplus, SGD), batch 16/32/48/64; "
          f"{calls} ATen calls of {overloads} overloads, {signatures} signatures; median of {args.runs}")
    print(machine)
    print("\n".join(table))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    RESULTS.write_text(json.dumps({
        "benchmark": "mpsgen trace overhead over the plain script (small MLP training loop)",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mpsgen": commit, "machine": machine, "steps": args.steps, "process_steps": args.process_steps, "runs": args.runs,
        "calls": calls, "overloads": overloads, "signatures": signatures,
        "in_process_seconds": {"plain": plain, "empty_mode": empty, "traced": traced},
        "process_seconds": {"plain": plain_process, "traced": traced_process},
        "table": table,
    }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
