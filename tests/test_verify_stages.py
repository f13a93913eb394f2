"""`mpsgen verify`, build and test stages, with real subprocesses: the fixture's build script
(`tools/mps_build.py`) and its real unittest `test/test_mps.py`, steered by environment variables.
Also the skip paths on a machine without MPS, and the JSON and JUnit reports."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from mpsgen.commands.verify import STATIC_CHECKS
from support import run_cli
from test_verify import complete_hypot, edit, line_of

BUILD = f"{sys.executable} ../tools/mps_build.py"
UNARY_METAL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("MPSGEN_ASSUME_MPS", "MPSGEN_FAKE_OUTCOMES", "MPSGEN_FAKE_BUILD"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ready(tmp_path):
    """A complete hypot change with a build directory."""
    root = complete_hypot(tmp_path)
    (root / "build").mkdir()
    return root


def verify(root, *args):
    result = run_cli(["-C", str(root), "verify", "hypot", "--json", *args])
    return result.exit_code, json.loads(result.stdout)


def stage(doc, name):
    return next(s for s in doc["stages"] if s["name"] == name)


def full(*args):
    return ("--assume-mps", "--build-cmd", BUILD, *args)


# ------------------------------------------------------------------------------------------- skips

needs_linux = pytest.mark.skipif(sys.platform == "darwin", reason="checks the skip on a machine without MPS")


@needs_linux
def test_without_mps_build_and_tests_are_skipped_with_the_reason(ready):
    code, doc = verify(ready)
    assert code == 0
    assert stage(doc, "static")["status"] == "passed"
    for name in ("build", "tests"):
        assert stage(doc, name)["status"] == "skipped"
        assert sys.platform in stage(doc, name)["reason"] and "macOS" in stage(doc, name)["reason"]


@needs_linux
@pytest.mark.parametrize("flag, failed", [("--require-build", "build"), ("--require-tests", "tests")])
def test_require_turns_the_skip_into_a_failure(ready, flag, failed):
    code, doc = verify(ready, flag)
    assert code == 1
    assert stage(doc, failed)["status"] == "failed"
    assert flag in stage(doc, failed)["reason"]


@needs_linux
def test_environment_variable_assumes_mps(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_ASSUME_MPS", "1")
    code, doc = verify(ready, "--build-cmd", BUILD)
    assert code == 0
    assert [s["status"] for s in doc["stages"]] == ["passed", "passed", "passed"]


def test_missing_build_directory_is_a_skip(tmp_path):
    root = complete_hypot(tmp_path)
    code, doc = verify(root, *full())
    assert code == 0
    assert stage(doc, "build")["status"] == "skipped"
    assert stage(doc, "build")["reason"] == "no build directory `build/` (configure the build first, or pass --build-dir)"


def test_missing_test_file_is_a_skip_or_with_require_tests_a_failure(ready):
    (ready / "test" / "test_mps.py").unlink()
    code, doc = verify(ready, *full())
    assert code == 0 and stage(doc, "tests")["status"] == "skipped"
    assert "test/test_mps.py is not in the checkout" in stage(doc, "tests")["reason"]
    code, doc = verify(ready, *full("--require-tests"))
    assert code == 1 and stage(doc, "tests")["status"] == "failed"


def test_static_failure_skips_the_long_stages(tmp_path):
    from support import copy_checkout

    root = copy_checkout(tmp_path)
    (root / "build").mkdir()
    code, doc = verify(root, *full())
    assert code == 1
    assert [s["status"] for s in doc["stages"]] == ["failed", "skipped", "skipped"]
    assert stage(doc, "build")["reason"] == "the static stage failed"


# ------------------------------------------------------------------------------------------- build


def test_build_and_tests_pass_and_stream_to_logs(ready):
    code, doc = verify(ready, *full())
    assert code == 0
    build = stage(doc, "build")
    assert build["status"] == "passed"
    log = (ready / build["log"]).read_text()
    assert "Linking CXX shared library" in log and "BinaryKernel.metal" in log
    tests = stage(doc, "tests")
    assert tests["status"] == "passed"
    assert {(t["dtype"], t["outcome"]) for t in tests["tests"]} == {
        ("float32", "passed"), ("float16", "passed"), ("bfloat16", "passed")}
    assert all(t["test"].startswith("test_output_match_hypot_cpu_") for t in tests["tests"])
    assert "test_output_match_hypot_cpu_float32" in (ready / tests["log"]).read_text()


def test_compile_error_is_summarised_with_its_location(ready):
    edit(ready, UNARY_METAL, "struct neg_functor {\n", "struct neg_functor {\n#error \"broken on purpose\"\n")
    code, doc = verify(ready, *full())
    assert code == 1
    build = stage(doc, "build")
    assert build["status"] == "failed"
    finding = build["checks"][0]["findings"][0]
    assert (finding["path"], finding["line"]) == (UNARY_METAL, line_of(ready, UNARY_METAL, "#error"))
    assert "broken on purpose" in finding["message"]
    assert stage(doc, "tests")["status"] == "skipped" and stage(doc, "tests")["reason"] == "the build failed"


def test_build_failure_without_compiler_message_points_at_the_log(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_BUILD", "fail")
    code, doc = verify(ready, *full())
    assert code == 1
    finding = stage(doc, "build")["checks"][0]["findings"][0]
    assert finding["path"].endswith("/build.log") and ".mpsgen" not in finding["path"]
    assert finding["message"] == "build failed with exit code 1"


def test_missing_build_tool_is_a_failure(ready):
    code, doc = verify(ready, "--assume-mps", "--build-cmd", "mpsgen-no-such-ninja torch_cpu")
    assert code == 1
    assert stage(doc, "build")["status"] == "failed"
    assert "build tool not found: mpsgen-no-such-ninja" in stage(doc, "build")["reason"]


def _bare_checkout(tmp_path):
    """The least a checkout is (its yaml) and a build directory: the build stage needs no more."""
    root = tmp_path / "co"
    (root / "aten/src/ATen/native").mkdir(parents=True)
    (root / "aten/src/ATen/native/native_functions.yaml").write_text("")
    (root / "build" / "sub").mkdir(parents=True)
    return root


def _build(root, command, log_dir):
    from mpsgen.commands.verify import VerifyOptions
    from mpsgen.commands.verify.stages import run_build
    from mpsgen.read.checkout import Checkout

    return run_build(Checkout.find(root), VerifyOptions(build_cmd=command, assume_mps=True, log_dir=str(log_dir)))


# Each shell construct with a failure that a word-split, shell-less run would have hidden (or run
# as arguments of the first command): every one fails the build with its exit status.
@pytest.mark.parametrize("command, status", [
    ("true && false", 1),
    ("echo x; exit 1", 1),
    ("false; echo ran anyway", 1),
    ("false | cat", 1),
    ("cd sub && exit 3", 3),
    ("cd no-such-dir && echo built", None),
    ("echo $((6 * 7)) > out.txt && test $(cat out.txt) = 41", 1),
])
def test_build_command_runs_in_a_shell_and_any_failure_fails(tmp_path, command, status):
    result = _build(_bare_checkout(tmp_path), command, tmp_path / "logs")
    assert result.status == "failed", command
    finding = result.checks[0].findings[0]
    if status is not None:
        assert finding.message == f"build failed with exit code {status}"
    assert finding.location.path == str(tmp_path / "logs" / "build.log")
    assert f"$ {command}  (in " in (tmp_path / "logs" / "build.log").read_text()


def test_build_command_shell_features_pass_when_every_part_passes(tmp_path):
    root = _bare_checkout(tmp_path)
    result = _build(root, "cd sub && echo built | tee made.txt > /dev/null; test -f made.txt", tmp_path / "logs")
    assert result.status == "passed"
    assert (root / "build" / "sub" / "made.txt").read_text() == "built\n"


def test_shell_is_the_users_when_it_has_pipefail(monkeypatch):
    import shutil

    from mpsgen.commands.verify.stages import shell_argv

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    monkeypatch.setenv("SHELL", bash)
    assert shell_argv("ninja torch_cpu") == [bash, "-e", "-o", "pipefail", "-c", "ninja torch_cpu"]
    monkeypatch.setenv("SHELL", "/bin/sh")  # no pipefail in POSIX sh: bash or zsh from PATH instead
    assert shell_argv("x")[1:] == ["-e", "-o", "pipefail", "-c", "x"]


def test_build_timeout_kills_the_build(ready, monkeypatch, tmp_path):
    # the fake build hangs for an hour: verify returns only once the timeout has killed it (the
    # stage waits for the killed process), so its returning at all is the proof; nothing is timed here
    monkeypatch.setenv("MPSGEN_FAKE_BUILD", "hang")
    code, doc = verify(ready, *full("--timeout", "1", "--log-dir", str(tmp_path / "logs")))
    assert code == 1
    assert stage(doc, "build")["reason"] == "timed out after 1 s"
    log = (tmp_path / "logs" / "build.log").read_text(encoding="utf-8")
    assert "mpsgen: timed out; process group killed\n" in log, log


def test_build_command_comes_from_mpsgen_toml(ready):
    (ready / ".mpsgen.toml").write_text(f"build-cmd = {json.dumps(BUILD)}\n")
    code, doc = verify(ready, "--assume-mps")
    assert code == 0
    assert stage(doc, "build")["command"][-1] == BUILD


def test_build_command_comes_from_pyproject_tool_table(ready):
    (ready / "pyproject.toml").write_text(f"[tool.mpsgen]\nbuild-cmd = {json.dumps(BUILD)}\n")
    code, doc = verify(ready, "--assume-mps")
    assert code == 0 and stage(doc, "build")["status"] == "passed"


# ------------------------------------------------------------------------------------------- tests


def test_test_failure_per_dtype(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float16=fail")
    code, doc = verify(ready, *full())
    assert code == 1
    tests = stage(doc, "tests")
    assert tests["status"] == "failed"
    outcomes = {t["dtype"]: t["outcome"] for t in tests["tests"]}
    assert outcomes == {"float32": "passed", "float16": "failed", "bfloat16": "passed"}
    assert any("test_output_match_hypot_cpu_float16: failed" in f["message"] for f in doc["findings"])


def test_unexpected_success_fails_and_expected_failure_does_not(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float32=xfail,*_cpu_bfloat16=xpass,*_cpu_float16=skip")
    code, doc = verify(ready, *full())
    assert code == 1
    outcomes = {t["dtype"]: t["outcome"] for t in stage(doc, "tests")["tests"]}
    assert outcomes == {"float32": "xfail", "bfloat16": "unexpected-success", "float16": "skipped"}
    finding = next(f for f in doc["findings"] if "unexpected-success" in f["message"])
    assert "xfail entry is stale" in finding["hint"]


def test_expected_failures_alone_pass(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float32=xfail")
    code, doc = verify(ready, *full())
    assert code == 0 and stage(doc, "tests")["status"] == "passed"


def test_test_timeout_kills_the_run(ready, monkeypatch, tmp_path):
    # the tests stage alone (through the CLI, --timeout would bound the build too, which under load
    # could use it up first): every test hangs for an hour, so only the kill ends the stage
    from mpsgen.commands.verify.model import VerifyOptions
    from mpsgen.commands.verify.stages import run_tests
    from mpsgen.read.checkout import Checkout

    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*=hang")
    options = VerifyOptions(timeout=2, assume_mps=True, log_dir=str(tmp_path / "logs"))
    result = run_tests(Checkout.find(ready), ("hypot",), options)
    assert result.status == "failed"
    assert [f.message for c in result.checks for f in c.findings] == ["tests timed out after 2 s"]
    log = (tmp_path / "logs" / "tests.log").read_text(encoding="utf-8")
    assert "mpsgen: timed out; process group killed\n" in log, log


def test_grad_runs_the_grad_tests_too(ready):
    code, doc = verify(ready, *full("--grad"))
    assert code == 0
    names = {t["test"] for t in stage(doc, "tests")["tests"]}
    assert "test_output_grad_match_hypot_cpu_float16" in names and "test_output_match_hypot_cpu_float16" in names


def test_opinfo_names_map_dots_to_underscores(fixture_checkout):
    from mpsgen.read.checkout import Checkout
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.views import Views
    from mpsgen.commands.verify import opinfo_test_names

    names, _ = opinfo_test_names(Views(Workspace(Checkout.find(fixture_checkout))), "mish", grad=True)
    assert names == ["test_output_match_nn_functional_mish", "test_output_grad_match_nn_functional_mish"]


def test_unittest_output_with_docstrings_and_prints_is_parsed():
    from mpsgen.commands.verify import parse_unittest

    lines = [
        "test_output_match_x_cpu_float32 (__main__.TestConsistency.test_output_match_x_cpu_float32) ... ok",
        "test_output_match_x_cpu_int64 (__main__.TestConsistency.test_output_match_x_cpu_int64)",
        "Compares CPU and MPS. ... ERROR",
        "test_output_match_x_cpu_float16 (__main__.TestConsistency.test_output_match_x_cpu_float16) ... printed",
        "unexpected success",
        "test_output_match_x_cpu_bool (__main__.TestConsistency.test_output_match_x_cpu_bool) ... skipped 'no bool'",
    ]
    got = [(t.dtype, t.outcome, t.detail) for t in parse_unittest(lines, "x")]
    assert got == [("float32", "passed", ""), ("int64", "error", ""), ("float16", "unexpected-success", ""),
                   ("bool", "skipped", "no bool")]


# --------------------------------------------------------------------------------------- reports


def test_json_is_one_document_with_every_finding(ready, monkeypatch):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float16=fail")
    result = run_cli(["-C", str(ready), "verify", "hypot", "--json", *full()])
    doc = json.loads(result.stdout)
    assert doc["command"] == "verify" and doc["ops"] == ["hypot"] and doc["exit_code"] == 1 == result.exit_code
    assert [s["name"] for s in doc["stages"]] == ["static", "build", "tests"]
    assert doc["findings"] and all(set(f) == {"check", "op", "path", "line", "message", "hint"} for f in doc["findings"])


def test_junit_report_parses_and_counts_match(ready, monkeypatch, tmp_path):
    monkeypatch.setenv("MPSGEN_FAKE_OUTCOMES", "*_cpu_float16=fail,*_cpu_bfloat16=skip")
    out = tmp_path / "report.xml"
    result = run_cli(["-C", str(ready), "verify", "hypot", "--junit-xml", str(out), *full()])
    assert result.exit_code == 1
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"mpsgen.verify.static", "mpsgen.verify.build", "mpsgen.verify.tests"}
    for suite in suites.values():
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
        assert int(suite.get("errors")) == 0
        for case in cases:
            assert case.get("classname") and case.get("name")
            assert [child.tag for child in case] in ([], ["failure"], ["skipped"])
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites.values())
    tests = {c.get("name"): c for c in suites["mpsgen.verify.tests"].findall("testcase")}
    assert tests["test_output_match_hypot_cpu_float16"].find("failure") is not None
    assert tests["test_output_match_hypot_cpu_bfloat16"].find("skipped") is not None
    assert len(suites["mpsgen.verify.static"].findall("testcase")) == len(STATIC_CHECKS) == 11


@needs_linux
def test_junit_shows_skipped_stages_as_skipped_never_passed(ready, tmp_path):
    out = tmp_path / "report.xml"
    assert run_cli(["-C", str(ready), "verify", "hypot", "--junit-xml", str(out)]).exit_code == 0
    root = ET.parse(out).getroot()
    for name in ("mpsgen.verify.build", "mpsgen.verify.tests"):
        (case,) = root.find(f"testsuite[@name='{name}']").findall("testcase")
        assert "macOS" in case.find("skipped").get("message")
