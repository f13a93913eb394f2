"""A warm scan and a warm migrate (issue 43): scan's report kept with everything it was computed from
(mpsgen.commands.kept), used only while all of it is the same; a warm `scan` and a warm
`migrate --dry-run` import no torch module (and a warm scan nothing that classifies an op)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.commands import scan as scan_module
from mpsgen.commands import kept as scancache
from mpsgen.commands.kept import kept_scan
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, every_file, needs, run_cli

REPO = Path(__file__).resolve().parent.parent
needs_compiler = needs(None if find_compiler()[0] else "no C++ compiler (g++/clang++) on PATH")

# run mpsgen's CLI in this process, then print which of the named modules it imported
MODULES = r"""
import json, sys
from mpsgen.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
sys.stdout.flush()
names = sorted(sys.modules)
print("\nMODULES " + json.dumps({
    "torch": [n for n in names if n == "torch" or n.startswith("torch.")],
    "scan": [n for n in names if n in ("mpsgen.commands.scan", "mpsgen.facts.views", "mpsgen.edit.pipeline")],
    "try": [n for n in names if n.startswith("mpsgen.commands.tryop.")][:1],
}), file=sys.stderr)
"""


@pytest.fixture
def scan_cache(monkeypatch):
    """The kept scan report on (each test's checkout is its own copy: a report of its own)."""
    monkeypatch.delenv("MPSGEN_NO_KEPT", raising=False)


def _modules(root: Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", MODULES, "-C", str(root), *args], capture_output=True, text=True,
                          env=env, timeout=600)
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return json.loads(line[len("MODULES "):])


@needs_compiler
def test_a_warm_scan_imports_no_torch_and_nothing_that_classifies_an_op(tmp_path, scan_cache):
    root = copy_checkout(tmp_path)
    cold = _modules(root, "scan", "--json")
    assert cold["scan"]  # the first scan computes (and may import torch for a derived body's check)
    warm = _modules(root, "scan", "--json")
    assert warm == {"torch": [], "scan": [], "try": []}


@needs_compiler
def test_a_warm_migrate_dry_run_of_a_derived_body_imports_no_torch(tmp_path, scan_cache):
    # gelu's body comes from its CPU kernel: compiled and tried once, the verdicts kept by content
    root = copy_checkout(tmp_path)
    _modules(root, "migrate", "gelu", "--dry-run")
    warm = _modules(root, "migrate", "gelu", "--dry-run")
    assert (warm["torch"], warm["scan"]) == ([], [])  # the kept plan: nothing planned, nothing imported to plan


def test_a_kept_report_is_the_scans_own_and_nothing_is_classified_again(tmp_path, scan_cache, monkeypatch):
    root = copy_checkout(tmp_path)
    first = run_cli(["-C", str(root), "scan", "--json"])
    assert first.exit_code == 0, first.stderr
    after = every_file(root)
    computed = []
    original = scan_module._scan_checkout
    monkeypatch.setattr(scan_module, "_scan_checkout", lambda checkout: computed.append(1) or original(checkout))
    again = run_cli(["-C", str(root), "scan", "--json"])
    assert (again.stdout, computed) == (first.stdout, [])
    assert every_file(root) == after  # read-only: nothing written in the checkout
    # the library call takes it too
    assert scan_module.scan_checkout(Checkout(root)) == kept_scan(Checkout(root)) and computed == []


@pytest.mark.parametrize("change", ["edit", "add", "remove", "style", "setting"])
def test_a_change_where_the_scan_looked_scans_again(tmp_path, scan_cache, monkeypatch, change):
    root = copy_checkout(tmp_path)
    first = run_cli(["-C", str(root), "scan", "--json"])
    assert first.exit_code == 0, first.stderr
    kernels = root / "aten/src/ATen/native/mps/kernels"
    if change == "edit":  # a file it read: another text
        yaml = root / "aten/src/ATen/native/native_functions.yaml"
        yaml.write_text(yaml.read_text().replace("- func: hypot.out(", "- func: hypot.out(  ", 1))
    elif change == "add":  # a directory it listed: another listing
        (kernels / "Extra.metal").write_text("// another kernel file\n")
    elif change == "remove":
        next(kernels.glob("*.metal")).unlink()
    elif change == "style":  # the .clang-format a migrate's plan formats by
        (root / ".clang-format").write_text((root / ".clang-format").read_text() + "\n# another style\n")
    else:
        monkeypatch.setenv("MPSGEN_CXX", "g++")
    assert kept_scan(Checkout(root)) is None
    computed = []
    original = scan_module._scan_checkout
    monkeypatch.setattr(scan_module, "_scan_checkout", lambda checkout: computed.append(1) or original(checkout))
    assert run_cli(["-C", str(root), "scan", "--json"]).exit_code == 0
    assert computed == [1]
    assert kept_scan(Checkout(root)) is not None  # and the new report is kept


def test_a_corrupt_kept_report_is_ignored(tmp_path, scan_cache):
    root = copy_checkout(tmp_path)
    first = run_cli(["-C", str(root), "scan", "--json"])
    kept = scancache._path(root)
    kept.write_bytes(b"not a pickle")
    assert kept_scan(Checkout(root)) is None
    assert run_cli(["-C", str(root), "scan", "--json"]).stdout == first.stdout


def test_a_kept_plan_is_the_commands_own_until_a_file_it_read_changes(tmp_path, scan_cache, monkeypatch):
    from mpsgen.commands import migrate as migrate_module

    root = copy_checkout(tmp_path)
    first = run_cli(["-C", str(root), "migrate", "asinh", "--dry-run"])
    assert first.exit_code == 0, first.stderr
    planned = []
    original = migrate_module.plan_migrate
    monkeypatch.setattr(migrate_module, "plan_migrate", lambda *a, **k: planned.append(1) or original(*a, **k))
    again = run_cli(["-C", str(root), "migrate", "asinh", "--dry-run"])
    assert (again.stdout, again.stderr, planned) == (first.stdout, first.stderr, [])
    other = run_cli(["-C", str(root), "migrate", "asinh", "--dry-run", "--json"])  # same plan, kept per command line
    assert other.exit_code == 0 and planned == [] and json.loads(other.stdout)["command"] == "migrate"
    # written from the kept plan: the same files as a fresh plan writes
    fresh = copy_checkout(tmp_path / "fresh")
    monkeypatch.setenv("MPSGEN_NO_KEPT", "1")
    assert run_cli(["-C", str(fresh), "migrate", "asinh"]).exit_code == 0 and planned == [1]
    monkeypatch.delenv("MPSGEN_NO_KEPT")
    assert run_cli(["-C", str(root), "migrate", "asinh"]).exit_code == 0 and planned == [1]
    assert {k: v for k, v in every_file(root).items() if not k.startswith(".mpsgen")} == \
        {k: v for k, v in every_file(fresh).items() if not k.startswith(".mpsgen")}
    # the checkout changed (the migration itself): planned again, and nothing left to do
    after = run_cli(["-C", str(root), "migrate", "asinh", "--dry-run"])
    assert after.exit_code == 0 and planned == [1, 1] and after.stdout == ""
