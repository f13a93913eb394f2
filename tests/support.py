"""Helpers shared by the tests: a fresh copy of the miniature checkout, running the CLI in-process,
golden files, and byte-identity checks."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
FIXTURE_CHECKOUT = REPO / "fixtures" / "pytorch"
GOLDEN = Path(__file__).resolve().parent / "golden"
# The miniature checkout's .clang-format: PyTorch's style settings (Google-based, 80 columns,
# Objective-C++ at 120), written for the fixture, at its root as in a real checkout.
PYTORCH_CLANG_FORMAT = FIXTURE_CHECKOUT / ".clang-format"

# The reason of a skip for something `pip install -e ".[test]"` (or `.ci/run`) installs; under CI
# (CI=true) tests/conftest.py turns such a skip into a failure: CI runs everything.
MISSING = "not installed: "


def ci() -> bool:
    """Whether this is a CI run (CI set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def run_heavy() -> bool:
    """Whether tests marked `heavy` run: always under CI, locally with MPSGEN_TESTS=all."""
    return ci() or os.environ.get("MPSGEN_TESTS", "").strip().lower() == "all"


HEAVY_SKIP = "heavyweight end-to-end run: CI runs it (CI=true); MPSGEN_TESTS=all runs it here"


def sampled(cases, local, ids=None):
    """Parameters for an end-to-end test over many cases of one kind: the cases in `local` (a few,
    chosen to cover each path the test takes) run in every run; the rest are marked heavy, so CI
    (CI=true) and MPSGEN_TESTS=all still run every case. `ids` names the cases (default: str)."""
    import pytest

    cases = list(cases)
    names = [str(case) for case in cases] if ids is None else list(ids)
    unknown = set(local) - set(names)
    assert not unknown, f"local cases not among the cases: {sorted(unknown)}"
    return [pytest.param(*(case if isinstance(case, tuple) else (case,)), id=name,
                         marks=[] if name in local else [pytest.mark.heavy])
            for case, name in zip(cases, names)]


def missing(reason: str):
    """Skip the test because something installable is missing (a failure under CI)."""
    import pytest

    pytest.skip(MISSING + reason)


def needs(reason: str | None):
    """A skipif marker for `missing`: skip (fail under CI) with `reason` when it is not None."""
    import pytest

    return pytest.mark.skipif(reason is not None, reason=MISSING + (reason or ""))


def pytorch_clang_format() -> tuple[str, Path]:
    """(clang-format executable, the fixture's PyTorch-style .clang-format); skips the test, saying
    why, without an executable."""
    from mpsgen.edit.clangformat import INSTALL_HINT, find_executable

    executable = find_executable()
    if executable is None:
        missing(f"no clang-format executable found ({INSTALL_HINT})")
    return executable, PYTORCH_CLANG_FORMAT


def wheel_cache() -> Path:
    """Where the tests keep the wheels they download once: `$MPSGEN_WHEEL_CACHE`, else ~/.cache/mpsgen-wheel."""
    return Path(os.environ.get("MPSGEN_WHEEL_CACHE") or Path.home() / ".cache" / "mpsgen-wheel")


# The wheels the suite downloads once (pip, into wheel_cache()) when they are not there yet:
# (what, glob under the cache, about how big). Shown in the run's header line (conftest.py).
WHEEL_DOWNLOADS = (
    ("torch 2.15.0 macOS arm64 wheel", "macos-arm64/torch-2.15.0-*-macosx_14_0_arm64.whl", "139 MB"),
    ("torch 2.14.0 macOS arm64 wheel", "macos-arm64/torch-2.14.0-*-macosx_14_0_arm64.whl", "127 MB"),
    ("torch 2.13.0 macOS arm64 wheel", "macos-arm64/torch-2.13.0-*-macosx_14_0_arm64.whl", "111 MB"),
)


@contextlib.contextmanager
def download_lock(cache: Path):
    """One download (or one extraction) at a time across parallel test workers (pytest-xdist): the
    second worker waits, then finds the file there."""
    import fcntl

    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def copy_checkout(tmp_path: Path, source: Path = FIXTURE_CHECKOUT, *, style: bool = True) -> Path:
    """A fresh copy of the miniature checkout; `style=False` leaves out its `.clang-format` (a
    checkout without one: mpsgen formats nothing and verify's format check skips)."""
    dest = tmp_path / "pytorch"
    shutil.copytree(source, dest, ignore=_no_lock)
    if not style:
        (dest / ".clang-format").unlink(missing_ok=True)
    return dest


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root, by relative path, as bytes (mpsgen's own .mpsgen/ excluded)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".mpsgen" not in p.relative_to(root).parts
    }


def every_file(root: Path) -> dict[str, bytes]:
    """Every file under root, mpsgen's own files included (its index cache lives outside the checkout)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _no_lock(directory: str, names: list[str]) -> set[str]:
    """A copy never takes a run's lock along (`.mpsgen/lock` of a run on the source meanwhile)."""
    return {"lock"} & set(names) if Path(directory).name == ".mpsgen" else set()


WRITING_COMMANDS = ("new-op", "migrate")


def run_cli(args: list[str], cwd: Path | None = None):
    """Run `mpsgen ARGS` in-process; returns click's Result (exit_code, stdout, stderr). A writing
    command is refused on the shared miniature itself: it takes the checkout's lock (`.mpsgen/`)
    while other workers copy the miniature (`copy_checkout` gives each test its own)."""
    from mpsgen.cli import main

    at = args.index("-C") + 1 if "-C" in args else len(args)
    if at < len(args) and Path(args[at]).resolve() == FIXTURE_CHECKOUT.resolve() \
            and any(a in WRITING_COMMANDS for a in args) and "--dry-run" not in args:
        raise AssertionError(f"a writing command on the shared miniature {FIXTURE_CHECKOUT}: run it on copy_checkout()")
    runner = CliRunner()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return runner.invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


def assert_golden(actual: str, name: str) -> None:
    """Compare with tests/golden/<name>; MPSGEN_REGEN_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / name
    if os.environ.get("MPSGEN_REGEN_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode("utf-8"))
    assert path.exists(), f"missing golden file {path}; run with MPSGEN_REGEN_GOLDEN=1 and review it"
    expected = path.read_bytes().decode("utf-8")
    assert actual == expected, f"output differs from {path}"


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def diff_paths(diff: str) -> set[str]:
    """The files a unified diff (mpsgen's --dry-run output) changes."""
    return {line.split(" b/")[1] for line in diff.splitlines() if line.startswith("diff --git ")}


def dry_run_matches_golden(tmp_path: Path, args: list[str], golden: str):
    """`mpsgen ARGS --dry-run` on a copy of the miniature: exit 0, stdout is the golden diff, the copy
    byte-identical afterwards. Returns the result for the caller's further checks."""
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), *args, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert_golden(result.stdout, golden)
    assert snapshot(root) == before
    return result


@dataclass(frozen=True)
class Applied:
    root: Path  # the checkout changed
    diff: str  # what --dry-run printed before
    after: dict[str, bytes]  # its snapshot after the run


def applies_its_diff_then_changes_nothing(tmp_path: Path, args: list[str], root: Path | None = None) -> Applied:
    """`mpsgen ARGS` on `root` (else a copy of the miniature) changes exactly the files its --dry-run diff
    names, and a second run plans nothing and writes nothing."""
    root = root or copy_checkout(tmp_path)
    diff = run_cli(["-C", str(root), *args, "--dry-run"]).stdout
    before = snapshot(root)
    result = run_cli(["-C", str(root), *args])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    assert changed_files(before, after) == diff_paths(diff)
    again = run_cli(["-C", str(root), *args, "--dry-run"])
    assert again.exit_code == 0, again.stderr
    assert again.stdout == ""
    assert snapshot(root) == after
    return Applied(root, diff, after)


def git_apply_gives(tmp_path: Path, diff: str, after: dict[str, bytes]) -> None:
    """`git apply` of a --dry-run diff on a fresh copy of the miniature gives exactly `after` (a snapshot)."""
    other = copy_checkout(tmp_path / "other")
    subprocess.run(["git", "apply", "--unsafe-paths", f"--directory={other.name}", "-"], input=diff.encode(),
                   cwd=other.parent, check=True)
    assert snapshot(other) == after
