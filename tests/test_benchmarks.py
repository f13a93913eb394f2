"""benchmarks/run.py, the script the README's performance figures come from, runs as documented:
on a checkout as it is (`--checkout`), with the tests' helpers it loads found from a fresh process,
and with a PyTorch source tree's kernels and host files (`--kernels-from`). Nothing here times
anything: the figures are the script's to report, not a test's to assert."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import FIXTURE_CHECKOUT, copy_checkout, every_file

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "benchmarks" / "run.py"


def _run_py():
    spec = importlib.util.spec_from_file_location("mpsgen_benchmarks_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _script(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    environ.update(env)
    # a fresh process in another directory, as a newcomer runs it: nothing of the tests' sys.path
    return subprocess.run([sys.executable, str(RUN), *args], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.heavy  # every command of the table run cold and warm (~9 s, the suite's slowest): CI runs it
def test_run_on_a_checkout_as_it_is_times_every_command_and_writes_nothing_there(tmp_path):
    root = copy_checkout(tmp_path)
    before = every_file(root)
    out = tmp_path / "results.json"
    done = _script(["--checkout", str(root), "--runs", "1", "--baseline-runs", "1", "--compare-rev", "",
                    "--output", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checkout"] == f"as given: {root}"
    timed = results["commands"]
    assert set(timed) == {label for label, _, _ in _run_py().COMMANDS} | {"naive baseline"}
    for label, data in timed.items():
        assert data["median_s"] > 0 and data["median_cpu_s"] > 0 and data["runs"] == 1, label
    assert results["table"] in done.stdout
    assert every_file(root) == before


def test_the_tests_wheel_cache_is_found_from_a_fresh_process(tmp_path):
    # run.py loads tests/releases.py, which imports its neighbour support.py at call time
    code = ("import runpy, sys; ns = runpy.run_path(sys.argv[1], run_name='bench'); "
            "print(ns['_releases']().wheel_cache())")
    done = subprocess.run([sys.executable, "-c", code, str(RUN)], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, MPSGEN_WHEEL_CACHE=str(tmp_path / "wheels")), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "wheels" / "macos-arm64")


def test_kernels_from_copies_a_source_trees_metal_and_host_files(tmp_path):
    run = _run_py()
    root = tmp_path / "assembled"
    copied = run.copy_kernels(FIXTURE_CHECKOUT, root)
    expected = sorted(
        f"{rel}/{path.name}"
        for rel, pattern in zip(run.MPS_FIXTURE_DIRS, ("*.metal", "*.mm"))
        for path in (FIXTURE_CHECKOUT / rel).glob(pattern)
    )
    assert copied == len(expected)
    assert sorted(every_file(root)) == expected
    for rel in expected:
        assert (root / rel).read_bytes() == (FIXTURE_CHECKOUT / rel).read_bytes()


def test_kernels_from_a_tree_without_them_stops_with_one_line(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        _run_py().copy_kernels(tmp_path, tmp_path / "assembled")
    assert str(stopped.value) == (
        f"benchmarks/run.py: error: {tmp_path / 'aten/src/ATen/native/mps/kernels'} holds no *.metal file "
        "(--kernels-from takes the root of a PyTorch source checkout)"
    )


def test_checkout_with_assembly_options_is_a_usage_error(tmp_path):
    done = _script(["--checkout", str(tmp_path), "--kernels-from", str(FIXTURE_CHECKOUT)], tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "run.py: error: --checkout times a checkout as it is: --wheel, --kernels-from and --keep assemble one"
    )


def _bench_warm():
    spec = importlib.util.spec_from_file_location("mpsgen_benchmarks_warm", REPO / "benchmarks" / "bench_warm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_bench_warm_stops_at_a_run_ending_with_a_code_the_command_should_not_end_with(tmp_path):
    warm = _bench_warm()
    codes = iter([0, 0, 1])
    runs = []

    def run_once(argv, env, cwd):
        runs.append(argv)
        return 0.5, 40.0, next(codes), 0.4

    env = {"MPSGEN_CACHE_DIR": str(tmp_path / "cache")}
    with pytest.raises(warm.Failed) as failed:
        warm.measure(run_once, ["python", "-c", "naive"], env, tmp_path, 3)
    assert str(failed.value) == "exit code 1 (expected 0): python -c naive"
    assert len(runs) == 3  # the cold run, then warm ones until the failing one
    codes = iter([1, 0])
    done = warm.measure(run_once, ["mpsgen", "try"], env, tmp_path, 1, {0, 1})
    assert done["exit_codes"] == [0, 1] and done["runs"] == 1


def test_bench_warm_refuses_an_interpreter_without_what_the_naive_parse_imports(tmp_path, capsys):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'libcst'\" >&2\nexit 1\n", encoding="utf-8")
    python.chmod(0o755)
    out = tmp_path / "results.json"
    code = _bench_warm().main(["--python", str(python), "--real", str(tmp_path), "--source", str(tmp_path),
                               "--output", str(out)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"bench_warm: {python} cannot run the benchmark (ModuleNotFoundError: No module named 'libcst'): install "
        "mpsgen and libcst into it (VENV/bin/pip install . libcst; see docs/performance.md)\n")
    assert not out.exists()


def test_bench_warm_takes_the_median_of_cold_runs_each_with_the_cache_emptied(tmp_path):
    warm = _bench_warm()
    cache = tmp_path / "cache"
    seen = []
    times = iter([9.0, 7.0, 8.0, 0.2, 0.3])

    def run_once(argv, env, cwd):
        seen.append(cache.exists())  # a cold run finds no cache; a warm one finds what the runs kept
        cache.mkdir(exist_ok=True)
        elapsed = next(times)
        return elapsed, 40.0, 0, elapsed / 2

    done = warm.measure(run_once, ["mpsgen", "scan"], {"MPSGEN_CACHE_DIR": str(cache)}, tmp_path, 2, cold_runs=3)
    assert seen == [False, False, False, True, True]
    assert (done["cold_s"], done["cold_cpu_s"], done["cold_all_s"]) == (8.0, 4.0, [9.0, 7.0, 8.0])
    assert (done["warm_s"], done["runs"], done["cold_runs"]) == (0.25, 2, 3)
