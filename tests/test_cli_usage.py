"""Bad usage is one line (`mpsgen: error: what (see `mpsgen CMD --help`)`), exit 2, with --json also
one JSON document on stdout; the global options -C and --debug work anywhere on the line."""

from __future__ import annotations

import json

import pytest

from mpsgen.errors import MpsgenError
from support import FIXTURE_CHECKOUT, run_cli


@pytest.mark.parametrize("args, line", [
    (["migrate", "--bogus"], "mpsgen: error: No such option '--bogus'. Did you mean '--body'? (see `mpsgen migrate --help`)"),
    (["migrate"], "mpsgen: error: Missing argument 'OPS...' (see `mpsgen migrate --help`)"),
    (["nosuch"], "mpsgen: error: No such command 'nosuch' (see `mpsgen --help`)"),
    (["verify", "--format", "x"], "mpsgen: error: Invalid value for '--format': 'x' is not one of 'auto', 'rich', "
                                  "'plain', 'github' (see `mpsgen verify --help`)"),
    (["-C"], "mpsgen: error: Option '-C' requires an argument (see `mpsgen --help`)"),
    (["migrate", "--dry"], "mpsgen: error: No such option '--dry'. (Did you mean one of: '--body', '--dry-run', '--dtypes'?) "
                           "(see `mpsgen migrate --help`)"),
])
def test_bad_usage_is_one_line_and_exit_2(args, line):
    result = run_cli(args)
    assert result.exit_code == 2
    assert result.stderr == line + "\n"
    assert result.stdout == ""


def test_bad_usage_with_json_is_a_json_document_too():
    result = run_cli(["scan", "--json", "--bogus"])
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {"error": "No such option '--bogus'", "location": None,
                                         "hint": "see `mpsgen scan --help`"}
    assert result.stderr == "mpsgen: error: No such option '--bogus' (see `mpsgen scan --help`)\n"


def test_checkout_option_after_the_command(tmp_path):
    before = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan", "--json"])
    after = run_cli(["scan", "--json", "-C", str(FIXTURE_CHECKOUT)], cwd=tmp_path)
    assert after.exit_code == 0 == before.exit_code, (before.stderr, after.stderr)
    assert json.loads(after.stdout) == json.loads(before.stdout)


def test_debug_after_the_command_shows_the_traceback(tmp_path):
    plain = run_cli(["-C", str(FIXTURE_CHECKOUT), "migrate", "no_such_op", "--dry-run"])
    assert plain.exit_code == 2 and plain.stderr.startswith("mpsgen: error: ")
    with pytest.raises(MpsgenError):  # --debug: the exception itself, not the one line
        run_cli(["migrate", "no_such_op", "--dry-run", "--debug", "-C", str(FIXTURE_CHECKOUT)])


def test_trace_script_arguments_are_the_scripts_own(tmp_path):
    """After SCRIPT every word is the script's, -C and --debug included."""
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint(sys.argv[1:], file=sys.stderr)\n")
    ops = tmp_path / "ops.json"
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", "--save", str(ops), str(script), "-C", "x", "--debug"])
    if "pip install 'mpsgen[trace]'" in result.stderr:
        pytest.skip("not installed: torch")
    assert "['-C', 'x', '--debug']" in result.stderr
