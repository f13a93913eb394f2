"""scan checks its derived candidates (migrate planned, the body through try) in worker processes
forked from it, side by side: the report is the serial one, and what the workers read is recorded
as the scan's own reads (the kept report is used only while those files are the same)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mpsgen.commands import scan as scan_module
from mpsgen.commands.scanreport import Candidate
from mpsgen.read.checkout import Checkout, recording, recording_new
from support import copy_checkout


class _Views:
    def __init__(self, checkout):
        self.checkout = checkout


def _checked_here_or_there(views, derived):
    text = views.checkout.read(f"{derived.op}.txt")
    return Candidate("ready", f"{derived.op}: {text} in {os.getpid()}")


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_each_candidate_is_checked_once_in_order_and_the_workers_reads_are_the_scans(tmp_path, monkeypatch, jobs):
    ops = ["logit", "mse_loss", "signbit", "gelu"]
    for op in ops:
        (tmp_path / f"{op}.txt").write_text(f"{op} text", encoding="utf-8")
    monkeypatch.setattr(scan_module, "_confirm_derived", _checked_here_or_there)
    # (the check here runs no torch op: forking is safe even where this test process ran some)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    derived = [scan_module._Derived(op, "body from somewhere", "") for op in ops]
    checkout = Checkout(tmp_path)
    with recording(tmp_path) as reads:
        found = scan_module.confirm_all(_Views(checkout), derived, jobs)
    assert [c.reason.split(" in ")[0] for c in found] == [f"{op}: {op} text" for op in ops]
    where = {int(c.reason.rsplit(" in ", 1)[1]) for c in found}
    assert (where == {os.getpid()}) == (jobs == 1)  # forked workers check them, this process does not
    assert reads.texts == {f"{op}.txt": f"{op} text" for op in ops}


@pytest.mark.parametrize("given, here", [("1", True), ("2", False), ("none", False)])
def test_mpsgen_jobs_sets_the_workers(tmp_path, monkeypatch, given, here):
    for op in ("logit", "gelu"):
        (tmp_path / f"{op}.txt").write_text("text", encoding="utf-8")
    monkeypatch.setattr(scan_module, "_confirm_derived", _checked_here_or_there)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(scan_module.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setenv("MPSGEN_JOBS", given)  # not a number: the cores
    derived = [scan_module._Derived(op, "body from somewhere", "") for op in ("logit", "gelu")]
    found = scan_module.confirm_all(_Views(Checkout(tmp_path)), derived)
    assert all(c.reason.endswith(f" in {os.getpid()}") == here for c in found)


def test_a_process_that_imported_torch_checks_serially(tmp_path, monkeypatch):
    (tmp_path / "logit.txt").write_text("text", encoding="utf-8")
    (tmp_path / "gelu.txt").write_text("text", encoding="utf-8")
    monkeypatch.setattr(scan_module, "_confirm_derived", _checked_here_or_there)
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch", object()))
    derived = [scan_module._Derived(op, "body from somewhere", "") for op in ("logit", "gelu")]
    found = scan_module.confirm_all(_Views(Checkout(tmp_path)), derived, 2)
    assert [c.reason for c in found] == [f"{op}: text in {os.getpid()}" for op in ("logit", "gelu")]


# a fresh process scanning with `jobs` workers: the report's JSON, then whether it imported torch
SCAN = r"""
import json, sys
from pathlib import Path
from mpsgen.commands import scan
from mpsgen.read.checkout import Checkout
from mpsgen.render.scan_json import report_to_json
report = scan._scan_checkout(Checkout.find(Path(sys.argv[1])), jobs=int(sys.argv[2]))
print(json.dumps(report_to_json(report), indent=1))
print("torch imported:", "torch" in sys.modules)
"""


@pytest.mark.heavy  # two cold scans of the miniature (8 derived candidates, each through try): CI runs it
def test_the_parallel_scan_is_the_serial_scan(tmp_path):
    root = copy_checkout(tmp_path)
    outputs = []
    for jobs in (1, 2):  # each cold, in a process of its own (a process that ran torch's ops checks serially)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env["MPSGEN_CACHE_DIR"] = str(tmp_path / f"cache-{jobs}")
        done = subprocess.run([sys.executable, "-c", SCAN, str(root), str(jobs)], capture_output=True, text=True,
                              env=env, timeout=900)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    serial, parallel = outputs
    assert serial.endswith("torch imported: True\n")  # the derived bodies were tried here
    assert parallel.endswith("torch imported: False\n")  # and there, by the workers alone
    assert sum("body from" in line for line in serial.splitlines()) >= 2
    assert parallel.rsplit("torch", 1)[0] == serial.rsplit("torch", 1)[0]


# ---- the ops' records are made in the workers too, and the checks are handed out costliest first ----


def _record_here_or_there(op):
    candidate = scan_module._Derived(op, "body from somewhere", "") if op.startswith("d_") else Candidate("port", op)
    return _Record(op, candidate, os.getpid())


class _Record:  # what classify_all needs of an OpRecord: its op and candidate (dataclasses.replace)
    def __init__(self, op, candidate, pid):
        self.op, self.candidate, self.pid = op, candidate, pid

    def __eq__(self, other):
        return (self.op, self.candidate) == (other.op, other.candidate)


def _replace(record, candidate):
    return _Record(record.op, candidate, record.pid)


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_records_and_checks_of_the_workers_are_the_serial_ones_in_order(tmp_path, monkeypatch, jobs):
    ops = [f"{'d_' if i % 5 == 0 else 'p_'}{i}" for i in range(40)]
    for op in ops:
        (tmp_path / f"{op}.txt").write_text(f"{op} text", encoding="utf-8")
    monkeypatch.setattr(scan_module, "_confirm_derived", _checked_here_or_there)
    monkeypatch.setattr(scan_module, "replace", lambda record, candidate: _replace(record, candidate))
    monkeypatch.setattr(scan_module, "_check_size", lambda views, op: 0)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    views = _Views(Checkout(tmp_path))

    def record(op):
        views.checkout.read(f"{op}.txt")  # each record reads its file: the scan must see that read
        return _record_here_or_there(op)

    with recording(tmp_path) as reads:
        found = scan_module.classify_all(views, ops, record, jobs, heavy=lambda op: op.startswith("d_"))
    assert [r.op for r in found] == ops
    derived = [r for r in found if r.op.startswith("d_")]
    assert [r.candidate.reason.split(" in ")[0] for r in derived] == [f"{r.op}: {r.op} text" for r in derived]
    assert all(r.candidate == Candidate("port", r.op) for r in found if not r.op.startswith("d_"))
    made_here = {r.pid for r in found} | {int(r.candidate.reason.rsplit(" in ", 1)[1]) for r in derived}
    assert (made_here == {os.getpid()}) == (jobs == 1)
    assert reads.texts == {f"{op}.txt": f"{op} text" for op in ops}


def test_the_ops_with_a_legacy_kernel_come_first_a_few_a_task():
    ops = [f"op{i}" for i in range(100)]
    heavy = {"op3", "op50", "op51", "op52", "op53", "op99"}
    chunks = scan_module._chunks(ops, lambda op: op in heavy, 2)
    assert chunks[0] == ("op3", "op50", "op51", "op52") and chunks[1] == ("op53", "op99")
    rest = [op for chunk in chunks[2:] for op in chunk]
    assert rest == [op for op in ops if op not in heavy]
    # the 94 others: CHUNKS_PER_JOB (8) tasks for each of 2 workers, of ceil(94 / 16) = 6 ops
    assert [len(c) for c in chunks[2:]] == [6] * 15 + [4]


def test_the_costliest_checks_are_handed_out_first(tmp_path, monkeypatch):
    started = tmp_path / "started"

    def check(views, derived):  # in a worker: note which candidate it started on
        with open(started, "a", encoding="utf-8") as log:
            log.write(derived.op + "\n")
        return Candidate("ready", derived.op)

    monkeypatch.setattr(scan_module, "_confirm_derived", check)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    derived = [scan_module._Derived(op, "body from somewhere", "") for op in ("small", "large", "middle")]
    sizes = {"small": 10, "large": 30000, "middle": 9000}

    with scan_module._Pool(_Views(Checkout(tmp_path)), None, 2) as pool:
        pool.jobs = 1  # one worker (forked all the same): the order handed out is the order started
        found = scan_module._check_all(pool, None, derived, sizes)
    assert [c.reason for c in found] == ["small", "large", "middle"]  # answered in the candidates' order
    assert started.read_text(encoding="utf-8").split() == ["large", "middle", "small"]


def test_a_worker_sends_back_only_what_the_scan_had_not_read(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).write_text(f"{name} text", encoding="utf-8")
    checkout = Checkout(tmp_path)
    with recording(tmp_path) as scan_reads:
        checkout.read("a")
        checkout.exists("gone")
        with recording_new(tmp_path) as worker_reads:
            checkout.read("a")
            checkout.read("b")
            checkout.exists("gone")
            checkout.exists("also-gone")
    assert worker_reads.texts == {"b": "b text"}
    assert worker_reads.exists == {"also-gone": False}
    assert scan_reads.texts == {"a": "a text", "b": "b text"}
