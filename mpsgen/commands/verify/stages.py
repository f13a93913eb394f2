"""The build and test stages of `mpsgen verify`, and `verify()` itself: static checks first, the
build after a clean static stage, the op's tests after a passing build."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mpsgen.commands.verify.checks import CheckSettings, static_checks
from mpsgen.commands.verify.model import (
    ASSUME_MPS_ENV,
    DEFAULT_BUILD_CMD,
    DEFAULT_BUILD_DIR,
    DEFAULT_TEST_CMD,
    FAILED,
    PASSED,
    SKIPPED,
    STAGES,
    TEST_FILE,
    CheckResult,
    Finding,
    Progress,
    StageResult,
    TestOutcome,
    VerifyOptions,
    VerifyReport,
    _no_progress,
)
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.rules import test_keys
from mpsgen.facts.testplan import opinfo_test_name
from mpsgen.facts.views import Views, read_op
from mpsgen.model import Location
from mpsgen.read.cache import checkout_dir_name, state_dir
from mpsgen.read.checkout import Checkout


def load_config(checkout: Checkout) -> dict[str, object]:
    """`[tool.mpsgen]` of the checkout's pyproject.toml, then `.mpsgen.toml` (its top level or its
    `[tool.mpsgen]` table) over it."""
    import tomllib

    config: dict[str, object] = {}
    for name in ("pyproject.toml", ".mpsgen.toml"):
        path = checkout.root / name
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise MpsgenError(f"{name}: {exc}", hint="fix the TOML syntax") from None
        table = data.get("tool", {}).get("mpsgen", {})
        if name == ".mpsgen.toml":
            table = {**{k: v for k, v in data.items() if k != "tool"}, **table}
        config.update(table)
    return config


def assume_mps(options: VerifyOptions) -> bool:
    return options.assume_mps or os.environ.get(ASSUME_MPS_ENV, "") not in ("", "0")


def _mps_platform_reason(options: VerifyOptions) -> str | None:
    if assume_mps(options):
        return None
    if sys.platform != "darwin":
        return f"this platform ({sys.platform}) cannot build or run MPS; needs macOS (or --assume-mps)"
    return None


@dataclass
class _Run:
    returncode: int | None
    timed_out: bool
    missing: str | None
    lines: list[str]


# Shells that take `-o pipefail`: a build command runs as a CI runner runs a step (`bash -e -o pipefail
# -c CMD`), so a failure anywhere in `a && b`, `a; b` or `a | tee log` fails the stage.
_PIPEFAIL_SHELLS = ("bash", "zsh", "ksh", "mksh")
_NOT_FOUND = re.compile(r"(?:(?P<a>[^\s:]+): (?:command )?not found|command not found: (?P<b>\S+))\s*$")


def shell_argv(command: str) -> list[str]:
    """How a user's command line runs: the user's `$SHELL` when it has pipefail (bash, zsh, ksh),
    else bash or zsh from PATH, else /bin/sh (`-e` only: a failure inside a pipeline is then the
    last command's)."""
    user = os.environ.get("SHELL", "")
    if os.path.basename(user) in _PIPEFAIL_SHELLS and os.access(user, os.X_OK):
        return [user, "-e", "-o", "pipefail", "-c", command]
    for name in ("bash", "zsh"):
        found = shutil.which(name)
        if found:
            return [found, "-e", "-o", "pipefail", "-c", command]
    return ["/bin/sh", "-e", "-c", command]


def _not_found(run: _Run) -> str | None:
    """The program a shell could not find (exit status 127 and its `X: command not found` line)."""
    if run.returncode != 127:
        return None
    for line in reversed(run.lines):
        m = _NOT_FOUND.search(line)
        if m:
            return m.group("a") or m.group("b")
    return None


def _run_streaming(argv: list[str], cwd: Path, log: Path, deadline: float | None, on_line: Callable[[str], None],
                   env: dict | None = None, shell: bool = False) -> _Run:
    """Run `argv` (a `shell_argv` when `shell`: its log line shows the command as given), appending its merged output to `log` line by line; kill its process group when
    `deadline` (time.monotonic()) passes."""
    lines: list[str] = []
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {argv[-1] if shell else shlex.join(argv)}  (in {cwd})\n")
        handle.flush()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    encoding="utf-8", errors="replace", bufsize=1, start_new_session=True, env=env)
        except FileNotFoundError:
            handle.write(f"command not found: {argv[0]}\n")
            return _Run(None, False, argv[0], lines)
        except PermissionError:
            handle.write(f"not executable: {argv[0]}\n")
            return _Run(None, False, argv[0], lines)

        def pump():
            assert proc.stdout is not None
            for line in proc.stdout:
                handle.write(line)
                handle.flush()
                lines.append(line.rstrip("\n"))
                on_line(line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc)
        reader.join(timeout=5)
        if timed_out:
            handle.write("mpsgen: timed out; process group killed\n")
    return _Run(proc.returncode, timed_out, None, lines)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=3)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


_COMPILER_ERROR = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<msg>.*)$")
_NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


def compiler_errors(lines: list[str], root: Path, limit: int = 5) -> list[tuple[Location, str]]:
    """The first compiler errors (`path:line[:col]: error: message`), paths relative to the checkout."""
    out = []
    for text in lines:
        m = _COMPILER_ERROR.match(text.strip())
        if not m:
            continue
        path = Path(m.group("path"))
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix() if path.is_absolute() else m.group("path")
        except ValueError:
            rel = m.group("path")
        out.append((Location(rel, int(m.group("line"))), m.group("msg")))
        if len(out) >= limit:
            break
    return out


def _log_dir(checkout: Checkout, options: VerifyOptions) -> Path:
    """`--log-dir`, else the checkout's folder in the user state directory (never the checkout)."""
    if options.log_dir:
        return Path(options.log_dir).resolve()
    return state_dir() / "logs" / checkout_dir_name(checkout.root)


def _rel(checkout: Checkout, path: Path) -> str:
    try:
        return path.relative_to(checkout.root).as_posix()
    except ValueError:
        return str(path)


def _deadline(options: VerifyOptions) -> float | None:
    return None if options.timeout is None else time.monotonic() + options.timeout


def _skip_or_fail(name: str, reason: str, required: bool, flag: str) -> StageResult:
    if required:
        return StageResult(name, FAILED, f"{reason} ({flag} makes this a failure)")
    return StageResult(name, SKIPPED, reason)


def run_build(checkout: Checkout, options: VerifyOptions, progress: Progress = _no_progress) -> StageResult:
    config = load_config(checkout)
    command = options.build_cmd or str(config.get("build-cmd") or DEFAULT_BUILD_CMD)
    build_dir = Path(options.build_dir or str(config.get("build-dir") or DEFAULT_BUILD_DIR))
    build_dir = build_dir if build_dir.is_absolute() else checkout.root / build_dir
    reason = _mps_platform_reason(options)
    if reason is None and not build_dir.is_dir():
        reason = f"no build directory `{_rel(checkout, build_dir)}/` (configure the build first, or pass --build-dir)"
    if reason is not None:
        return _skip_or_fail("build", reason, options.require_build, "--require-build")
    if not command.strip():
        raise MpsgenError("the build command is empty", hint="pass --build-cmd or set build-cmd in .mpsgen.toml")
    argv = shell_argv(command)
    log = _log_dir(checkout, options) / "build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    log_rel = _rel(checkout, log)
    started = time.monotonic()
    progress("build", 0, None, command)

    def on_line(line: str) -> None:
        m = _NINJA_PROGRESS.match(line)
        if m:
            progress("build", int(m.group(1)), int(m.group(2)), line[m.end():].strip()[:80])

    run = _run_streaming(argv, build_dir, log, _deadline(options), on_line, shell=True)
    duration = time.monotonic() - started
    common = dict(log=log_rel, command=tuple(argv), duration=duration)
    missing = run.missing or _not_found(run)
    if missing:
        finding = Finding("build", "", Location(log_rel, 1), f"build tool not found: {missing}",
                          "install it, or pass --build-cmd / set build-cmd in .mpsgen.toml")
        return StageResult("build", FAILED, f"build tool not found: {missing}",
                           (CheckResult("build", "", FAILED, (finding,)),), **common)
    if run.timed_out:
        finding = Finding("build", "", Location(log_rel, max(1, len(run.lines) + 1)),
                          f"build timed out after {options.timeout:g} s", "raise --timeout, or build by hand first")
        return StageResult("build", FAILED, f"timed out after {options.timeout:g} s",
                           (CheckResult("build", "", FAILED, (finding,)),), **common)
    if run.returncode == 0:
        return StageResult("build", PASSED, "", (CheckResult("build", "", PASSED),), **common)
    errors = compiler_errors(run.lines, checkout.root)
    findings = [Finding("build", "", location, f"error: {message}", "fix the compiler error") for location, message in errors]
    if not findings:
        failed_line = next((i for i, t in enumerate(run.lines, 2) if t.startswith("FAILED")), len(run.lines) + 1)
        findings.append(Finding("build", "", Location(log_rel, failed_line),
                                f"build failed with exit code {run.returncode}", f"read {log_rel}"))
    return StageResult("build", FAILED, f"exit code {run.returncode}; {len(errors)} compiler error(s) shown",
                       (CheckResult("build", "", FAILED, tuple(findings)),), **common)


def opinfo_test_names(views: Views, op: str, grad: bool) -> tuple[list[str], str]:
    """The `-k` patterns for an op's OpInfos (`nn.functional.mish` -> test_output_match_nn_functional_mish),
    or ([], why not)."""

    facts = read_op(views, op)
    if not facts.refs:
        return [], f"no OpInfo tests {op}"
    names = []
    for key in test_keys(facts):
        names.append(f"test_output_match_{opinfo_test_name(key)}")
        if grad:
            names.append(f"test_output_grad_match_{opinfo_test_name(key)}")
    return list(dict.fromkeys(names)), "" if names else f"no OpInfo for {op} other than python refs"


_STATUS_WORDS = r"(?P<status>ok|FAIL|ERROR|expected failure|unexpected success|skipped(?: (?P<why>.*))?)"
_RESULT = re.compile(rf"^(?P<test>test\w+) \((?P<cls>[\w.]+)\)\s\.\.\.\s{_STATUS_WORDS}\s*$")
_HEADER = re.compile(r"^(?P<test>test\w+) \((?P<cls>[\w.]+)\)(?:\s\.\.\.\s.*)?$")
_LATE_STATUS = re.compile(rf"^(?:.*\s\.\.\.\s)?{_STATUS_WORDS}\s*$")
_STATUS = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "expected failure": "xfail",
           "unexpected success": "unexpected-success"}
_DTYPE_NAMES = ("bfloat16", "float16", "float32", "float64", "complex32", "complex64", "complex128",
                "int64", "int32", "int16", "int8", "uint8", "bool")


# pytest -v: `path::Class::test_x PASSED [ 50%]`, or under xdist `[gw0] [ 50%] PASSED path::Class::test_x`.
_PYTEST_WORDS = r"(?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: \((?P<why>.*?)\))?"
_PYTEST_RESULT = re.compile(rf"^\S+::(?:\w+::)*(?P<test>test\w+) {_PYTEST_WORDS}(?:\s+\[\s*\d+%\])?\s*$")
_PYTEST_XDIST_RESULT = re.compile(rf"^\[gw\d+\] \[\s*\d+%\] {_PYTEST_WORDS} \S+::(?:\w+::)*(?P<test>test\w+)\s*$")
_PYTEST_STATUS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped", "XFAIL": "xfail",
                  "XPASS": "unexpected-success"}


def parse_unittest(lines: list[str], op: str) -> list[TestOutcome]:
    """The results of a test run, per test: unittest -v (`test_x_cpu_float32 (__main__.TestConsistency...) ...
    ok`) or pytest -v (`test/test_mps.py::TestConsistencyCPU::test_x_cpu_float32 PASSED`, xdist's order
    too). A test reported twice (pytest's `-rA` summary repeats it) counts once."""
    out = []
    seen: set[str] = set()
    pending = None  # a test whose status comes on a later line (docstring or output in between)

    def record(test: str, m) -> None:
        if test in seen:
            return
        seen.add(test)
        status = m.group("status")
        outcome = _PYTEST_STATUS.get(status) or ("skipped" if status.startswith("skipped") else _STATUS[status])
        dtype = next((d for d in _DTYPE_NAMES if test.endswith("_" + d)), "")
        out.append(TestOutcome(op, test, dtype, outcome, (m.group("why") or "").strip("'\"")))

    for text in lines:
        text = text.strip()
        m = _PYTEST_RESULT.match(text) or _PYTEST_XDIST_RESULT.match(text)
        if m:
            record(m.group("test"), m)
            pending = None
            continue
        m = _RESULT.match(text)
        if m:
            record(m.group("test"), m)
            pending = None
            continue
        header = _HEADER.match(text)
        if header:
            pending = header.group("test")
            continue
        late = _LATE_STATUS.match(text) if pending else None
        if late:
            record(pending, late)
            pending = None
    return out


_PLACEHOLDER = re.compile(r"(?<!\$)\{(?P<name>[A-Za-z_]\w*)\}")
_TEST_PLACEHOLDERS = ("python", "k", "pytest_k")


def resolve_test_cmd(checkout: Checkout, options: VerifyOptions) -> str:
    """The test command template (`--test-cmd`, else `test-cmd` of the checkout's configuration, else
    `DEFAULT_TEST_CMD`), checked before any stage runs: a placeholder mpsgen does not fill is bad input."""
    given = options.test_cmd
    source = "--test-cmd"
    if given is None:
        configured = load_config(checkout).get("test-cmd")
        given = None if configured is None else str(configured)
        source = "test-cmd in the checkout's configuration (.mpsgen.toml / [tool.mpsgen])"
    template = DEFAULT_TEST_CMD if given is None else given
    if not template.strip():
        raise MpsgenError(f"the test command ({source}) is empty",
                          hint=f"pass --test-cmd, e.g. `{DEFAULT_TEST_CMD}`")
    for m in _PLACEHOLDER.finditer(template):
        if m.group("name") not in _TEST_PLACEHOLDERS:
            raise MpsgenError(f"the test command ({source}) has an unknown placeholder {m.group(0)}",
                              hint="placeholders: {python}, {k} (unittest -k options), {pytest_k} (one pytest "
                                   "-k expression); write ${NAME} for a shell variable")
    return template


def fill_test_cmd(template: str, names: list[str]) -> str:
    """The template with its placeholders filled for `names`; without `{k}` or `{pytest_k}` the
    unittest `-k` options are appended (a wrapper script receives them as its arguments)."""
    values = {
        "python": shlex.quote(sys.executable),
        "k": " ".join(f"-k {shlex.quote(n)}" for n in names),
        "pytest_k": shlex.quote(" or ".join(names)),
    }
    used = {m.group("name") for m in _PLACEHOLDER.finditer(template)}
    command = _PLACEHOLDER.sub(lambda m: values[m.group("name")], template)
    if not used & {"k", "pytest_k"}:
        command = f"{command} {values['k']}"
    return command


def run_tests(checkout: Checkout, ops: tuple[str, ...], options: VerifyOptions,
              progress: Progress = _no_progress, views: Views | None = None) -> StageResult:
    views = views or Views(Workspace(checkout))
    template = resolve_test_cmd(checkout, options)
    reason = _mps_platform_reason(options)
    if reason is None and TEST_FILE in template and not checkout.exists(TEST_FILE):
        reason = f"{TEST_FILE} is not in the checkout"
    if reason is not None:
        return _skip_or_fail("tests", reason, options.require_tests, "--require-tests")
    log = _log_dir(checkout, options) / "tests.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    log_rel = _rel(checkout, log)
    deadline = _deadline(options)
    started = time.monotonic()
    outcomes: list[TestOutcome] = []
    checks: list[CheckResult] = []
    untested: list[str] = []
    commands: list[str] = []
    for i, op in enumerate(ops):
        progress("tests", i, len(ops), op)
        names, why = opinfo_test_names(views, op, options.grad)
        if not names:
            untested.append(f"{op} ({why})")
            checks.append(CheckResult("tests", op, SKIPPED, reason=why))
            continue
        argv = shell_argv(fill_test_cmd(template, names))
        commands.extend(argv)
        done = [0]

        def on_line(line: str, op=op, done=done) -> None:
            if " ... " in line or _PYTEST_RESULT.match(line.strip()) or _PYTEST_XDIST_RESULT.match(line.strip()):
                done[0] += 1
                progress("tests", i, len(ops), f"{op}: {done[0]} tests")

        run = _run_streaming(argv, checkout.root, log, deadline, on_line, shell=True)
        results = parse_unittest(run.lines, op)
        outcomes.extend(results)
        findings = [
            Finding("tests", op, Location(TEST_FILE, 1), f"{r.test}: {r.outcome}",
                    "an unexpected success means an xfail entry is stale: remove it" if r.outcome == "unexpected-success"
                    else f"see {log_rel}")
            for r in results if r.bad
        ]
        missing = run.missing or _not_found(run)
        if missing:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"test command not found: {missing}",
                                    "install it, or pass --test-cmd / set test-cmd in .mpsgen.toml"))
        elif run.timed_out:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"tests timed out after {options.timeout:g} s",
                                    "raise --timeout, or run the test by hand"))
        elif not results:
            findings.append(Finding("tests", op, Location(TEST_FILE, 1),
                                    f"no test matched {', '.join(names)} (exit code {run.returncode})",
                                    f"check the OpInfo name and the test command; see {log_rel}"))
        elif run.returncode != 0 and not findings:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"test run exited with code {run.returncode}",
                                    f"see {log_rel}"))
        checks.append(CheckResult("tests", op, FAILED if findings else PASSED, tuple(findings)))
        if run.timed_out:
            for rest in ops[i + 1 :]:
                checks.append(CheckResult("tests", rest, SKIPPED, reason="the stage timed out before it ran"))
            break
    progress("tests", len(ops), len(ops), "done")
    common = dict(checks=tuple(checks), tests=tuple(outcomes), log=log_rel, command=tuple(commands),
                  duration=time.monotonic() - started)
    if any(c.status == FAILED for c in checks):
        bad = sum(1 for c in checks for _ in c.findings)
        return StageResult("tests", FAILED, f"{bad} problem(s)", **common)
    if untested or not checks:
        reason = "not tested: " + ", ".join(untested) if untested else "no ops to test"
        return StageResult("tests", FAILED if options.require_tests else SKIPPED,
                           reason + (" (--require-tests makes this a failure)" if options.require_tests else ""), **common)
    return StageResult("tests", PASSED, f"{len(outcomes)} tests", **common)


# ------------------------------------------------------------------------------------------ driver


def verify(checkout: Checkout, ops: tuple[str, ...], options: VerifyOptions,
           progress: Progress = _no_progress, views: Views | None = None) -> VerifyReport:
    """Run the three stages over `ops` (already validated). Build and tests run only after a clean
    static stage: a change that is statically incomplete would fail them for a known reason."""
    views = views or Views(Workspace(checkout))
    started = time.monotonic()
    if not ops:
        reason = "no ops to verify"
        stages = tuple(StageResult(name, SKIPPED, reason) for name in STAGES)
        return VerifyReport(str(checkout.root), ops, stages)
    if not options.static_only:
        resolve_test_cmd(checkout, options)  # bad input (an unknown placeholder) before any stage runs
    settings = CheckSettings(require_metal_compile=options.require_metal_compile)
    checks = static_checks(checkout, ops, views, settings, progress)
    static_status = FAILED if any(c.status == FAILED for c in checks) else PASSED
    static = StageResult("static", static_status, "" if static_status == PASSED else
                         f"{sum(len(c.findings) for c in checks)} finding(s)", checks, duration=time.monotonic() - started)
    if options.static_only:
        later = (StageResult("build", SKIPPED, "--static-only"), StageResult("tests", SKIPPED, "--static-only"))
    elif static_status == FAILED:
        later = (StageResult("build", SKIPPED, "the static stage failed"),
                 StageResult("tests", SKIPPED, "the static stage failed"))
    else:
        build = run_build(checkout, options, progress)
        if build.status == FAILED:
            tests = StageResult("tests", SKIPPED, "the build failed")
        else:
            tests = run_tests(checkout, ops, options, progress, views)
        later = (build, tests)
    return VerifyReport(str(checkout.root), ops, (static, *later))
