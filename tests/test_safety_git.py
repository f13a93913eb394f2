"""Uncommitted work in a file the plan touches: a warning, or with --require-clean a refusal."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mpsgen.read.gitstate import uncommitted
from support import copy_checkout, run_cli, snapshot

HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
NF = "aten/src/ATen/native/native_functions.yaml"


def git_repo(path: Path) -> None:
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)


def warning(rel: str) -> str:
    return (f"mpsgen: warning: {rel} has uncommitted changes; mpsgen's edits will mix with them "
            "(commit or stash first to review them apart)\n")


@pytest.fixture
def repo(tmp_path):
    root = copy_checkout(tmp_path)
    git_repo(root)
    return root


def test_a_clean_checkout_gives_no_warning(repo):
    result = run_cli(["-C", str(repo), "new-op", "hypot"])
    assert result.exit_code == 0
    assert result.stderr == ""


def test_uncommitted_work_in_a_touched_file_is_warned_about_and_kept(repo):
    host = repo / HOST
    host.write_bytes(host.read_bytes() + b"// work in progress\n")
    result = run_cli(["-C", str(repo), "new-op", "hypot"])
    assert result.exit_code == 0
    assert result.stderr == warning(HOST)
    data = host.read_bytes()
    assert data.endswith(b"// work in progress\n") and b"hypot_stub" in data


def test_require_clean_refuses_and_writes_nothing(repo):
    host = repo / HOST
    host.write_bytes(host.read_bytes() + b"// work in progress\n")
    (repo / METAL).write_bytes((repo / METAL).read_bytes() + b"// more\n")
    before = snapshot(repo)
    for dry_run in ([], ["--dry-run"]):
        result = run_cli(["-C", str(repo), "new-op", "hypot", "--require-clean", *dry_run])
        assert result.exit_code == 2
        assert result.stderr == (f"mpsgen: error: {METAL} (and 1 more) has uncommitted changes and --require-clean "
                                 "was given (commit or stash them first, or run without --require-clean)\n")
        assert snapshot(repo) == before


def test_require_clean_passes_when_only_untouched_files_are_dirty(repo):
    header = repo / "aten/src/ATen/native/BinaryOps.h"
    header.write_bytes(header.read_bytes() + b"// unrelated\n")
    result = run_cli(["-C", str(repo), "new-op", "hypot", "--require-clean"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


def test_staged_and_untracked_changes_count(repo):
    subprocess.run(["git", "-C", str(repo), "rm", "-q", "--cached", NF], check=True)
    host = repo / HOST
    host.write_bytes(host.read_bytes() + b"// staged\n")
    subprocess.run(["git", "-C", str(repo), "add", HOST], check=True)
    assert uncommitted(repo, [METAL, HOST, NF]) == (HOST, NF)


def test_a_checkout_inside_a_larger_repository(tmp_path):
    root = copy_checkout(tmp_path)
    git_repo(tmp_path)  # the repository's top is one level above the checkout
    (root / HOST).write_bytes((root / HOST).read_bytes() + b"// wip\n")
    assert uncommitted(root, [METAL, HOST]) == (HOST,)


def test_not_a_repository_or_no_git_means_no_warning(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    assert uncommitted(root, [HOST]) == ()
    git_repo(root)
    (root / HOST).write_bytes(b"changed\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert uncommitted(root, [HOST]) == ()
