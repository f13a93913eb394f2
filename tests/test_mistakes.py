"""A newcomer's mistakes (issue 20), each driven end to end: one line on stderr saying what to do,
the exit code, and never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys

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


# Where a run can be: the stages mpsgen reports through its test hook (`mpsgen._stage`), in order.
# package: the package imported, its start-up handler set (mpsgen/__init__.py); console: the console
# script's own handler, before the CLI is imported; cli: click about to parse; command: the command's
# guarded run about to start; working: its first progress report (verify's static checks begun).
STAGES = ("package", "console", "cli", "command", "working")


def _console_script() -> str:
    exe = shutil.which("mpsgen", path=os.path.dirname(sys.executable))
    if exe is None:
        missing("the mpsgen console script is not installed next to this Python")
    return exe


# Ctrl-C at a terminal reaches a process whose SIGINT has its default action. A test run started in
# the background (`pytest &`, nohup, some CI runners) ignores SIGINT, and an ignored signal stays
# ignored across exec, so Python would install no handler and the run would never see the signal:
# the run is started through this exec with SIGINT's default action restored, as at a terminal.
AS_AT_A_TERMINAL = [sys.executable, "-c",
                    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                    "os.execv(sys.argv[1], sys.argv[1:])"]


def _interrupt_at(argv: list[str], pause: str) -> tuple[list[str], int, str]:
    """Run argv with the stage hook on a socket; wait until the run reports `pause` (where it then
    waits), send SIGINT: (the stages reported, exit code, stderr). No delay is guessed: the signal
    is sent only once the run says it is there, and the run cannot move on before it lands."""
    ours, theirs = socket.socketpair()
    env = dict(os.environ, MPSGEN_TEST_STAGES=str(theirs.fileno()), MPSGEN_TEST_PAUSE=pause)
    proc = subprocess.Popen([*AS_AT_A_TERMINAL, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, pass_fds=(theirs.fileno(),))
    theirs.close()
    reader = ours.makefile("r", encoding="ascii")
    seen = []
    try:
        for line in reader:
            seen.append(line.strip())
            if seen[-1] == pause:
                proc.send_signal(signal.SIGINT)
                break
        _, err = proc.communicate(timeout=300)  # a hang guard only: the run ends on the signal
    finally:
        reader.close()
        ours.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return seen, proc.returncode, err


@pytest.mark.parametrize("pause", STAGES)
def test_ctrl_c_at_every_stage_exits_130_with_one_line(pause):
    """SIGINT while the console script imports mpsgen, while it imports the CLI, while click parses,
    as the command starts and while it works: exit 130, one line, never a traceback."""
    argv = [_console_script(), "-C", str(FIXTURE_CHECKOUT), "verify", "--all-native", "--static-only"]
    seen, code, err = _interrupt_at(argv, pause)
    assert seen == list(STAGES[: STAGES.index(pause) + 1])  # each stage reached once, in order
    assert (code, err) == (130, f"mpsgen: {INTERRUPTED}\n")


def test_ctrl_c_before_mpsgen_runs_is_pythons_own_and_mentions_no_mpsgen_file():
    """SIGINT as soon as the process exists, wherever it lands (Python starting, mpsgen imported,
    working, or done): one of the outcomes below, never a traceback through mpsgen's files."""
    proc = subprocess.Popen([*AS_AT_A_TERMINAL, _console_script(), "-C", str(FIXTURE_CHECKOUT), "verify",
                             "--all-native", "--static-only"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    if proc.returncode == -signal.SIGINT:
        # Python's default action, or a KeyboardInterrupt while the generated console script still
        # looks the package up (no frame in mpsgen's files)
        assert MPSGEN_DIR not in err, err
    elif proc.returncode == 1 and err.startswith("Fatal Python error: init_"):
        assert MPSGEN_DIR not in err, err  # Python itself still starting (its streams, its site module)
    else:
        assert (proc.returncode, err) in ((130, f"mpsgen: {INTERRUPTED}\n"), (0, ""), (1, "")), (proc.returncode, err)


def test_the_stage_hook_is_inert_without_its_socket(tmp_path):
    # a descriptor that is not this process's socket: the run goes on as if the hook were unset
    env = dict(os.environ, MPSGEN_TEST_STAGES="987", MPSGEN_TEST_PAUSE="command")
    done = subprocess.run([_console_script(), "-C", str(FIXTURE_CHECKOUT), "verify", "hypot", "--static-only",
                           "--format", "plain"], capture_output=True, text=True, env=env, timeout=300)
    plain = subprocess.run([_console_script(), "-C", str(FIXTURE_CHECKOUT), "verify", "hypot", "--static-only",
                            "--format", "plain"], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (plain.returncode, plain.stdout, plain.stderr)


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
