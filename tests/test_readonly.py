"""Read-only commands leave the checkout byte-identical, files git ignores included: `--dry-run`,
`scan`, `verify --static-only` and `try` write nothing inside the work tree (no index cache, no
lock), checked with `git status --porcelain --ignored` on a fresh git copy of the miniature."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mpsgen.read import cache
from mpsgen.read.metalhost.compiler import find_compiler
from support import FIXTURE_CHECKOUT, every_file, missing, run_cli

READ_ONLY = [
    ["new-op", "hypot", "--dry-run"],
    ["new-op", "hypot", "--dry-run", "--json"],
    ["migrate", "atan2", "--dry-run"],
    ["migrate", "asinh", "acosh", "--dry-run"],
    ["scan"],
    ["scan", "--candidates"],
    ["scan", "--json"],
    ["verify", "atan2", "--static-only"],
    ["verify", "--all-native", "--static-only"],
    ["try", "logaddexp", "--reference", "catalog"],
    ["try", "hardshrink", "--show-source"],
    ["try", "logaddexp", "--show-source", "--json"],
]


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def git_copy(tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is not installed")
    root = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_CHECKOUT, root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fixture")
    assert _git(root, "status", "--porcelain", "--ignored") == ""
    return root


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda argv: " ".join(argv))
def test_a_read_only_command_leaves_the_checkout_byte_identical(git_copy, tmp_path, monkeypatch, argv):
    if argv[0] == "try" and find_compiler()[0] is None:
        missing("no C++ compiler (g++/clang++) on PATH")
    monkeypatch.delenv("MPSGEN_NO_CACHE", raising=False)
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "user-cache"))
    before = every_file(git_copy)
    for _ in range(2):  # cold, then warm cache
        result = run_cli(["-C", str(git_copy), *argv])
        assert result.exit_code in (0, 1), result.stderr
        assert _git(git_copy, "status", "--porcelain", "--ignored") == ""
        assert every_file(git_copy) == before
        assert not (git_copy / ".mpsgen").exists()


def test_the_quickstart_from_inside_the_checkout_writes_nothing(git_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "user-cache"))
    cache.forget()  # as a new process starts: what tests before kept in memory is not at hand
    result = run_cli(["new-op", "hypot", "--dry-run"], cwd=git_copy / "aten")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("diff --git")
    assert (tmp_path / "user-cache" / "index").is_dir()  # the cache was used, outside the checkout
    assert _git(git_copy, "status", "--porcelain", "--ignored") == ""


def test_verify_with_build_and_tests_writes_its_logs_outside_the_checkout(git_copy, tmp_path, monkeypatch):
    """The logs go to the user state directory (here $MPSGEN_STATE_DIR), the paths printed; the
    checkout stays byte-identical, ignored files included (the build directory is the user's)."""
    import sys

    monkeypatch.setenv("MPSGEN_STATE_DIR", str(tmp_path / "state"))
    assert run_cli(["-C", str(git_copy), "new-op", "hypot"]).exit_code == 0
    shutil.rmtree(git_copy / ".mpsgen", ignore_errors=True)  # the lock's own .gitignore, from the write
    _git(git_copy, "add", "-A")
    _git(git_copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hypot")
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    before = every_file(git_copy)
    result = run_cli(["-C", str(git_copy), "verify", "hypot", "--assume-mps", "--format", "plain",
                      "--build-dir", str(build_dir), "--build-cmd", f"{sys.executable} {git_copy}/tools/mps_build.py"])
    assert result.exit_code == 0, result.stdout
    logs = sorted((tmp_path / "state" / "logs").glob("*/*.log"))
    assert [p.name for p in logs] == ["build.log", "tests.log"]
    assert f"build log: {logs[0]}" in result.stdout.splitlines()
    assert f"tests log: {logs[1]}" in result.stdout.splitlines()
    assert "test_output_match_hypot_cpu_float32" in logs[1].read_text()
    assert _git(git_copy, "status", "--porcelain", "--ignored") == ""
    assert every_file(git_copy) == before
