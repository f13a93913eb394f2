"""Fault injection: for multi-file plans (one op, several ops in one transaction, multi-op migrate),
fail at each write step in turn, in each way a write can fail; afterwards every file of the checkout
equals its original bytes and no temp file is left.

Set MPSGEN_SAFETY_FIGURES=FILE to append the figures (cases, files compared, bytes differing)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from mpsgen.edit import apply as apply_module
from mpsgen.edit.apply import apply_plan
from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.views import Views
from mpsgen.facts.resolve import Options, resolve_op
from mpsgen.edit.templates import Templates
from support import every_file, copy_checkout, run_cli





def bytes_differing(before: dict[str, bytes], after: dict[str, bytes]) -> int:
    total = 0
    for rel in before.keys() | after.keys():
        a, b = before.get(rel, b""), after.get(rel, b"")
        if a != b:  # (the byte loop only for the rare file that differs)
            total += sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    return total


def record(test: str, cases: int, files: int, differing: int) -> None:
    target = os.environ.get("MPSGEN_SAFETY_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"test": test, "cases": cases, "files": files, "bytes_differing": differing}) + "\n")


def new_op_transaction(root: Path, ops: tuple[str, ...], expr: dict[str, str] | None = None):
    """Several new-op edits planned in one Workspace: one transaction, as migrate makes."""
    from mpsgen.edit.pipeline import NEW_OP_STEPS, plan_op
    from mpsgen.facts.plan import plan_for

    ws = Workspace(Checkout(root))
    views, templates = Views(ws, disk_cache=True), Templates(root)
    for op in ops:
        options = Options(expr=(expr or {}).get(op))
        spec = resolve_op(views, op, options, mode="new-op")
        plan_op(views, templates, plan_for(views, spec, options, templates=templates, mode="new-op"), NEW_OP_STEPS)
    return ws.plan(ops)


def migrate_plan(root: Path, ops: tuple[str, ...]):
    from mpsgen.commands.migrate import plan_migrate

    return plan_migrate(Checkout(root), ops, Options())


PLANS = {
    "new-op hypot": (lambda root: new_op_transaction(root, ("hypot",)), 3),
    "new-op x5 (binary, unary, activation)": (
        lambda root: new_op_transaction(root, ("hypot", "nextafter", "heaviside", "special_ndtri", "glu_jvp"),
                                        {"glu_jvp": "a * (1 - a) * b * c"}), 7),
    "migrate asinh acosh atanh": (lambda root: migrate_plan(root, ("asinh", "acosh", "atanh")), None),
    "migrate atan2 xlogy": (lambda root: migrate_plan(root, ("atan2", "xlogy")), None),
}
class Fault:
    """One way for the k-th write to fail. `install` patches, `hook` is the apply write hook."""

    def __init__(self, kind: str, step: int, plan, monkeypatch):
        self.kind, self.step, self.plan, self.mp = kind, step, plan, monkeypatch
        self.calls = 0

    def trip(self):
        self.calls += 1
        return self.calls == self.step + 1

    def hook(self, path):
        if path != self.plan.edits[self.step].path:
            return
        if self.kind == "hook-oserror":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.kind == "hook-interrupt":
            raise KeyboardInterrupt
        if self.kind == "hook-bug":
            raise RuntimeError("a bug in mpsgen")

    def install(self):
        if self.kind == "replace":
            real = os.replace

            def replace(src, dst):
                if self.trip():
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
                return real(src, dst)

            self.mp.setattr(os, "replace", replace)
        elif self.kind == "fsync":
            real = os.fsync
            self.mp.setattr(apply_module, "_fsync_directory", lambda d: None)

            def fsync(fd):
                if self.trip():
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
                return real(fd)

            self.mp.setattr(os, "fsync", fsync)
        elif self.kind == "chmod":
            real = os.chmod

            def chmod(path, mode):
                if self.trip():
                    raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
                return real(path, mode)

            self.mp.setattr(os, "chmod", chmod)
        elif self.kind == "mkstemp":
            real = apply_module.tempfile.mkstemp

            def mkstemp(*args, **kwargs):
                if self.trip():
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                return real(*args, **kwargs)

            self.mp.setattr(apply_module.tempfile, "mkstemp", mkstemp)
        elif self.kind == "interrupt-after-rename":
            real = os.replace

            def replace(src, dst):
                real(src, dst)
                if self.trip():
                    raise KeyboardInterrupt  # the new file is in place; Ctrl-C arrives just after

            self.mp.setattr(os, "replace", replace)


KINDS = ("hook-oserror", "hook-interrupt", "hook-bug", "mkstemp", "fsync", "chmod", "replace", "interrupt-after-rename")


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_failure_at_every_write_step_leaves_every_file_as_it_was(tmp_path, monkeypatch, name):
    make_plan, n_files = PLANS[name]
    root = copy_checkout(tmp_path)
    original = every_file(root)
    plan = make_plan(root)
    assert len(plan.edits) >= (n_files or 3)  # more once the pipeline also edits the test lists
    cases = compared = differing = 0
    for step in range(len(plan.edits)):
        for kind in KINDS:
            fault = Fault(kind, step, plan, monkeypatch)
            fault.install()
            interrupted = kind in ("hook-interrupt", "interrupt-after-rename")
            with pytest.raises(KeyboardInterrupt if interrupted else MpsgenError) as info:
                apply_plan(plan, _write_hook=fault.hook)
            monkeypatch.undo()
            if not interrupted:
                message = str(info.value)
                assert message.startswith(f"writing {plan.edits[step].path} failed"), (kind, step, message)
                assert "every file was restored" in message and "\n" not in message
            now = every_file(root)
            cases += 1
            compared += len(now)
            differing += bytes_differing(original, now)
            assert now == original, (kind, step)
            assert not list(root.rglob("*.mpsgen-tmp"))
    # and with no fault the same plan applies in full
    assert sorted(apply_plan(plan)) == sorted(e.path for e in plan.edits)
    record(f"faults[{name}]", cases, compared, differing)
    assert cases == len(plan.edits) * len(KINDS) and differing == 0


@pytest.mark.parametrize("step", [0, 1, 2])
def test_the_command_line_reports_the_failing_file_and_exits_2(tmp_path, monkeypatch, step):
    root = copy_checkout(tmp_path)
    original = every_file(root)
    calls = []
    real = os.replace

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == step + 1:  # this write fails; the restores after it go through
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst)

    plan = new_op_transaction(root, ("hypot",))
    monkeypatch.setattr(os, "replace", replace)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    monkeypatch.undo()
    assert result.exit_code == 2
    assert result.stderr == (f"mpsgen: error: writing {plan.edits[step].path} failed: No space left on device "
                             "(every file was restored to its original content)\n")
    assert every_file(root) == original
    record(f"cli-fault[{step}]", 1, len(original), bytes_differing(original, every_file(root)))


def test_ctrl_c_on_the_command_line_restores_and_says_so(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    original = every_file(root)
    real = os.replace
    calls = []

    def replace(src, dst):
        real(src, dst)
        if Path(dst).is_relative_to(root):  # the checkout's files, not the user cache's
            calls.append(dst)
            if len(calls) == 2:
                raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    monkeypatch.undo()
    assert result.exit_code == 130
    assert result.stderr == "mpsgen: interrupted; nothing was written\n"
    assert every_file(root) == original
