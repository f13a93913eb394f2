"""What `mpsgen verify` reports: stage and check results, findings, test outcomes, options.
Plain data: the CLI renders it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpsgen.model import Location

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
STAGES = ("static", "build", "tests")
DEFAULT_BUILD_CMD = "ninja torch_cpu"
DEFAULT_BUILD_DIR = "build"
ASSUME_MPS_ENV = "MPSGEN_ASSUME_MPS"
TEST_FILE = "test/test_mps.py"
# The test command, a template: `{python}` is the Python running mpsgen, `{k}` the unittest `-k NAME`
# options (one per test name), `{pytest_k}` one pytest `-k` expression (`NAME or NAME`); both shell-quoted.
DEFAULT_TEST_CMD = "{python} test/test_mps.py -v {k}"


# --------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, where, what is wrong and what to do."""

    check: str
    op: str
    location: Location
    message: str
    hint: str
    # Not the op's own code (another functor of its kernel file, a header): reported once, on its
    # own line, and it does not fail the op (`StageResult.pre_existing`).
    pre_existing: bool = False

    def __str__(self) -> str:
        return f"{self.location}: {self.message} ({self.hint})"


@dataclass(frozen=True)
class CheckResult:
    """One static check of one op (or the build, or one test): status, and why when not passed."""

    check: str
    op: str
    status: str
    findings: tuple[Finding, ...] = ()
    reason: str = ""
    notes: tuple[Finding, ...] = ()  # pre-existing problems met while checking (see Finding)


@dataclass(frozen=True)
class TestOutcome:
    """One unittest result from test_mps.py."""

    __test__ = False  # not a pytest class

    op: str
    test: str
    dtype: str
    outcome: str  # passed / failed / error / xfail / unexpected-success / skipped
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.outcome in ("failed", "error", "unexpected-success")


@dataclass(frozen=True)
class StageResult:
    name: str
    status: str
    reason: str = ""
    checks: tuple[CheckResult, ...] = ()
    tests: tuple[TestOutcome, ...] = ()
    log: str | None = None
    command: tuple[str, ...] = ()
    duration: float = 0.0

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.checks for f in c.findings)

    @property
    def pre_existing(self) -> tuple[Finding, ...]:
        """Each problem the checks met outside the code of the ops they checked, once (one that is
        a finding of a checked op is reported there only)."""
        own = {(f.check, f.location, f.message) for f in self.findings}
        out: dict[tuple, Finding] = {}
        for check in self.checks:
            for note in check.notes:
                key = (note.check, note.location, note.message)
                if key not in own:
                    out.setdefault(key, note)
        return tuple(out.values())


@dataclass(frozen=True)
class VerifyReport:
    root: str
    ops: tuple[str, ...]
    stages: tuple[StageResult, ...]

    @property
    def exit_code(self) -> int:
        return 1 if any(s.status == FAILED for s in self.stages) else 0

    def stage(self, name: str) -> StageResult:
        return next(s for s in self.stages if s.name == name)


@dataclass(frozen=True)
class VerifyOptions:
    static_only: bool = False
    build_cmd: str | None = None
    test_cmd: str | None = None
    build_dir: str | None = None
    require_build: bool = False
    require_tests: bool = False
    grad: bool = False
    timeout: float | None = None
    assume_mps: bool = False
    log_dir: str | None = None
    require_metal_compile: bool = False


# A progress callback: (stage, completed, total or None, message).
Progress = Callable[[str, int, "int | None", str], None]


def _no_progress(stage: str, done: int, total: int | None, message: str) -> None:
    return None
