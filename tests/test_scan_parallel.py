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
from mpsgen.read.checkout import Checkout, recording
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
