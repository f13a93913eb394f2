"""One run per checkout: `.mpsgen/lock` names its holder; a dead holder's lock is taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from mpsgen.errors import MpsgenError
from mpsgen.edit.lock import CheckoutLock, read_holder
from support import REPO, copy_checkout, run_cli, snapshot


def write_lock(root, pid, host=None, started="2026-01-01T00:00:00+0000"):
    (root / ".mpsgen").mkdir(exist_ok=True)
    (root / ".mpsgen" / "lock").write_text(json.dumps({"pid": pid, "host": host or socket.gethostname(), "started": started}))


@pytest.fixture
def live_pid():
    # alive until the test ends and closes its stdin: no sleep whose length a slow run could outlast
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield proc.pid
    proc.stdin.close()
    proc.wait()


@pytest.fixture
def dead_pid():
    # a pid no process can have (above Linux's PID_MAX_LIMIT, 2**22, and macOS's 99999): a child
    # that exited would do only until the system hands its pid to another process
    return 2**22 + 1


def test_a_live_holder_stops_the_run_and_is_named(tmp_path, live_pid):
    root = copy_checkout(tmp_path)
    write_lock(root, live_pid)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"mpsgen: error: .mpsgen/lock: another mpsgen run (pid {live_pid} on {socket.gethostname()}, started "
        "2026-01-01T00:00:00+0000) is changing this checkout (wait for it to finish; if that process is gone, "
        "delete .mpsgen/lock)\n"
    )
    assert snapshot(root) == before
    assert read_holder(root / ".mpsgen" / "lock").pid == live_pid  # someone else's lock is left alone


def test_a_real_second_process_holding_the_lock_stops_the_run(tmp_path):
    root = copy_checkout(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from mpsgen.edit.lock import CheckoutLock\n"
         "with CheckoutLock(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot(root)
        result = run_cli(["-C", str(root), "new-op", "hypot"])
        assert result.exit_code == 2
        assert f"(pid {holder.pid} on " in result.stderr and result.stderr.count("\n") == 1
        assert snapshot(root) == before
    finally:
        holder.stdin.close()  # the holder lets go when its stdin ends
        holder.wait()


def test_a_dead_holders_lock_is_taken_over_with_a_warning(tmp_path, dead_pid):
    root = copy_checkout(tmp_path)
    write_lock(root, dead_pid)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    assert f"mpsgen: warning: took over the lock of a run that is gone (pid {dead_pid} on" in result.stderr
    assert not (root / ".mpsgen" / "lock").exists()
    assert b"hypot_stub" in (root / "aten/src/ATen/native/mps/operations/BinaryKernel.mm").read_bytes()


def test_our_own_pid_in_a_leftover_lock_is_stale(tmp_path):
    root = copy_checkout(tmp_path)
    write_lock(root, os.getpid())
    with CheckoutLock(root) as lock:
        assert lock.stale_removed is not None


def test_a_lock_from_another_host_is_respected(tmp_path, dead_pid):
    root = copy_checkout(tmp_path)
    write_lock(root, dead_pid, host="build-server-7")
    with pytest.raises(MpsgenError, match=f"pid {dead_pid} on build-server-7"):
        CheckoutLock(root).acquire()


def test_an_unreadable_lock_is_held_while_young_and_stale_when_old(tmp_path, monkeypatch):
    # the lock module's clock is the test's: "young" is 1 s after the file's time however slow the run
    from mpsgen.edit import lock as lock_module

    root = copy_checkout(tmp_path)
    (root / ".mpsgen").mkdir()
    lock = root / ".mpsgen" / "lock"
    lock.write_text("")
    written = lock.stat().st_mtime
    now = [written + 1]
    monkeypatch.setattr(lock_module, "time", SimpleNamespace(time=lambda: now[0], strftime=time.strftime))
    with pytest.raises(MpsgenError, match="still being written"):
        CheckoutLock(root).acquire()
    now[0] = written + lock_module.UNREADABLE_GRACE_SECONDS + 1
    with CheckoutLock(root):
        assert read_holder(lock).pid == os.getpid()
    assert not lock.exists()


def test_the_lock_is_released_after_success_and_after_errors(tmp_path):
    root = copy_checkout(tmp_path)
    def left_behind():
        # the lock and its .gitignore go; the index cache (git-ignored, safe to delete) may stay
        return sorted(p.name for p in (root / ".mpsgen").iterdir()) if (root / ".mpsgen").exists() else []

    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    assert left_behind() in ([], ["cache"])
    assert run_cli(["-C", str(root), "new-op", "no_such_op"]).exit_code == 2
    assert left_behind() in ([], ["cache"])
    (root / ".mpsgen" / "templates").mkdir(parents=True, exist_ok=True)
    assert run_cli(["-C", str(root), "new-op", "nextafter"]).exit_code == 0
    assert left_behind() in (["templates"], ["cache", "templates"])


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path, live_pid):
    root = copy_checkout(tmp_path)
    lock = CheckoutLock(root)
    lock.acquire()
    write_lock(root, live_pid)  # someone removed ours by hand and took it
    lock.release()
    assert read_holder(root / ".mpsgen" / "lock").pid == live_pid


def test_a_dry_run_takes_no_lock(tmp_path, live_pid):
    root = copy_checkout(tmp_path)
    write_lock(root, live_pid)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert result.exit_code == 0, result.stderr


def test_the_lock_directory_keeps_git_status_clean(tmp_path):
    root = copy_checkout(tmp_path)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    lock = CheckoutLock(root)
    lock.acquire()
    try:
        status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"],
                                capture_output=True, text=True, check=True).stdout
        assert status == ""
    finally:
        lock.release()
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert sorted(line[3:] for line in status.splitlines()) == [
        "aten/src/ATen/native/mps/kernels/BinaryKernel.metal",
        "aten/src/ATen/native/mps/operations/BinaryKernel.mm",
        "aten/src/ATen/native/native_functions.yaml",
        "torch/testing/_internal/common_mps.py",
    ]


def test_an_existing_mpsgen_gitignore_is_not_replaced(tmp_path):
    root = copy_checkout(tmp_path)
    (root / ".mpsgen").mkdir()
    (root / ".mpsgen" / ".gitignore").write_text("mine\n")
    with CheckoutLock(root):
        pass
    assert (root / ".mpsgen" / ".gitignore").read_text() == "mine\n"
