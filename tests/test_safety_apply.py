"""Atomic apply: temp file + fsync + rename, mode and line endings kept, and every failure restores
what was already written and names the file that failed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mpsgen.edit import apply as apply_module
from mpsgen.edit.apply import apply_plan
from mpsgen.read.checkout import Checkout
from mpsgen.errors import MpsgenError
from mpsgen.commands.newop import plan_new_op
from mpsgen.facts.resolve import Options
from support import changed_files, copy_checkout, run_cli, snapshot

NF = "aten/src/ATen/native/native_functions.yaml"
METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
CMI = "torch/testing/_internal/common_methods_invocations.py"


def hypot_plan(root: Path):
    plan = plan_new_op(Checkout(root), "hypot", Options())
    assert sorted(e.path for e in plan.edits) == sorted([HOST, METAL, NF, COMMON_MPS])
    return plan


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.mpsgen-tmp")]


def test_apply_writes_every_file_and_leaves_no_temp_files(tmp_path):
    root = copy_checkout(tmp_path)
    plan = hypot_plan(root)
    written = apply_plan(plan)
    assert sorted(written) == sorted([HOST, METAL, NF, COMMON_MPS])
    for edit in plan.edits:
        assert (root / edit.path).read_bytes() == edit.after.encode("utf-8")
    assert temp_files(root) == []


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o755, 0o664])
def test_file_mode_is_kept(tmp_path, mode):
    root = copy_checkout(tmp_path)
    for rel in (NF, METAL, HOST):
        os.chmod(root / rel, mode)
    apply_plan(hypot_plan(root))
    for rel in (NF, METAL, HOST):
        assert (root / rel).stat().st_mode & 0o7777 == mode, rel


def test_every_write_goes_through_a_fsynced_temp_file_in_the_same_directory(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    plan = hypot_plan(root)
    renames, synced = [], []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append((Path(src), Path(dst))), real_replace(src, dst)))
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    apply_plan(plan)
    assert [dst for _, dst in renames] == [root / e.path for e in plan.edits]
    for src, dst in renames:
        assert src.parent == dst.parent and src.name.endswith(".mpsgen-tmp")
    assert len(synced) >= len(plan.edits)


def crlf(root: Path, rels) -> None:
    for rel in rels:
        path = root / rel
        path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))


def test_crlf_files_stay_crlf_in_every_family_of_the_pipeline(tmp_path):
    root = copy_checkout(tmp_path)
    crlf(root, (NF, METAL, HOST))
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    for rel in (NF, METAL, HOST):
        data = (root / rel).read_bytes()
        assert b"hypot" in data
        assert data.count(b"\n") == data.count(b"\r\n"), f"{rel} has bare LF after the edit"


def test_crlf_files_stay_crlf_in_the_test_list_families(tmp_path):
    from mpsgen.dtypes import torch_dtypes_for
    from mpsgen.read.opinfo import find_opinfos
    from mpsgen.edit.opinfo import plan_opinfo_edits
    from mpsgen.edit.testlists import plan_testlist_edits

    root = copy_checkout(tmp_path)
    crlf(root, (COMMON_MPS, CMI))
    text = (root / COMMON_MPS).read_bytes().decode()
    new, changes = plan_testlist_edits(text, COMMON_MPS, ("asinh",), torch_dtypes_for(("float", "int2float")), True)
    assert changes and new != text
    assert new.count("\n") == new.count("\r\n")
    cmi = (root / CMI).read_bytes().decode()
    refs = find_opinfos(cmi, CMI, "atan2")
    new, changes = plan_opinfo_edits(cmi, CMI, refs, torch_dtypes_for(("float", "int2float")))
    assert new.count("\n") == new.count("\r\n")


def removed_lines(before: bytes, after: bytes) -> list[str]:
    import difflib

    diff = difflib.ndiff(before.decode().splitlines(), after.decode().splitlines())
    return [line for line in diff if line.startswith("- ")]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
@pytest.mark.parametrize("rel", [METAL, HOST, NF])
def test_a_missing_trailing_newline_stays_missing_and_no_line_is_altered(tmp_path, rel, newline):
    root = copy_checkout(tmp_path)
    if newline == b"\r\n":
        crlf(root, (NF, METAL, HOST))
    path = root / rel
    path.write_bytes(path.read_bytes().rstrip(b"\r\n"))
    before = path.read_bytes()
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    data = path.read_bytes()
    assert not data.endswith((b"\n", b"\r"))
    assert data.count(b"\n") == data.count(newline)
    # new-op only adds lines, except the one yaml dispatch line that gains MPS
    assert removed_lines(before, data) == (["-     CPU, CUDA: hypot_out"] if rel == NF else [])


@pytest.mark.parametrize("rel", [METAL, HOST, NF])
def test_a_trailing_newline_stays(tmp_path, rel):
    root = copy_checkout(tmp_path)
    apply_plan(hypot_plan(root))
    assert (root / rel).read_bytes().endswith(b"\n")


@pytest.mark.parametrize("where", ["hook", "write", "fsync", "replace"])
@pytest.mark.parametrize("step", [0, 1, 2])
def test_disk_full_at_any_step_restores_everything_and_names_the_file(tmp_path, monkeypatch, where, step):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    plan = hypot_plan(root)
    failing = plan.edits[step].path
    calls = {"n": 0}

    def disk_full(*_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def counting(real):
        def wrapper(*args):
            calls["n"] += 1
            if calls["n"] == step + 1:
                disk_full()
            return real(*args)
        return wrapper

    hook = None
    if where == "hook":
        hook = lambda path: disk_full() if path == failing else None  # noqa: E731
    elif where == "replace":
        monkeypatch.setattr(os, "replace", counting(os.replace))
    elif where == "fsync":
        # only the data fsyncs count: a directory fsync follows each successful rename
        real_fsync = os.fsync
        monkeypatch.setattr(apply_module, "_fsync_directory", lambda d: None)
        monkeypatch.setattr(os, "fsync", counting(real_fsync))
    elif where == "write":
        real_fdopen = os.fdopen

        class FullFile:
            def __init__(self, handle):
                self.handle = handle

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.handle.close()

            def write(self, data):
                calls["n"] += 1
                if calls["n"] == step + 1:
                    self.handle.write(data[: len(data) // 2])  # half a file, then the disk is full
                    disk_full()
                return self.handle.write(data)

            def __getattr__(self, name):
                return getattr(self.handle, name)

        monkeypatch.setattr(os, "fdopen", lambda fd, mode: FullFile(real_fdopen(fd, mode)))
    with pytest.raises(MpsgenError) as info:
        apply_plan(plan, _write_hook=hook)
    monkeypatch.undo()
    message = str(info.value)
    assert f"writing {failing} failed: No space left on device" in message
    assert "restored" in message and "\n" not in message
    assert snapshot(root) == before
    assert temp_files(root) == []


@pytest.mark.parametrize("step", [0, 1, 2])
def test_keyboard_interrupt_restores_then_reraises(tmp_path, step):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    plan = hypot_plan(root)

    def interrupt(path):
        if path == plan.edits[step].path:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply_plan(plan, _write_hook=interrupt)
    assert snapshot(root) == before
    assert temp_files(root) == []


def test_permission_error_names_the_file(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    plan = hypot_plan(root)
    real_mkstemp = apply_module.tempfile.mkstemp

    def read_only_dir(*args, dir=None, **kwargs):
        if Path(dir) == (root / METAL).parent:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(apply_module.tempfile, "mkstemp", read_only_dir)
    with pytest.raises(MpsgenError, match=f"writing {METAL} failed: Permission denied"):
        apply_plan(plan)
    assert snapshot(root) == before


def test_a_restore_that_fails_is_reported_by_name(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    plan = hypot_plan(root)
    real_write = apply_module._atomic_write
    state = {"writes": 0}

    def flaky(path, data, stat):
        state["writes"] += 1
        if state["writes"] >= 3:  # the third file's write and every restore after it
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_write(path, data, stat)

    monkeypatch.setattr(apply_module, "_atomic_write", flaky)
    with pytest.raises(MpsgenError) as info:
        apply_plan(plan)
    message = str(info.value)
    assert f"writing {plan.edits[2].path} failed" in message
    assert plan.edits[0].path in message and plan.edits[1].path in message
    assert "could not be restored" in message and "git checkout" in message


def test_a_file_changed_between_plan_and_apply_aborts_before_any_write(tmp_path):
    root = copy_checkout(tmp_path)
    plan = hypot_plan(root)
    (root / HOST).write_bytes((root / HOST).read_bytes() + b"// the user's edit\n")
    before = snapshot(root)
    with pytest.raises(MpsgenError, match=f"{HOST} changed after mpsgen read it"):
        apply_plan(plan)
    assert snapshot(root) == before


def test_a_file_changed_during_apply_is_caught_by_its_hash_and_the_rest_restored(tmp_path):
    root = copy_checkout(tmp_path)
    plan = hypot_plan(root)
    last = root / plan.edits[-1].path
    edited = last.read_bytes() + b"# the user's edit\n"
    before = snapshot(root)

    def user_saves(path):
        if path == plan.edits[-1].path:
            last.write_bytes(edited)

    with pytest.raises(MpsgenError, match="changed after mpsgen read it"):
        apply_plan(plan, _write_hook=user_saves)
    after = snapshot(root)
    assert changed_files(before, after) == {plan.edits[-1].path}
    assert last.read_bytes() == edited  # the user's work is kept, not overwritten


def test_a_symlink_inside_the_checkout_is_written_through(tmp_path):
    root = copy_checkout(tmp_path)
    real = root / "elsewhere" / "BinaryKernel.mm"
    real.parent.mkdir()
    (root / HOST).rename(real)
    (root / HOST).symlink_to(os.path.relpath(real, (root / HOST).parent))
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.stderr
    assert (root / HOST).is_symlink()
    assert b"hypot_stub" in real.read_bytes()


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_symlink_pointing_outside_the_checkout_is_refused(tmp_path, dry_run):
    root = copy_checkout(tmp_path)
    outside = tmp_path / "outside.mm"
    outside.write_bytes((root / HOST).read_bytes())
    (root / HOST).unlink()
    (root / HOST).symlink_to(outside)
    before = snapshot(root)
    outside_before = outside.read_bytes()
    result = run_cli(["-C", str(root), "new-op", "hypot", *(["--dry-run"] if dry_run else [])])
    assert result.exit_code == 2
    assert result.stderr == (f"mpsgen: error: {HOST} is a symlink to {outside.resolve()}, outside the checkout "
                             "(mpsgen only writes files inside the checkout; replace the symlink with the file)\n")
    assert snapshot(root) == before and outside.read_bytes() == outside_before


def test_a_host_file_outside_the_checkout_is_refused(tmp_path):
    root = copy_checkout(tmp_path)
    outside = tmp_path / "outside.mm"
    outside.write_bytes((root / HOST).read_bytes())
    rel = os.path.relpath(outside, root)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--host-file", rel])
    assert result.exit_code == 2
    assert "outside the checkout" in result.stderr and result.stderr.count("\n") == 1
    assert snapshot(root) == before and outside.read_bytes() == (root / HOST).read_bytes()


def test_an_empty_plan_writes_nothing(tmp_path):
    root = copy_checkout(tmp_path)
    apply_plan(hypot_plan(root))
    before = snapshot(root)
    stats = {rel: (root / rel).stat().st_mtime_ns for rel in (NF, METAL, HOST)}
    plan = plan_new_op(Checkout(root), "hypot", Options())
    assert plan.empty
    assert apply_plan(plan) == []
    assert snapshot(root) == before
    assert stats == {rel: (root / rel).stat().st_mtime_ns for rel in (NF, METAL, HOST)}
