"""Every example the user is shown runs: the indented `mpsgen ...` lines of README.md and docs/*.md and the
`Examples:` of each command's --help, read from the text itself (a new example is tested without a
new test), each run on a fresh git copy of the miniature checkout (with its reduction overlay,
fixtures/reduce, for an example naming an op only the overlay has).

What an example must do: leave the checkout as it found it when it is read-only (`git status
--porcelain --ignored` the same), exit 0, or for `verify` and `try` (whose verdict on the miniature's
pre-migration ops may be a failing check) exit 1 with the finding printed; never a usage or input
error (2) nor an internal one (3). One fact of its output: every op it names appears in what it
printed (the redirected file for `> FILE`), a `--json` output is one JSON document (bench's: the file
it names), a `--markdown` one holds a table. `bench --compare A B` reads the records an example of the
same place writes (`--json A`), a record no example writes being the first one copied.

An example shown in several places with the same command line (the README and a --help, say) is
run once, its test named after every place that shows it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import FIXTURE_CHECKOUT, REPO, missing, run_cli

# an example line of the README: an indented code line starting with `mpsgen ` (the synopsis
# `mpsgen [-C PATH] ...` is not an example)
_README_EXAMPLE = re.compile(r"^ {4}(mpsgen (?!\[).*)$")
# a toy script for `trace` examples: a few ops of the miniature's world
_SCRIPT = "import torch\nx = torch.rand(4)\ntorch.atan2(x, x + 1)\ntorch.nn.functional.mish(x)\n"
_VERDICT_COMMANDS = ("verify", "try", "audit")  # exit 1 is a finding, printed


@dataclass(frozen=True)
class Example:
    where: str  # README.md:LINE, or `mpsgen CMD --help`
    text: str

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)[1:]


DOC_PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def readme_examples() -> list[Example]:
    """The examples of README.md and of every page under docs/."""
    out = []
    for page in DOC_PAGES:
        where = page.relative_to(REPO).as_posix()
        lines = page.read_text(encoding="utf-8").splitlines()
        out += [Example(f"{where}:{n}", m.group(1).rstrip()) for n, line in enumerate(lines, 1)
                if (m := _README_EXAMPLE.match(line))]
    return out


def help_examples() -> list[Example]:
    from mpsgen.cli import main

    out = []
    for name, command in [("", main), *sorted(main.commands.items())]:
        epilog = (command.epilog or "").splitlines()
        if "Examples:" not in epilog:
            continue
        where = f"mpsgen {name} --help".replace("  ", " ")
        out += [Example(where, line.strip()) for line in epilog[epilog.index("Examples:") + 1:] if line.strip()]
    return out


EXAMPLES = readme_examples() + help_examples()


def distinct_examples() -> list[list[Example]]:
    """The examples grouped by their command line (comments aside): each group is one run."""
    groups: dict[tuple[str, ...], list[Example]] = {}
    for example in EXAMPLES:
        groups.setdefault(tuple(example.argv), []).append(example)
    return list(groups.values())


def test_examples_are_found_in_every_source():
    """The extraction itself: README examples of each command, and every command's --help ones."""
    from mpsgen.cli import main

    readme = {e.argv[0] if e.argv[0] != "-C" else e.argv[2] for e in readme_examples()}
    assert readme >= {"new-op", "migrate", "verify", "try", "scan", "trace"}
    assert {e.where for e in help_examples()} == {"mpsgen --help"} | {f"mpsgen {n} --help" for n in main.commands}
    # every example is in exactly one run, with the same command line as the rest of its run
    groups = distinct_examples()
    assert sorted(e.where + e.text for g in groups for e in g) == sorted(e.where + e.text for e in EXAMPLES)
    assert all(e.argv == g[0].argv for g in groups for e in g)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)


@pytest.fixture(scope="session")
def git_fixture(tmp_path_factory) -> Path:
    """A git copy of the miniature, committed, with `origin/main` at that commit (for --base); made
    once, copied for each example."""
    if shutil.which("git") is None:
        missing("git")
    root = tmp_path_factory.mktemp("examples") / "pytorch"
    shutil.copytree(FIXTURE_CHECKOUT, root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fixture")
    _git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    return root


def _overlay_ops() -> set[str]:
    """Ops only the reduction overlay's yaml declares (`- func: prod(...)` -> prod)."""
    from reduction_support import REDUCE_OVERLAY

    text = (REDUCE_OVERLAY / "native_functions.append.yaml").read_text(encoding="utf-8")
    return set(re.findall(r"^- func: ([A-Za-z0-9_]+)", text, re.M)) - _ops(FIXTURE_CHECKOUT)


def _status(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def _command(argv: list[str]) -> str:
    rest = list(argv)
    while rest and rest[0] in ("-C", "--debug"):
        rest = rest[2:] if rest[0] == "-C" else rest[1:]
    return rest[0]


def _prepare(example: Example, root: Path, work: Path) -> tuple[list[str], Path | None]:
    """The example's arguments to run in `work` on `root`: its -C pointed at the copy (or added), a
    `> FILE` redirect taken off (returned), scripts and recordings it reads put in place; a bench
    example for a Mac runs with `--device cpu` where no MPS device is present."""
    argv = example.argv
    out = None
    if ">" in argv:
        at = argv.index(">")
        out, argv = work / argv[at + 1], argv[:at] + argv[at + 2:]
    if "-C" in argv:
        argv[argv.index("-C") + 1] = str(root)
    else:
        argv = ["-C", str(root), *argv]
    command = _command(argv)
    if command == "trace":
        pytest.importorskip("torch", reason="not installed: torch")
        for word in argv:
            if word.endswith(".py"):
                (work / word).write_text(_SCRIPT, encoding="utf-8")
        if "--ops-file" in argv:  # recorded by an earlier example of the same text with --save
            wanted = argv[argv.index("--ops-file") + 1]
            source = example.where.split(":")[0]
            saver = next(e for e in EXAMPLES if e.where.split(":")[0] == source and "--save" in e.argv
                         and e.argv[e.argv.index("--save") + 1] == wanted)
            saved_argv, _ = _prepare(saver, root, work)
            assert run_cli(saved_argv, cwd=work).exit_code == 0
    if command == "bench":
        torch = pytest.importorskip("torch", reason="not installed: torch")
        if "--compare" not in argv and "--device" not in argv and not torch.backends.mps.is_available():
            # a Mac's example (the default device is mps): elsewhere the harness its message points at
            argv = [*argv, "--device", "cpu"]
        if "--compare" in argv:  # the records an earlier example of the same text writes with --json
            at = argv.index("--compare")
            source = example.where.split(":")[0]
            for name in argv[at + 1:at + 3]:
                writer = next((e for e in EXAMPLES if e.where.split(":")[0] == source and "--json" in e.argv
                               and e.argv[e.argv.index("--json") + 1] == name), None)
                if writer is not None:
                    written_argv, _ = _prepare(writer, root, work)
                    assert run_cli(written_argv, cwd=work).exit_code == 0
                else:  # no example writes it: the same run compared with itself
                    shutil.copyfile(work / argv[at + 1], work / name)
    if command == "try":
        from mpsgen.read.metalhost.compiler import find_compiler

        if find_compiler()[0] is None:
            missing("no C++ compiler (g++/clang++) on PATH")
    if command in _VERDICT_COMMANDS:
        # The walkthrough's order: an op is given its kernel (`new-op OP` or `migrate OP`, the
        # README's first commands) before it is verified or tried; one already native takes neither.
        for word in argv:
            if word in _ops(root) and run_cli(["-C", str(root), "new-op", word]).exit_code != 0:
                run_cli(["-C", str(root), "migrate", word])
    return argv, out


def _ops(root: Path) -> set[str]:
    from mpsgen.read.checkout import NATIVE_FUNCTIONS
    from mpsgen.read.nfyaml import NativeFunctions

    return set(NativeFunctions((root / NATIVE_FUNCTIONS).read_text(encoding="utf-8"), NATIVE_FUNCTIONS).op_names)


# trace runs a torch script in process (tens of seconds each): heavy, run by CI (tests/conftest.py)
@pytest.mark.parametrize("examples", [
    pytest.param(group, id=" + ".join(e.where for e in group) + f": {group[0].text}",
                 marks=[pytest.mark.heavy] if _command(group[0].argv) == "trace" else [])
    for group in distinct_examples()])
def test_example_runs(examples, tmp_path, git_fixture):
    example = examples[0]
    root = tmp_path / "pytorch"
    if _overlay_ops() & set(example.argv):  # a reduction the miniature carries in its overlay (fixtures/reduce)
        from reduction_support import reduction_checkout

        reduction_checkout(tmp_path)
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fixture")
    else:
        shutil.copytree(git_fixture, root, symlinks=True)
    work = tmp_path / "work"
    work.mkdir()
    argv, out = _prepare(example, root, work)
    command = _command(argv)
    read_only = command in ("scan", "verify", "try", "trace", "bench", "audit") or "--dry-run" in argv
    status = _status(root)
    result = run_cli(argv, cwd=work)
    if read_only:  # the checkout as it was, files git ignores included (verify's logs are elsewhere)
        assert _status(root) == status
    if out is not None:  # the shell's `> FILE`
        out.write_text(result.stdout, encoding="utf-8")
    printed = result.stdout
    result_text = result.stdout + result.stderr
    allowed = (0, 1) if command in _VERDICT_COMMANDS else (0,)
    assert result.exit_code in allowed, f"{' + '.join(e.where for e in examples)}: {example.text}\n{result.stderr}"
    if result.exit_code == 1:
        finding = "reproduce:" in result_text or '"reproducer"' in result_text  # audit's findings
        assert "failed" in result_text or "mismatch" in result_text or finding, result_text
    named = [word for word in argv if word in _ops(root) and word != command]
    for op in named:
        assert op in result_text, f"{example.text}: {op} not in the output"
    if "--json" in argv:  # bench's --json names the file the record goes to
        document = (work / argv[argv.index("--json") + 1]).read_text() if command == "bench" else printed
        assert isinstance(json.loads(document), dict)
    if "--markdown" in argv:
        assert re.search(r"^\|.*\|$", printed, re.M)
    assert printed.strip() or result.stderr.strip()
