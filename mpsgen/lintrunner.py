"""A lintrunner adapter: `python -m mpsgen.lintrunner -- @{{PATHSFILE}}`.

lintrunner runs an adapter per linter and reads one JSON object per line from its stdout, each a
LintMessage (`path`, `line`, `char`, `code`, `severity`, `name`, `original`, `replacement`,
`description`). This adapter runs `mpsgen verify --changed --static-only --json` in the current
directory (lintrunner starts it at the repository root) and turns every finding of that document
into a message; a run that produced no document becomes one message without a path that says why.
The paths lintrunner passes are accepted and not needed: `--changed` finds the ops from git, and a
finding is reported wherever it is (the yaml line an incomplete `.mm` change still needs included).

Exit code 0 whenever messages were written: lintrunner reads failures from the messages."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CODE = "MPSGEN"


def lint_message(*, path: str | None, line: int | None, name: str, description: str, severity: str = "error") -> dict:
    return {"path": path, "line": line, "char": None, "code": CODE, "severity": severity, "name": name,
            "original": None, "replacement": None, "description": description}


def messages_from_report(document: dict) -> list[dict]:
    """A message per finding of a `mpsgen verify --json` document, and one for a stage that failed
    without a finding. Skips are not problems of the change and give no message."""
    out = []
    for stage in document["stages"]:
        findings = [f for check in stage["checks"] for f in check["findings"]]
        for f in findings:
            who = f"{f['op']}: " if f["op"] else ""
            out.append(lint_message(path=f["path"], line=f["line"], name=f["check"],
                                    description=f"{who}{f['message']} ({f['hint']})"))
        if stage["status"] == "failed" and not findings:
            out.append(lint_message(path=None, line=None, name=stage["name"], description=f"{stage['name']} failed: {stage['reason']}"))
    return out


def messages_from_run(returncode: int, stdout: str, stderr: str) -> list[dict]:
    """The messages for one run of `mpsgen verify --json`: its findings, or (no document: bad usage,
    not a git work tree, an internal error) one message carrying mpsgen's own error line."""
    try:
        document = json.loads(stdout)
    except ValueError:
        document = None
    if returncode in (0, 1) and isinstance(document, dict):
        return messages_from_report(document)
    why = stderr.strip() or stdout.strip() or f"exit code {returncode}"
    return [lint_message(path=None, line=None, name="command-failed", description=f"mpsgen verify failed: {why}")]


def verify_command(base: str | None) -> list[str]:
    command = [sys.executable, "-m", "mpsgen", "verify", "--changed", "--static-only", "--json"]
    return command + (["--base", base] if base else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpsgen.lintrunner", fromfile_prefix_chars="@",
                                     description="Run `mpsgen verify --changed --static-only --json` and print "
                                                 "its findings as lintrunner LintMessage JSON lines.")
    parser.add_argument("--base", default=None, metavar="REF", help="passed to mpsgen verify --base (default: HEAD)")
    parser.add_argument("--from-json", default=None, metavar="FILE",
                        help="read a saved `mpsgen verify --json` document (- for stdin) instead of running mpsgen")
    parser.add_argument("paths", nargs="*", help="the files lintrunner selected (not needed: see the module's doc)")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        handle = sys.stdin if args.from_json == "-" else open(args.from_json, encoding="utf-8")
        with handle:
            messages = messages_from_report(json.load(handle))
    else:
        run = subprocess.run(verify_command(args.base), capture_output=True, text=True)
        messages = messages_from_run(run.returncode, run.stdout, run.stderr)
    for message in messages:
        print(json.dumps(message), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
