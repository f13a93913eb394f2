"""`mpsgen verify`: prove that an op's MPS change is complete, in three stages, each `passed`, `failed`
or `skipped` with a reason: static (`checks`: reads the checkout, on any OS, through the op facts
new-op and migrate use, with the `format` check in `formatcheck`), build (`stages`: runs the
configured build command, its output streamed to a log file) and tests (`stages`: runs
`test/test_mps.py -k test_output_match_<opinfo>` and reads unittest's verbose output). `select` says
which ops, `model` is the report (plain data; `mpsgen.render` shows it). A stage that did not run is
never reported as passed."""

from mpsgen.commands.verify.checks import STATIC_CHECKS, check_op, legacy_names, static_checks, unbalanced
from mpsgen.commands.verify.model import (
    FAILED,
    PASSED,
    SKIPPED,
    STAGES,
    CheckResult,
    Finding,
    StageResult,
    TestOutcome,
    VerifyOptions,
    VerifyReport,
)
from mpsgen.commands.verify.select import all_native_ops, changed_ops, check_op_names
from mpsgen.commands.verify.stages import (
    compiler_errors,
    load_config,
    opinfo_test_names,
    parse_unittest,
    run_build,
    run_tests,
    verify,
)

__all__ = [
    "FAILED", "PASSED", "SKIPPED", "STAGES", "STATIC_CHECKS", "CheckResult", "Finding", "StageResult",
    "TestOutcome", "VerifyOptions", "VerifyReport", "all_native_ops", "changed_ops", "check_op",
    "check_op_names", "compiler_errors", "legacy_names", "load_config", "opinfo_test_names",
    "parse_unittest", "run_build", "run_tests", "static_checks", "unbalanced", "verify",
]
