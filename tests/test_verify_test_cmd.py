"""`verify --test-cmd`: the test stage runs the user's command line through the shell, as the build
stage does, with the test names filled in; a failing command fails the stage with its exit status
and the log's path; pytest's output is read as unittest's is. Real subprocesses on the miniature's
`test/test_mps.py` (a real unittest file, steered by MPSGEN_FAKE_OUTCOMES)."""

from __future__ import annotations

import json
import sys

import pytest

from support import run_cli
from test_verify_stages import BUILD, ready, stage, verify  # noqa: F401  (ready: a fixture)

PYTEST = "{python} -m pytest -v -o addopts= -p no:cacheprovider test/test_mps.py -k {pytest_k}"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("MPSGEN_ASSUME_MPS", "MPSGEN_FAKE_OUTCOMES", "MPSGEN_FAKE_BUILD"):
        monkeypatch.delenv(name, raising=False)


def with_tests(command, *args):
    return ("--assume-mps", "--build-cmd", BUILD, "--test-cmd", command, *args)


def outcomes(doc):
    return {t["dtype"]: t["outcome"] for t in stage(doc, "tests")["tests"]}


def test_pytest_command_is_read_per_dtype(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float16=fail,*_cpu_bfloat16=skip")
    code, doc = verify(ready, *with_tests(PYTEST))
    assert code == 1
    assert outcomes(doc) == {"float32": "passed", "float16": "failed", "bfloat16": "skipped"}
    tests = stage(doc, "tests")
    assert tests["command"][-1] == (f"{sys.executable} -m pytest -v -o addopts= -p no:cacheprovider test/test_mps.py "
                                    "-k test_output_match_hypot")
    assert any("test_output_match_hypot_cpu_float16: failed" in f["message"] for f in doc["findings"])


def test_pytest_command_passes_when_every_test_passes(ready):
    code, doc = verify(ready, *with_tests(PYTEST))
    assert code == 0, doc
    assert outcomes(doc) == {"float32": "passed", "float16": "passed", "bfloat16": "passed"}


# A command that fails after every test passed: the tests' verdict alone would have passed it.
@pytest.mark.parametrize("command, status", [
    ("{python} test/test_mps.py -v {k}; exit 3", 3),
    ("{python} test/test_mps.py -v {k} && false", 1),
    ("{python} test/test_mps.py -v {k} 2>&1 | tee /dev/null && exit 4", 4),
    ("cd test && {python} test_mps.py -v {k} && cd .. && exit 5", 5),
])
def test_a_failing_command_fails_the_stage_with_its_status(ready, command, status):
    code, doc = verify(ready, *with_tests(command))
    assert code == 1
    assert outcomes(doc) == {"float32": "passed", "float16": "passed", "bfloat16": "passed"}
    findings = [f for f in doc["findings"] if f["check"] == "tests"]
    messages = [f["message"] for f in findings]
    assert f"test run exited with code {status}" in messages
    log = next(f for f in findings if f["message"] == f"test run exited with code {status}")
    assert log["path"].endswith("tests.log") and log["hint"] == f"see {log['path']}"


def test_a_failure_inside_a_pipeline_fails_the_stage(ready):
    code, doc = verify(ready, *with_tests("false | {python} test/test_mps.py -v {k}"))
    assert code == 1
    assert "test run exited with code 1" in [f["message"] for f in doc["findings"]]


def test_a_command_without_the_names_gets_the_k_options_appended(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float32=xfail")
    code, doc = verify(ready, *with_tests("{python} test/test_mps.py -v"))
    assert code == 0
    assert outcomes(doc) == {"float32": "xfail", "float16": "passed", "bfloat16": "passed"}
    assert stage(doc, "tests")["command"][-1] == f"{sys.executable} test/test_mps.py -v -k test_output_match_hypot"


def test_the_test_command_comes_from_mpsgen_toml(ready):
    (ready / ".mpsgen.toml").write_text(f'build-cmd = "{BUILD}"\ntest-cmd = "{PYTEST}"\n')
    code, doc = verify(ready, "--assume-mps")
    assert code == 0
    assert "-m pytest" in stage(doc, "tests")["command"][-1]
    (ready / ".mpsgen.toml").unlink()


def test_a_missing_test_runner_is_named(ready):
    code, doc = verify(ready, *with_tests("mpsgen-no-such-runner {k}"))
    assert code == 1
    finding = next(f for f in doc["findings"] if "not found" in f["message"])
    assert finding["message"] == "test command not found: mpsgen-no-such-runner"


def test_a_custom_command_needs_no_test_file_in_the_checkout(ready):
    (ready / "test" / "test_mps.py").rename(ready / "elsewhere_mps.py")
    code, doc = verify(ready, *with_tests("{python} elsewhere_mps.py -v {k}"))
    assert code == 0 and stage(doc, "tests")["status"] == "passed"


@pytest.mark.parametrize("as_json", [False, True])
def test_an_unknown_placeholder_is_bad_input_before_any_stage(ready, as_json):
    args = ["-C", str(ready), "verify", "hypot", *with_tests("{python} test/test_mps.py {names}")]
    result = run_cli(args + (["--json"] if as_json else []))
    assert result.exit_code == 2
    if as_json:
        doc = json.loads(result.stdout)
        assert doc["error"] == "the test command (--test-cmd) has an unknown placeholder {names}"
        assert "{pytest_k}" in doc["hint"]
    else:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("mpsgen: error: the test command (--test-cmd) has an unknown placeholder {names} "
                                   "(placeholders: {python}, {k}")


def test_a_shell_variable_is_not_a_placeholder(ready):
    code, doc = verify(ready, *with_tests("PY={python}; ${PY} test/test_mps.py -v {k}"))
    assert code == 0 and stage(doc, "tests")["status"] == "passed"


def test_pytest_lines_are_parsed_plain_under_xdist_and_once_with_a_summary():
    from mpsgen.commands.verify import parse_unittest

    lines = [
        "test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_float32 PASSED    [ 25%]",
        "test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_float16 SKIPPED (no half here) [ 50%]",
        "[gw1] [ 75%] XPASS test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_bfloat16",
        "[gw0] [100%] FAILED test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_int64",
        "test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_uint8 XFAIL (known)",
        "PASSED test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_float32",
        "FAILED test/test_mps.py::TestConsistencyCPU::test_output_match_x_cpu_int64 - AssertionError",
    ]
    got = [(o.test, o.dtype, o.outcome, o.detail) for o in parse_unittest(lines, "x")]
    assert got == [
        ("test_output_match_x_cpu_float32", "float32", "passed", ""),
        ("test_output_match_x_cpu_float16", "float16", "skipped", "no half here"),
        ("test_output_match_x_cpu_bfloat16", "bfloat16", "unexpected-success", ""),
        ("test_output_match_x_cpu_int64", "int64", "failed", ""),
        ("test_output_match_x_cpu_uint8", "uint8", "xfail", "known"),
    ]
