"""Shared fixtures: the miniature checkout and files from the PyTorch release wheels (tests/releases.py)."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import settings

# No property test has a deadline: hypothesis's default (200 ms an example, and "Unreliable test
# timings" when a replay is faster) fails a correct test on a loaded machine; how fast an example
# runs is benchmarks/' business. CI runs the property tests with a fixed derivation of examples, so
# a run is repeatable; locally they explore new examples each time.
settings.register_profile("mpsgen", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("mpsgen"), derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "mpsgen")

ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI (CI=true), a test skipped because something installable is missing (support.missing,
    support.needs: the wheel, clang-format, g++, torch, lintrunner, ...) fails instead: CI installs
    everything the tests use, so such a skip is a broken install."""
    outcome = yield
    report = outcome.get_result()
    from support import MISSING, ci

    if report.skipped and ci() and isinstance(report.longrepr, tuple) and MISSING in str(report.longrepr[2]):
        report.outcome = "failed"
        report.longrepr = f"CI=true and a test would skip: {str(report.longrepr[2]).removeprefix('Skipped: ')}"


@pytest.fixture(scope="session", autouse=True)
def _isolated_index_cache(tmp_path_factory: pytest.TempPathFactory):
    """mpsgen's index cache and state directory (mpsgen.read.cache) in directories of this run, never the user's; set in
    the environment so the CLI run as a subprocess uses it too. The parallel workers of one run share the cache, as
    the processes of one user do (what it keeps is keyed by content and written by rename): a scan's body checks
    are paid once a run, not once a worker. A test of the cache itself sets its own. The kept scan report
    (mpsgen.commands.kept) is off: a test that patches mpsgen in process and scans the miniature must
    see its patch, which the report's key (mpsgen's files) does not; tests/test_scan_cache.py turns it on."""
    previous = {name: os.environ.get(name) for name in ("MPSGEN_CACHE_DIR", "MPSGEN_STATE_DIR", "MPSGEN_NO_KEPT")}
    os.environ["MPSGEN_NO_KEPT"] = "1"
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' base temp directories share a parent of this run's
        shared = tmp_path_factory.getbasetemp().parent / "mpsgen-cache"
        shared.mkdir(exist_ok=True)
        os.environ["MPSGEN_CACHE_DIR"] = str(shared)
    else:
        os.environ["MPSGEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("mpsgen-cache"))
    os.environ["MPSGEN_STATE_DIR"] = str(tmp_path_factory.mktemp("mpsgen-state"))  # verify's logs
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
FIXTURE_CHECKOUT = ROOT / "fixtures" / "pytorch"

# wheel member prefix -> checkout directory, and which members to take from it
_WHEEL_LAYOUT = (
    ("torchgen/packaged/ATen/native/", "aten/src/ATen/native/", (".yaml",), False),
    ("torch/include/ATen/native/mps/", "aten/src/ATen/native/mps/", (".h",), False),
    # params structs shared by host and Metal code (ELUParams, ClampScalarParams, ...)
    ("torch/include/ATen/native/mps/kernels/", "aten/src/ATen/native/mps/kernels/", (".h",), False),
    ("torch/include/ATen/native/", "aten/src/ATen/native/", (".h",), False),
    ("torch/include/c10/metal/", "c10/metal/", (".h",), False),
    ("torch/testing/_internal/opinfo/", "torch/testing/_internal/opinfo/", (".py",), True),
    ("torch/testing/_internal/common_mps.py", "torch/testing/_internal/common_mps.py", (), False),
    (
        "torch/testing/_internal/common_methods_invocations.py",
        "torch/testing/_internal/common_methods_invocations.py",
        (),
        False,
    ),
)


def pytest_collection_modifyitems(config, items):
    """Tests marked `heavy` are skipped, with the reason, unless CI=true or MPSGEN_TESTS=all (the
    run's first lines say so). (Each module's tests run on one worker, `--dist loadscope` in
    pyproject.toml, so a module-scoped fixture is built once per run.)"""
    from support import HEAVY_SKIP, run_heavy

    if run_heavy():
        return
    for item in items:
        if item.get_closest_marker("heavy"):
            item.add_marker(pytest.mark.skip(reason=HEAVY_SKIP))


def pytest_sessionstart(session):
    """One line at the start (with -q too): what the run downloads once, and where."""
    from support import WHEEL_DOWNLOADS, run_heavy, wheel_cache

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):  # an xdist worker: the controller says it
        return
    cache = wheel_cache()
    wanted = [f"{what} (~{size})" for what, pattern, size in WHEEL_DOWNLOADS if not sorted(cache.glob(pattern))]
    if wanted:
        reporter.write_line(f"mpsgen tests: downloading once with pip into {cache} ($MPSGEN_WHEEL_CACHE): "
                            f"{'; '.join(wanted)}; later runs reuse them")
    else:
        reporter.write_line(f"mpsgen tests: the wheels they need are in {cache} (nothing to download)")
    if not run_heavy():
        reporter.write_line("mpsgen tests: heavyweight end-to-end tests (marked heavy) are skipped: CI runs them "
                            "(CI=true), MPSGEN_TESTS=all runs them here")


def _target(member: str) -> str | None:
    """Where a wheel member goes in the checkout layout, or None when it is not needed."""
    for prefix, dest, suffixes, recursive in _WHEEL_LAYOUT:
        if not suffixes:
            if member == prefix:
                return dest
            continue
        if not member.startswith(prefix) or not member.endswith(suffixes):
            continue
        rest = member[len(prefix) :]
        if "/" in rest and not recursive:
            continue
        return str(PurePosixPath(dest) / rest)
    return None


def extract_checkout(wheel: Path, root: Path) -> None:
    """The wheel's files that mpsgen reads, laid out as in a PyTorch checkout under root."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            target = _target(member)
            if target is None:
                continue
            path = root / target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.read(member))


def _release_files(tmp_path_factory: pytest.TempPathFactory, version: str) -> Path:
    """The files mpsgen reads from the macOS arm64 wheel of `version` (`releases.fetch_wheel`), laid out
    as a checkout, extracted once for the whole run (parallel workers share their base temp directory's
    parent); skips (fails under CI=true), saying why, when the wheel cannot be had."""
    from releases import fetch_wheel
    from support import download_lock

    try:
        wheel = fetch_wheel(version)
        shared = tmp_path_factory.getbasetemp().parent
        root = shared / f"torch-checkout-{version}"
        with download_lock(shared):
            done = shared / f"torch-checkout-{version}.complete"
            if not done.is_file():
                shutil.rmtree(root, ignore_errors=True)
                extract_checkout(wheel, root)
                done.write_text(wheel.name)
    except (OSError, RuntimeError, subprocess.SubprocessError, zipfile.BadZipFile) as exc:
        from support import missing

        missing(f"PyTorch {version} macOS arm64 wheel unavailable: {exc}")
    return root


@pytest.fixture(scope="session")
def real_torch_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory laid out like a PyTorch checkout, filled from the newest release's wheel
    (`releases.NEWEST`, 2.15.0): native_functions.yaml (+ tags.yaml), ATen/native headers (and mps/,
    mps/kernels/), c10/metal headers, common_mps.py, common_methods_invocations.py and opinfo/."""
    from releases import NEWEST

    return _release_files(tmp_path_factory, NEWEST)


@pytest.fixture(scope="session")
def real_torch_files_older(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same from the older release still served (`releases.OLDER`, 2.13.0)."""
    from releases import OLDER

    return _release_files(tmp_path_factory, OLDER)


MPS_SOURCE_DIRS = ("aten/src/ATen/native/mps/kernels", "aten/src/ATen/native/mps/operations")


def assemble_real_checkout(root: Path, wheel_files: Path, *, keep_wheel_headers: bool = True) -> Path:
    """A real-size checkout at root: the wheel's files (`real_torch_files`) plus the miniature's
    .metal/.mm files, which the wheel does not ship. With `keep_wheel_headers` the wheel's
    kernels/*.h params headers stay (params structs land in the real ones); else the miniature's
    headers replace them."""
    import shutil

    shutil.copytree(wheel_files, root)
    ignore = shutil.ignore_patterns("*.h") if keep_wheel_headers else None
    for rel in MPS_SOURCE_DIRS:
        shutil.copytree(FIXTURE_CHECKOUT / rel, root / rel, dirs_exist_ok=True, ignore=ignore)
    return root


@pytest.fixture
def real_checkout(tmp_path: Path, real_torch_files: Path) -> Path:
    """A fresh real-size checkout for one test (`assemble_real_checkout`, the wheel's headers kept)."""
    return assemble_real_checkout(tmp_path / "pytorch", real_torch_files)


@pytest.fixture
def real_checkout_older(tmp_path: Path, real_torch_files_older: Path) -> Path:
    """A fresh real-size checkout of the older release (2.13.0) for one test."""
    return assemble_real_checkout(tmp_path / "pytorch", real_torch_files_older)


@pytest.fixture(scope="session")
def fixture_checkout() -> Path:
    """The hand-written miniature checkout."""
    return FIXTURE_CHECKOUT


class Golden:
    """Golden unified diffs under tests/golden/<family>/<case>.diff; MPSGEN_REGEN_GOLDEN=1 rewrites."""

    def __init__(self, family: str):
        self.family = family

    @staticmethod
    def unified(path: str, before: str, after: str) -> str:
        return "".join(
            difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}")
        )

    def check(self, case: str, text: str) -> None:
        from support import assert_golden

        assert_golden(text, f"{self.family}/{case}.diff")


@pytest.fixture
def golden_testlists() -> Golden:
    return Golden("testlists")
