"""`mpsgen verify`, static stage: each check passes on a complete change and fails, with `path:line`
and a hint, on a copy broken in exactly the way the check is about."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mpsgen.edit.clangformat import find_executable
from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, run_cli

HOST_COMPILER = find_compiler()[0]

COMMON_MPS = "torch/testing/_internal/common_mps.py"
BINARY_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
BINARY_MM = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
YAML = "aten/src/ATen/native/native_functions.yaml"


def read(root: Path, rel: str) -> str:
    with open(root / rel, encoding="utf-8", newline="") as handle:
        return handle.read()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    text = read(root, rel)
    assert text.count(old) == 1, f"{old!r} must occur once in {rel}"
    write(root, rel, text.replace(old, new))


def line_of(root: Path, rel: str, needle: str) -> int:
    return next(i for i, line in enumerate(read(root, rel).splitlines(), 1) if needle in line)


def complete_hypot(tmp_path: Path) -> Path:
    """A copy of the fixture where hypot's change is complete: `new-op hypot` (which also updates
    the test lists)."""
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    return root


def verify_json(root: Path, *args: str):
    result = run_cli(["-C", str(root), "verify", *args, "--static-only", "--json"])
    return result.exit_code, json.loads(result.stdout)


def checks(doc) -> dict[str, dict]:
    static = doc["stages"][0]
    assert static["name"] == "static"
    return {c["check"]: c for c in static["checks"]}


@pytest.fixture
def fixed(tmp_path) -> Path:
    return complete_hypot(tmp_path)


def test_complete_change_passes_every_static_check(fixed):
    code, doc = verify_json(fixed, "hypot")
    assert code == 0
    assert {name: c["status"] for name, c in checks(doc).items()} == {
        "yaml-dispatch": "passed", "stub-registration": "passed", "kernel-name": "passed",
        "reduce-variants": "skipped", "dtype-coverage": "passed", "placeholder": "passed", "legacy": "passed", "test-lists": "passed",
        "balance": "passed", "format": "passed" if find_executable() else "skipped",
        "metal-compile": "passed" if HOST_COMPILER else "skipped",
    }
    assert doc["findings"] == []
    assert [s["status"] for s in doc["stages"][1:]] == ["skipped", "skipped"]
    assert all(s["reason"] == "--static-only" for s in doc["stages"][1:])


def test_untouched_op_fails_with_the_dispatch_line_to_change(tmp_path):
    root = copy_checkout(tmp_path)
    code, doc = verify_json(root, "hypot")
    assert code == 1
    finding = checks(doc)["yaml-dispatch"]["findings"][0]
    assert (finding["path"], finding["line"]) == (YAML, line_of(root, YAML, "CPU, CUDA: hypot_out"))
    assert "CPU, CUDA, MPS: hypot_out" in finding["hint"]
    assert checks(doc)["stub-registration"]["status"] == "failed"


# (name, check, file, old, new, text on the line the finding points at, words in the message)
BROKEN = [
    ("mps-missing-from-shared-line", "yaml-dispatch", YAML, "CPU, CUDA, MPS: hypot_out", "CPU, CUDA: hypot_out",
     "CPU, CUDA: hypot_out", "not on the shared line"),
    ("leftover-mps-line", "yaml-dispatch", YAML, "    CPU, CUDA, MPS: hypot_out\n",
     "    CPU, CUDA, MPS: hypot_out\n    MPS: hypot_out_mps\n", "MPS: hypot_out_mps", "leftover"),
    ("registered-twice", "stub-registration", BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel)\n",
     "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel)\nREGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel)\n",
     None, "registered for MPS 2 times"),
    ("not-registered", "stub-registration", BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel)\n", "",
     None, "not registered for MPS"),
    ("signature-mismatch", "stub-registration", BINARY_MM, "static void hypot_mps_kernel(TensorIteratorBase& iter)",
     "static void hypot_mps_kernel(TensorIterator& iter)", "static void hypot_mps_kernel", "is declared"),
    ("kernel-name-without-functor", "kernel-name", BINARY_MM, '"hypot")', '"hypotenuse")', '"hypotenuse"',
     "no struct hypotenuse_functor"),
    ("functor-never-registered", "dtype-coverage", BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(hypot);\n", "",
     "struct hypot_functor", "never registered"),
    ("half-and-bfloat-missing", "dtype-coverage", BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(hypot);",
     "REGISTER_BINARY_OP(hypot, float, float);", "REGISTER_BINARY_OP(hypot, float, float)", "float16, bfloat16"),
    ("error-placeholder-left", "placeholder", BINARY_METAL, "struct hypot_functor {\n",
     'struct hypot_functor {\n#error "mpsgen: write the body"\n', "#error", "#error placeholder"),
    # the miniature has 2.15's list of ops whose complex tests fail; hypot is put in it first
    ("complex-still-in-unsupported-complex-ops", "test-lists", BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(hypot);",
     "REGISTER_FLOAT_BINARY_OP(hypot);\nREGISTER_BINARY_OP(hypot, float2, float2);", "UNSUPPORTED_COMPLEX_OPS = {",
     "is still in UNSUPPORTED_COMPLEX_OPS"),
    ("unbalanced-host-function", "balance", BINARY_MM, '  lib.exec_binary_kernel(iter, "hypot");\n}',
     '  lib.exec_binary_kernel(iter, "hypot");\n}\n}', None, "unbalanced"),
]


@pytest.mark.parametrize("case", BROKEN, ids=[c[0] for c in BROKEN])
def test_each_check_fails_on_its_broken_variant(fixed, case):
    _, check, rel, old, new, at, words = case
    edit(fixed, rel, old, new)
    if at == "UNSUPPORTED_COMPLEX_OPS = {":
        edit(fixed, COMMON_MPS, '            "sgn",\n', '            "sgn",\n            "hypot",\n')
    code, doc = verify_json(fixed, "hypot")
    assert code == 1
    result = checks(doc)[check]
    assert result["status"] == "failed", result
    finding = result["findings"][0]
    assert words in finding["message"]
    assert finding["hint"]
    if at is not None:
        target = COMMON_MPS if at.startswith("UNSUPPORTED_COMPLEX_OPS") else rel
        expected = line_of(fixed, target, at)
        if at.startswith("UNSUPPORTED_COMPLEX_OPS"):
            assert finding["path"] == COMMON_MPS and finding["line"] > expected
        else:
            assert (finding["path"], finding["line"]) == (rel, expected)
    # the other checks are not confused by this break (balance and registration may follow)
    failed = {name for name, c in checks(doc).items() if c["status"] == "failed"}
    assert check in failed and len(failed) <= 2, failed


def test_leftover_xfail_entry_is_reported_where_it_is(tmp_path):
    root = copy_checkout(tmp_path)
    original = read(root, COMMON_MPS)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    write(root, COMMON_MPS, original)  # as if the test-list step had been skipped
    code, doc = verify_json(root, "hypot")
    assert code == 1
    finding = checks(doc)["test-lists"]["findings"][0]
    assert finding["path"] == COMMON_MPS
    assert finding["line"] == line_of(root, COMMON_MPS, '"hypot": [torch.bfloat16, torch.float16]')
    assert "MACOS_BEFORE_14_4_XFAILLIST" in finding["message"]


def test_legacy_definition_and_reference_are_found_in_any_operations_file(fixed):
    legacy = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
    write(fixed, legacy, "namespace at::native {\n// hypot_out_mps in a comment does not count\n"
          "TORCH_IMPL_FUNC(hypot_out_mps)(const Tensor& self, const Tensor& other, const Tensor& out) {\n"
          "  mps::binaryOp(self, other, out, \"hypot_out_mps\");\n}\n} // namespace at::native\n")
    code, doc = verify_json(fixed, "hypot")
    assert code == 1
    findings = checks(doc)["legacy"]["findings"]
    assert [(f["path"], f["line"]) for f in findings] == [(legacy, 3)]
    assert "hypot_out_mps" in findings[0]["message"] and "migrate hypot" in findings[0]["hint"]


def test_unbalanced_functor_is_reported_not_crashed_on(fixed):
    edit(fixed, BINARY_METAL, "struct hypot_functor {\n", "struct hypot_functor {\n  {\n")
    code, doc = verify_json(fixed, "hypot")
    assert code == 1
    assert checks(doc)["balance"]["status"] == "failed"
    assert checks(doc)["balance"]["findings"][0]["path"] == BINARY_METAL


def test_untouched_fixture_all_native_reports_its_real_gaps(fixture_checkout):
    """The miniature checkout's native ops: most are complete; the findings are real gaps of the
    fixture (abs has no bool kernel, logaddexp is tested with complex and absent from UNSUPPORTED_COMPLEX_OPS without a complex kernel,
    special_entr's yaml names MPS with no kernel registered, a hardswish grad xfail the kernel fixes,
    and two MPSGraph definitions left behind after their ops went native: logaddexp2_out_mps in
    BinaryOps.mm and hardswish_backward_mps in Activation.mm)."""
    code, doc = verify_json(fixture_checkout, "--all-native")
    assert code == 1
    assert "remainder" not in doc["ops"]  # still has `MPS: remainder_out_mps`: a migrate candidate
    assert {"abs", "logaddexp", "hardsigmoid"} <= set(doc["ops"])
    # log_sigmoid_backward is in 2.15's per-device shape now (`MPS: log_sigmoid_backward_mps_out`, an MPSGraph
    # function): a migrate candidate (tests/test_per_device.py), not a native op
    assert "log_sigmoid_backward" not in doc["ops"]
    failed = {(c["op"], c["check"]) for c in doc["stages"][0]["checks"] if c["status"] == "failed"}
    assert failed == {("abs", "dtype-coverage"), ("logaddexp", "dtype-coverage"),
                      ("special_entr", "stub-registration"), ("hardswish_backward", "test-lists"),
                      ("logaddexp2", "legacy"), ("hardswish_backward", "legacy")}
    assert all(f["path"] and f["line"] >= 1 and f["hint"] for f in doc["findings"])


def test_changed_selects_the_ops_the_diff_touches(tmp_path):
    root = copy_checkout(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(git + ["init", "-q"], cwd=root, check=True)
    subprocess.run(git + ["add", "-A"], cwd=root, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=root, check=True)
    code, doc = verify_json(root, "--changed")
    assert code == 0 and doc["ops"] == []
    assert all(s["status"] == "skipped" and s["reason"] == "no ops to verify" for s in doc["stages"])
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    _, doc = verify_json(root, "--changed")
    assert doc["ops"] == ["hypot"]
    _, doc = verify_json(root, "--changed", "--base", "HEAD")
    assert doc["ops"] == ["hypot"]


def test_changed_outside_git_is_bad_usage(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "verify", "--changed", "--static-only"])
    assert result.exit_code == 2
    assert "git" in result.stderr


@pytest.mark.parametrize("argv", [[], ["hypot", "--all-native"], ["--changed", "--all-native"],
                                  ["hypot", "--static-only", "--require-build"]])
def test_bad_usage_exits_2(fixture_checkout, argv):
    result = run_cli(["-C", str(fixture_checkout), "verify", *argv])
    assert result.exit_code == 2
    assert result.stderr.startswith("mpsgen: error: ")


def test_unknown_op_exits_2_with_suggestions(fixture_checkout):
    result = run_cli(["-C", str(fixture_checkout), "verify", "hypotx"])
    assert result.exit_code == 2
    assert "did you mean: hypot" in result.stderr


def test_human_report_lists_every_check_and_the_findings(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "verify", "hypot", "--static-only"])
    assert result.exit_code == 1
    out = result.stdout
    for check in ("yaml-dispatch", "stub-registration", "kernel-name", "balance"):
        assert check in out
    assert f"{YAML}:{line_of(root, YAML, 'CPU, CUDA: hypot_out')}" in out.replace("\n", "")
    assert "build skipped (--static-only)" in out.replace("\n", " ")


def test_readme_documents_a_parseable_macos_actions_job():
    from ruamel.yaml import YAML

    section = (Path(__file__).resolve().parent.parent / "docs" / "verify.md").read_text(encoding="utf-8")
    block = section[section.index("```yaml\n") + len("```yaml\n") :]
    job = YAML(typ="safe").load(block[: block.index("```")])["jobs"]["mps-verify"]
    assert job["runs-on"].startswith("macos")
    runs = [step.get("run", "") for step in job["steps"]]
    assert any("mpsgen verify" in run and "--junit-xml" in run for run in runs)
