"""Under CI=true a skip for something installable (support.missing / support.needs) is a failure;
other skips stay skips. Run on a throw-away test directory with this suite's conftest and support."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

CASES = '''
import pytest
from support import missing, needs


def test_missing_tool():
    missing("frobnicate is not installed")


@needs("no widget compiler on PATH")
def test_marked():
    pass


@needs(None)
def test_present():
    pass


@pytest.mark.skipif(True, reason="checks the message given off macOS")
def test_platform():
    pass
'''


@pytest.mark.parametrize("ci", ["", "true"])
def test_an_install_skip_fails_under_ci_and_a_platform_skip_does_not(tmp_path, ci):
    for name in ("conftest.py", "support.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_cases.py").write_text(CASES, encoding="utf-8")
    env = dict(os.environ, CI=ci)
    # --basetemp of its own: the inner run must not clear the outer runs' numbered temp directories
    # (pytest keeps the last three and deletes the rest: tens of thousands of files after a full run)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs",
                             f"--basetemp={tmp_path / 'inner-tmp'}", str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    # the counts that matter; a warning the inner run may print (e.g. about its own cache) is not one
    last = re.sub(r", \d+ warnings?", "", result.stdout.strip().splitlines()[-1])
    if ci:
        assert result.returncode == 1, result.stdout
        assert last.startswith("1 failed, 1 passed, 1 skipped, 1 error"), last  # a marker skips in setup: an error
        assert "CI=true and a test would skip: not installed: frobnicate is not installed" in result.stdout
    else:
        assert result.returncode == 0, result.stdout
        assert last.startswith("1 passed, 3 skipped"), last
