"""How reports look where they are read: plain lines off a terminal (CI logs, pipes), GitHub Actions
workflow commands, NO_COLOR, help examples and op-name completion. The fixture's own gaps give
findings to show: `logaddexp2` and `hardswish_backward` went native in the yaml but left their
MPSGraph definitions behind, and hardswish's OpInfo keeps a grad xfail the kernel fixes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from support import FIXTURE_CHECKOUT, copy_checkout, missing, run_cli, snapshot

from mpsgen.model import Location
from mpsgen.render.github import github_lines
from mpsgen.render.text import aligned
from mpsgen.render.verify_text import verify_lines
from mpsgen.commands.verify import FAILED, PASSED, SKIPPED, CheckResult, Finding, StageResult, VerifyReport

HALF_MIGRATED = ("logaddexp2", "hardswish_backward")
BOX_DRAWING = re.compile("[\u2500-\u257f]")
ANSI = "\x1b["
LOCATION_LINE = re.compile(r"^[\w./-]+:\d+: ")


def verify_doc(root, *args):
    result = run_cli(["-C", str(root), "verify", *args, "--json"])
    return json.loads(result.stdout)


def finding_line(f: dict) -> str:
    return f"{f['path']}:{f['line']}: {f['message']} ({f['hint']})"


def assert_plain(text: str) -> None:
    assert not BOX_DRAWING.search(text), "box-drawing characters in plain output"
    assert "…" not in text, "an ellipsis: something was cut"
    assert ANSI not in text, "ANSI codes in plain output"


# ------------------------------------------------------------------------------------- plain text


def test_aligned_table_keeps_every_cell_whole():
    lines = aligned(("#", "op", "reason"), [("1", "_amp_foreach_non_finite_check_and_unscale", "no stub"),
                                             ("12", "abs", "a reason\nover two lines")], right=(0,))
    assert lines == [
        " #  op                                         reason",
        " 1  _amp_foreach_non_finite_check_and_unscale  no stub",
        "12  abs                                        a reason over two lines",
    ]


def test_verify_through_a_pipe_is_plain_with_one_line_per_finding():
    doc = verify_doc(FIXTURE_CHECKOUT, *HALF_MIGRATED, "--static-only")
    findings = doc["findings"]
    assert len(findings) >= 2
    run = subprocess.run([sys.executable, "-m", "mpsgen", "-C", str(FIXTURE_CHECKOUT), "verify", *HALF_MIGRATED,
                          "--static-only"], capture_output=True, text=True)
    assert run.returncode == 1
    assert_plain(run.stdout)
    lines = run.stdout.splitlines()
    assert lines[0] == "mpsgen verify logaddexp2 hardswish_backward"
    assert [line for line in lines if LOCATION_LINE.match(line)] == [finding_line(f) for f in findings]
    assert lines[-1] == (f"2 op(s): static failed ({len(findings)} finding(s)), build skipped (--static-only), "
                         "tests skipped (--static-only)")
    header = lines[1].split()
    assert header == ["stage", "op", "check", "status", "detail"]
    rows = [line.split(None, 4) for line in lines[2:] if line.startswith("static ")]
    checks = doc["stages"][0]["checks"]
    assert [(r[1], r[2], r[3]) for r in rows] == [(c["op"], c["check"], c["status"]) for c in checks]


def test_verify_plain_lines_of_a_report_with_tests_and_a_log():
    finding = Finding("tests", "atan2", Location("test/test_mps.py", 1), "test_output_match_atan2_mps_float16: failed",
                      "run it alone to see why")
    report = VerifyReport("/x", ("atan2",), (
        StageResult("static", PASSED, "", (CheckResult("yaml-dispatch", "atan2", PASSED),)),
        StageResult("build", PASSED, "", (CheckResult("build", "", PASSED),), log=".mpsgen/logs/build.log"),
        StageResult("tests", FAILED, "1 failed", (CheckResult("tests", "atan2", FAILED, (finding,)),)),
    ))
    assert verify_lines(report) == [
        "mpsgen verify atan2",
        "stage   op     check          status  detail",
        "static  atan2  yaml-dispatch  passed",
        "build          build          passed",
        "tests   atan2  tests          failed  1 finding(s)",
        "test/test_mps.py:1: test_output_match_atan2_mps_float16: failed (run it alone to see why)",
        "build log: .mpsgen/logs/build.log",
        "1 op(s): static passed, build passed, tests failed (1 failed)",
    ]


@pytest.fixture(scope="module")
def real_scan_checkout(real_torch_files, tmp_path_factory):
    """The wheel's files with the fixture's `.mm`/`.metal` files: a real-size yaml whose op names
    are long."""
    import shutil

    from mpsgen.read.checkout import KERNELS_DIR, OPERATIONS_DIR

    root = tmp_path_factory.mktemp("output-real") / "pytorch"
    shutil.copytree(real_torch_files, root)
    for rel in (OPERATIONS_DIR, KERNELS_DIR):
        shutil.copytree(FIXTURE_CHECKOUT / rel, root / rel, dirs_exist_ok=True)
    return root


def test_scan_candidates_through_a_pipe_prints_every_name_and_reason_whole(real_scan_checkout):
    from mpsgen.render.scan_text import CANDIDATE_HEADER

    argv = [sys.executable, "-m", "mpsgen", "-C", str(real_scan_checkout), "scan", "--candidates"]
    run = subprocess.run(argv, capture_output=True, text=True, check=True)
    document = json.loads(subprocess.run(argv[:-1] + ["--json"], capture_output=True, text=True, check=True).stdout)
    assert_plain(run.stdout)
    lines = run.stdout.splitlines()
    assert lines[0] == "Candidates for mpsgen migrate, easiest first"
    assert re.split(r" {2,}", lines[1].strip()) == list(CANDIDATE_HEADER)
    records = {r["op"]: r for r in document["ops"]}
    rows = [re.split(r" {2,}", line.strip()) for line in lines[2 : 2 + len(document["candidates"])]]
    assert [row[1] for row in rows] == document["candidates"]
    assert "_amp_foreach_non_finite_check_and_unscale" in document["candidates"]
    for row in rows:
        record = records[row[1]]
        assert (row[2], row[3], row[4], row[-1]) == (record["candidate"]["tier"], record["backing"],
                                                     record["implementation"] or "-", record["candidate"]["reason"])
    assert lines[2 + len(rows)] == ""


def test_scan_summary_through_a_pipe_is_plain():
    totals = json.loads(run_cli(["-C", str(FIXTURE_CHECKOUT), "scan", "--json"]).stdout)["totals"]
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan"])
    assert_plain(result.stdout)
    lines = result.stdout.splitlines()
    assert lines[0] == f"MPS backing of {totals['ops']} operators"
    assert re.split(r" {2,}", lines[1]) == ["backing", "meaning", "ops", "graph sites in kernels"]
    tiers = totals["candidates"]
    assert lines[2 + len(totals["by_backing"])] == (
        f"candidates: {tiers['ready']} ready, {tiers['expr']} need --expr, {tiers['port']} need a hand-written port "
        "(mpsgen scan --candidates lists them)")
    rows = [re.split(r" {2,}", line.strip()) for line in lines[2 : 2 + len(totals["by_backing"])]]
    assert [(r[0], int(r[2]), int(r[3])) for r in rows] == [(b, v["ops"], v["graph_sites"]) for b, v in totals["by_backing"].items()]


def test_migrate_summary_through_a_pipe_lists_every_change_whole(tmp_path):
    root = copy_checkout(tmp_path)
    plan = json.loads(run_cli(["-C", str(root), "migrate", "asinh", "acosh", "atanh", "--dry-run", "--json"]).stdout)
    result = run_cli(["-C", str(root), "migrate", "asinh", "acosh", "atanh", "--dry-run"])
    assert result.exit_code == 0
    assert_plain(result.stderr)
    rows = [line.split(None, 2) for line in result.stderr.splitlines() if line.startswith("  ")]
    rows = [tuple(r) for r in rows if re.match(r"[\w./-]+:\d+$", r[0])]  # not the `  build: ...` steps
    assert rows == [(f"{c['path']}:{c['line']}", c["kind"], c["detail"]) for c in plan["changes"]]


# ------------------------------------------------------------------------------------ colour


def test_forced_rich_draws_tables_and_colours_them(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "verify", *HALF_MIGRATED, "--static-only", "--format", "rich"])
    assert BOX_DRAWING.search(result.stdout) and ANSI in result.stdout


@pytest.mark.parametrize("args", [["verify", *HALF_MIGRATED, "--static-only", "--format", "rich"],
                                  ["scan", "--candidates", "--format", "rich"]])
def test_no_color_leaves_no_ansi_codes_in_rich_output(monkeypatch, args):
    monkeypatch.setenv("NO_COLOR", "1")
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), *args])
    assert BOX_DRAWING.search(result.stdout)
    assert ANSI not in result.stdout


def test_no_color_leaves_the_dry_run_diff_and_summary_uncoloured(monkeypatch, tmp_path):
    root = copy_checkout(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run", "--format", "rich"])
    assert ANSI in coloured.stdout
    monkeypatch.setenv("NO_COLOR", "1")
    plain = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run", "--format", "rich"])
    assert ANSI not in plain.stdout and ANSI not in plain.stderr
    assert plain.stdout.startswith("diff --git a/")


@pytest.mark.parametrize("args", [["scan", "--json"], ["verify", "hypot", "--static-only", "--json"],
                                  ["new-op", "hypot", "--json"], ["migrate", "atan2", "--json"]])
def test_json_with_an_explicit_format_is_bad_usage_and_writes_nothing(tmp_path, args):
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), *args, "--format", "plain"])
    assert result.exit_code == 2
    assert result.stderr == "mpsgen: error: --json and --format plain are two output formats (pick one)\n"
    assert snapshot(root) == before


# ------------------------------------------------------------------------------- --format github


def test_github_format_is_one_annotation_per_finding_then_the_summary():
    doc = verify_doc(FIXTURE_CHECKOUT, *HALF_MIGRATED, "--static-only")
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "verify", *HALF_MIGRATED, "--static-only", "--format", "github"])
    assert result.exit_code == 1
    expected = []
    for check in doc["stages"][0]["checks"]:
        for f in check["findings"]:
            expected.append(f"::error file={f['path']},line={f['line']},title=mpsgen {f['check']}::{f['message']} ({f['hint']})")
        if check["status"] == "skipped":
            expected.append(f"::notice title=mpsgen {check['check']}::{check['op']}: {check['check']} skipped ({check['reason']})")
    expected += [
        "::notice title=mpsgen build::build skipped: --static-only",
        "::notice title=mpsgen tests::tests skipped: --static-only",
        f"2 op(s): static failed ({len(doc['findings'])} finding(s)), build skipped (--static-only), tests skipped (--static-only)",
    ]
    assert result.stdout.splitlines() == expected
    assert all("%" not in line for line in expected)  # nothing here needed escaping: the next test escapes


def test_github_escapes_data_and_properties_and_warns_about_stages_that_could_not_run():
    finding = Finding("kernel-name", "x", Location("dir,a:b/k.mm", 7), "100% wrong\nsecond line\r", "fix, then: rerun")
    report = VerifyReport("/x", ("x",), (
        StageResult("static", FAILED, "1 finding(s)", (CheckResult("kernel-name", "x", FAILED, (finding,)),
                                                      CheckResult("dtype-coverage", "x", SKIPPED, reason="no OpInfo"))),
        StageResult("build", SKIPPED, "not macOS (MPS needs Apple silicon; --assume-mps runs anyway)"),
        StageResult("tests", FAILED, "tests cannot run here (--require-tests makes this a failure)"),
    ))
    assert github_lines(report) == [
        "::error file=dir%2Ca%3Ab/k.mm,line=7,title=mpsgen kernel-name::100%25 wrong%0Asecond line%0D (fix, then: rerun)",
        "::notice title=mpsgen dtype-coverage::x: dtype-coverage skipped (no OpInfo)",
        "::notice title=mpsgen build::build skipped: not macOS (MPS needs Apple silicon; --assume-mps runs anyway)",
        "::error title=mpsgen tests::tests failed: tests cannot run here (--require-tests makes this a failure)",
        "1 op(s): static failed (1 finding(s)), build skipped (not macOS (MPS needs Apple silicon; --assume-mps runs "
        "anyway)), tests failed (tests cannot run here (--require-tests makes this a failure))",
    ]


def test_github_warns_when_a_stage_could_not_run_and_notes_skips_that_were_asked_for():
    static = StageResult("static", PASSED, "", (CheckResult("yaml-dispatch", "x", PASSED),))
    report = VerifyReport("/x", ("x",), (static, StageResult("build", SKIPPED, "no build directory build"),
                                         StageResult("tests", SKIPPED, "not macOS")))
    assert github_lines(report)[:2] == ["::warning title=mpsgen build::build skipped: no build directory build",
                                        "::warning title=mpsgen tests::tests skipped: not macOS"]
    asked = VerifyReport("/x", ("x",), (static, StageResult("build", SKIPPED, "--static-only"),
                                        StageResult("tests", SKIPPED, "--static-only")))
    assert github_lines(asked, static_only=True)[:2] == ["::notice title=mpsgen build::build skipped: --static-only",
                                                         "::notice title=mpsgen tests::tests skipped: --static-only"]


# ------------------------------------------------------------------------ help and completion


EXAMPLES = {
    "": ["mpsgen migrate atan2 --dry-run", "mpsgen -C ~/pytorch verify --changed --static-only", "mpsgen scan --candidates"],
    "new-op": ["mpsgen new-op hypot --dry-run", "mpsgen new-op hypot",
               "mpsgen new-op copysign --dtypes float,int2float"],
    "migrate": ["mpsgen migrate atan2 --dry-run", "mpsgen migrate asinh acosh atanh",
                'mpsgen migrate remainder --expr "a - b * c10::metal::floor_divide(a, b)" --dtypes float,integer'],
    "verify": ["mpsgen verify atan2 hypot --static-only", "mpsgen verify --changed --base origin/main --format github",
               "mpsgen verify --all-native --static-only --json > verify.json",
               'mpsgen verify hypot --test-cmd "{python} -m pytest -v test/test_mps.py -k {pytest_k}"'],
    "scan": ["mpsgen scan --candidates", "mpsgen scan --candidates --tier ready,expr", "mpsgen scan --new-op",
             "mpsgen scan --json > mps.json", "mpsgen scan --candidates --markdown"],
}


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_help_ends_with_examples_one_per_line(command):
    result = run_cli([command, "--help"] if command else ["--help"])
    assert result.exit_code == 0
    lines = result.stdout.rstrip("\n").splitlines()
    count = len(EXAMPLES[command])
    assert lines[-count - 1:] == ["  Examples:"] + [f"    {example}" for example in EXAMPLES[command]]


def completions(args: list[str], incomplete: str) -> list[str]:
    from click.shell_completion import ShellComplete

    from mpsgen.cli import main

    return [item.value for item in ShellComplete(main, {}, "mpsgen", "_MPSGEN_COMPLETE").get_completions(args, incomplete)]


@pytest.mark.parametrize("command", ["new-op", "migrate", "verify", "try"])
def test_op_arguments_complete_from_the_checkouts_yaml(command):
    assert completions(["-C", str(FIXTURE_CHECKOUT), command], "logadd") == ["logaddexp", "logaddexp2"]


def test_completion_offers_every_base_name_once():
    from mpsgen.read.checkout import NATIVE_FUNCTIONS
    from mpsgen.completion import op_names
    from mpsgen.read.nfyaml import NativeFunctions

    names = op_names(FIXTURE_CHECKOUT)
    text = (FIXTURE_CHECKOUT / NATIVE_FUNCTIONS).read_text(encoding="utf-8")
    assert names == list(NativeFunctions(text, NATIVE_FUNCTIONS).op_names)
    assert "hardswish_" not in names and "hardswish" in names


def test_completion_outside_a_checkout_offers_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert completions(["verify"], "a") == []
    assert completions(["-C", str(tmp_path / "missing"), "verify"], "a") == []


def test_completion_through_the_shell_protocol(real_torch_files):
    """What bash's completion function runs on a Tab press, on a real-size yaml."""
    import os
    import shutil

    exe = shutil.which("mpsgen", path=os.path.dirname(sys.executable))
    if exe is None:
        missing("the mpsgen console script is not installed next to this Python")
    env = dict(os.environ, _MPSGEN_COMPLETE="bash_complete", COMP_WORDS=f"mpsgen -C {real_torch_files} migrate _amp_f",
               COMP_CWORD="4")
    run = subprocess.run([exe], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == ["plain,_amp_foreach_non_finite_check_and_unscale"]
