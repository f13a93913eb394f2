"""A newcomer's mistakes (issue 20), each driven end to end: one line on stderr saying what to do,
the exit code, and never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mpsgen.cli import INTERRUPTED
from support import FIXTURE_CHECKOUT, copy_checkout, missing, run_cli

NF = "aten/src/ATen/native/native_functions.yaml"
MPSGEN_DIR = os.path.dirname(os.path.abspath(__import__("mpsgen").__file__))


def one_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("mpsgen: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return result.stderr.rstrip("\n")


def nf_line(name: str) -> int:
    text = (FIXTURE_CHECKOUT / NF).read_text(encoding="utf-8")
    return text[: text.index(f"- func: {name}")].count("\n") + 1


@pytest.mark.parametrize("argv", [["new-op", "hypott"], ["migrate", "hypott", "--dry-run"], ["try", "hypott"],
                                  ["verify", "hypott", "--static-only"]])
def test_an_unknown_op_is_placed_at_the_closest_name_not_line_1(argv, tmp_path):
    # a writing command takes the checkout's lock (.mpsgen/lock) before it learns the op is unknown:
    # never on the shared miniature, which other workers copy meanwhile
    line = one_line(run_cli(["-C", str(copy_checkout(tmp_path)), *argv]), 2)
    assert line == (f"mpsgen: error: {NF}:{nf_line('hypot')}: no operator named 'hypott' in native_functions.yaml "
                    "(did you mean: hypot?)")


def test_an_unknown_op_with_no_close_name_has_no_location(tmp_path):
    line = one_line(run_cli(["-C", str(copy_checkout(tmp_path)), "new-op", "qqqqqqqq"]), 2)
    assert line == ("mpsgen: error: no operator named 'qqqqqqqq' in native_functions.yaml "
                    "(give the operator's base name, e.g. atan2)")


@pytest.mark.parametrize("argv", [["new-op", "hypott", "--dry-run", "--json"], ["migrate", "hypott", "--json"],
                                  ["verify", "hypott", "--static-only", "--json"], ["try", "hypott", "--json"],
                                  ["scan", "--json", "--format", "plain"]])
def test_with_json_an_error_is_a_json_document_on_stdout_and_one_line_on_stderr(argv, tmp_path):
    result = run_cli(["-C", str(copy_checkout(tmp_path)), *argv])
    line = one_line(result, 2)
    doc = json.loads(result.stdout)
    assert set(doc) == {"error", "location", "hint"}
    assert line == "mpsgen: error: " + (f"{doc['location']}: " if doc["location"] else "") + doc["error"] + \
        (f" ({doc['hint']})" if doc["hint"] else "")
    if argv[0] != "scan":
        assert doc["location"] == f"{NF}:{nf_line('hypot')}"


def test_a_usage_error_with_json_is_a_json_document_too():
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "verify", "--json", "--no-such-flag"])
    assert result.exit_code == 2
    assert "--no-such-flag" in json.loads(result.stdout)["error"]
    assert "Traceback" not in result.stderr


def test_dash_c_accepts_any_directory_inside_a_checkout(tmp_path):
    root = copy_checkout(tmp_path)
    inside = run_cli(["-C", str(root / "aten" / "src"), "new-op", "hypot", "--dry-run"])
    top = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert inside.exit_code == top.exit_code == 0, inside.stderr
    assert inside.stdout == top.stdout and inside.stdout.startswith("diff --git")


def test_a_missing_build_directory_names_it_and_the_option(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "verify", "angle", "--assume-mps", "--require-build", "--json"])
    assert result.exit_code == 1
    build = next(s for s in json.loads(result.stdout)["stages"] if s["name"] == "build")
    assert build["reason"].startswith("no build directory `build/` (configure the build first, or pass --build-dir)")


def test_ctrl_c_at_any_moment_exits_130_with_one_line(tmp_path):
    """SIGINT at increasing delays after start, through the console script: while Python starts (the
    default action: killed by the signal, nothing printed), while it imports, while it works."""
    exe = shutil.which("mpsgen", path=os.path.dirname(sys.executable))
    if exe is None:
        missing("the mpsgen console script is not installed next to this Python")
    argv = [exe, "-C", str(FIXTURE_CHECKOUT), "verify", "--all-native", "--static-only"]
    seen = set()
    for delay in (0.0, 0.02, 0.04, 0.06, 0.1, 0.15, 0.25, 0.4, 0.7):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        seen.add(proc.returncode)
        if proc.returncode == -signal.SIGINT:
            # before any code of mpsgen runs: Python's default action, or a KeyboardInterrupt while
            # the generated console script still looks the package up (no frame in mpsgen's files)
            assert MPSGEN_DIR not in err, (delay, err)
            continue
        if proc.returncode == 1 and err.startswith("Fatal Python error: init_") and MPSGEN_DIR not in err:
            continue  # Python itself still starting (its streams, its site module), before any code of mpsgen runs
        if proc.returncode in (0, 1) and err == "":
            continue  # finished before the signal
        assert proc.returncode == 130, (delay, proc.returncode, err)
        assert err == f"mpsgen: {INTERRUPTED}\n", (delay, err)
    assert 130 in seen


@pytest.mark.parametrize(("op", "command"), [("hypot", "new-op"), ("atan2", "migrate"), ("polygamma", None)])
def test_try_suggests_only_a_command_that_would_complete(tmp_path, op, command):
    root = copy_checkout(tmp_path)
    line = one_line(run_cli(["-C", str(root), "try", op]), 2)
    assert f"{op} has no native Metal kernel to run in this checkout" in line
    if command is None:
        assert "mpsgen cannot give it one as it stands: " in line and "`mpsgen" not in line
        for refused in ("new-op", "migrate"):
            assert run_cli(["-C", str(root), refused, op, "--dry-run"]).exit_code == 2
        return
    assert line.endswith(f"(give it one with `mpsgen {command} {op}`)")
    assert run_cli(["-C", str(root), command, op]).exit_code == 0
    assert run_cli(["-C", str(root), "verify", op, "--static-only"]).exit_code == 0
