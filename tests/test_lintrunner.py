"""`python -m mpsgen.lintrunner`: `mpsgen verify --changed --static-only --json` as lintrunner
LintMessage JSON lines, on a git work tree holding a half-finished change, and the README's
`.lintrunner.toml` stanza."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support import REPO, copy_checkout, missing, run_cli

from mpsgen.lintrunner import messages_from_run

BINARY_MM = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
LINT_MESSAGE_KEYS = ["path", "line", "char", "code", "severity", "name", "original", "replacement", "description"]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def half_finished_hypot(tmp_path: Path) -> Path:
    """A committed fixture copy, then `new-op hypot` with its REGISTER_DISPATCH line taken out again."""
    root = copy_checkout(tmp_path)
    subprocess.run(GIT + ["init", "-q"], cwd=root, check=True)
    subprocess.run(GIT + ["add", "-A"], cwd=root, check=True)
    subprocess.run(GIT + ["commit", "-qm", "base"], cwd=root, check=True)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    host = root / BINARY_MM
    text, count = re.subn(r"^REGISTER_DISPATCH\(hypot_stub,[^\n]*\n", "", host.read_text(encoding="utf-8"), flags=re.M)
    assert count == 1
    host.write_text(text, encoding="utf-8")
    return root


def adapter(root: Path, *args: str) -> subprocess.CompletedProcess:
    paths = root / ".lintrunner-paths"
    paths.write_text(f"{BINARY_MM}\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mpsgen.lintrunner", *args, "--", f"@{paths}"], cwd=root,
                          capture_output=True, text=True)


def test_each_finding_of_the_changed_ops_is_one_lint_message(tmp_path):
    root = half_finished_hypot(tmp_path)
    doc = json.loads(run_cli(["-C", str(root), "verify", "--changed", "--static-only", "--json"]).stdout)
    assert doc["ops"] == ["hypot"] and doc["findings"]
    run = adapter(root)
    assert run.returncode == 0, run.stderr
    messages = [json.loads(line) for line in run.stdout.splitlines()]
    assert all(list(m) == LINT_MESSAGE_KEYS for m in messages)
    assert messages == [
        {"path": f["path"], "line": f["line"], "char": None, "code": "MPSGEN", "severity": "error", "name": f["check"],
         "original": None, "replacement": None, "description": f"hypot: {f['message']} ({f['hint']})"}
        for f in doc["findings"]
    ]
    assert any(m["name"] == "stub-registration" for m in messages)


def test_a_complete_change_gives_no_message(tmp_path):
    root = half_finished_hypot(tmp_path)
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=root, check=True)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    run = adapter(root, "--base", "HEAD")
    assert (run.returncode, run.stdout) == (0, "")


def test_a_saved_report_is_read_instead_of_running_mpsgen(tmp_path):
    root = half_finished_hypot(tmp_path)
    saved = tmp_path / "verify.json"
    saved.write_text(run_cli(["-C", str(root), "verify", "--changed", "--static-only", "--json"]).stdout, encoding="utf-8")
    assert adapter(root, "--from-json", str(saved)).stdout == adapter(root).stdout


def test_outside_a_git_work_tree_the_error_is_one_message_without_a_path(tmp_path):
    root = copy_checkout(tmp_path)
    run = adapter(root)
    assert run.returncode == 0
    [message] = [json.loads(line) for line in run.stdout.splitlines()]
    assert (message["path"], message["line"], message["name"], message["severity"]) == (None, None, "command-failed", "error")
    assert message["description"].startswith("mpsgen verify failed: mpsgen: error: ")
    assert "git" in message["description"]


def test_a_failed_stage_without_findings_is_a_message_and_skips_are_not():
    document = {"stages": [
        {"name": "static", "status": "passed", "reason": "", "checks": [
            {"check": "dtype-coverage", "op": "x", "status": "skipped", "reason": "no OpInfo", "findings": []}]},
        {"name": "build", "status": "failed", "reason": "no build directory build (--require-build makes this a failure)",
         "checks": []},
        {"name": "tests", "status": "skipped", "reason": "the build failed", "checks": []},
    ]}
    assert messages_from_run(1, json.dumps(document), "") == [
        {"path": None, "line": None, "char": None, "code": "MPSGEN", "severity": "error", "name": "build",
         "original": None, "replacement": None,
         "description": "build failed: no build directory build (--require-build makes this a failure)"},
    ]


def test_readme_lintrunner_stanza_runs_the_adapter():
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    block = readme[readme.index("```toml\n") + len("```toml\n"):]
    [linter] = tomllib.loads(block[: block.index("```")])["linter"]
    assert linter["code"] == "MPSGEN"
    assert linter["command"][:3] == ["python3", "-m", "mpsgen.lintrunner"]
    assert linter["command"][-1] == "@{{PATHSFILE}}"
    assert "aten/src/ATen/native/native_functions.yaml" in linter["include_patterns"]


def test_lintrunner_itself_runs_the_readme_stanza(tmp_path):
    """The stanza as README gives it, run by lintrunner (skipped where lintrunner is not installed:
    `pip install lintrunner`)."""
    import os
    import shutil

    bin_dir = os.path.dirname(sys.executable)
    exe = shutil.which("lintrunner", path=bin_dir) or shutil.which("lintrunner")
    if exe is None:
        missing("lintrunner is not installed (it is in the test extra)")
    root = half_finished_hypot(tmp_path)
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    block = readme[readme.index("```toml\n") + len("```toml\n"):]
    (root / ".lintrunner.toml").write_text(block[: block.index("```")], encoding="utf-8")
    doc = json.loads(run_cli(["-C", str(root), "verify", "--changed", "--static-only", "--json"]).stdout)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))  # python3 = this Python
    run = subprocess.run([exe, "--data-path", str(tmp_path / "lintrunner-data"), "--output", "json"], cwd=root,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    shown = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(m["path"], m["line"], m["code"], m["name"], m["description"]) for m in shown] == [
        (f["path"], f["line"], "MPSGEN", f["check"], f"hypot: {f['message']} ({f['hint']})") for f in doc["findings"]]
