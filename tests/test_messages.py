"""The exact text of messages users met wrong (issue 29): each as it now reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support import REPO, copy_checkout, run_cli

BINARY_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"


def _error(root: Path, *args: str) -> str:
    result = run_cli(["-C", str(root), *args])
    assert result.exit_code == 2, result.stdout
    return result.stderr


def test_placeholder_todo_names_the_error_line_and_nothing_names_pcpps_include_root(tmp_path, capfd):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "special_laguerre_polynomial_l"])
    assert result.exit_code == 0
    lines = (root / BINARY_METAL).read_text().splitlines()
    error_line = next(n for n, line in enumerate(lines, 1) if line.startswith("#error"))
    struct = next(n for n, line in enumerate(lines, 1) if line.startswith("struct laguerre_polynomial_l_functor"))
    # the comment above names it too (before each body source's answer): not the line to report
    assert "#error" in lines[struct] and struct + 1 < error_line
    assert (f"todo: {BINARY_METAL}:{error_line}: fill in the body of laguerre_polynomial_l_functor "
            "(the #error stops the build there until you do)") in result.stdout.splitlines()
    verify = run_cli(["-C", str(root), "verify", "special_laguerre_polynomial_l", "--static-only", "--format", "plain"])
    assert verify.exit_code == 1
    assert (f"{BINARY_METAL}:{error_line}: #error placeholder left in laguerre_polynomial_l_functor "
            "(write the functor body and delete the #error line)") in verify.stdout.splitlines()
    printed = capfd.readouterr()  # pcpp printed `/@checkout/...:90 error: ...` straight to the process's stderr
    assert "@checkout" not in printed.err + printed.out + verify.stderr + result.stderr


def test_catalog_reference_names_the_file_it_is_written_in():
    from mpsgen.commands.tryop.reference import catalog_reference

    reference, why = catalog_reference("logaddexp")
    assert why == ""
    assert reference.name == "catalog: ref_logaddexp (mpsgen/commands/tryop/references.py)"
    assert (REPO / "mpsgen/commands/tryop/references.py").is_file()


def test_unknown_overload_lists_the_overloads_once(fixture_checkout):
    assert _error(fixture_checkout, "migrate", "atan2", "--overload", "Tensor_out", "--dry-run") == (
        "mpsgen: error: aten/src/ATen/native/native_functions.yaml:544: no entry of atan2 has overload Tensor_out "
        "(its overloads are: out (atan2_ and atan2 have none))\n")


def test_an_entry_removed_by_a_later_op_is_not_also_reported_kept(fixture_checkout):
    result = run_cli(["-C", str(fixture_checkout), "migrate", "softplus", "softplus_backward", "threshold",
                      "--dry-run", "--format", "plain"])
    assert result.exit_code == 0
    about = [line for line in result.stderr.splitlines() if "SKIPLIST_GRAD['nn.functional.softplus']" in line]
    assert len(about) == 1 and "removed-entry" in about[0]


def test_kept_macro_is_reported_once_at_its_final_lines(fixture_checkout, tmp_path):
    result = run_cli(["-C", str(fixture_checkout), "migrate", "asinh", "acosh", "atanh", "--dry-run"])
    kept = [line for line in result.stderr.splitlines() if "kept macro" in line]
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "asinh", "acosh", "atanh"]).exit_code == 0
    lines = (root / "aten/src/ATen/native/mps/operations/UnaryOps.mm").read_text().splitlines()
    define = next(n for n, t in enumerate(lines, 1) if t.startswith("#define CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC"))
    use = next(n for n, t in enumerate(lines, 1) if t.startswith("CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC("))
    mm = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
    assert kept == [f"note: {mm}:{define}: kept macro CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC: still used at "
                    f"{mm}:{use} and 1 more"]


def test_counts_agree_with_their_nouns(fixture_checkout):
    result = run_cli(["-C", str(fixture_checkout), "migrate", "atan2", "--dry-run", "--format", "plain"])
    assert "remove-include    ATen/ops/atan2_native.h (1 line)" in result.stderr
    assert "(1 lines)" not in result.stderr
    mish = run_cli(["-C", str(fixture_checkout), "migrate", "mish", "--dry-run", "--format", "plain"]).stderr
    assert re.search(r"mish_out_mps \(\d+ lines, 1 graph site\)", mish), mish
    from mpsgen.model import counted

    assert (counted(1, "file"), counted(2, "file"), counted(0, "graph site")) == ("1 file", "2 files", "0 graph sites")


def test_op_names_as_python_spells_them_get_the_aten_name(fixture_checkout):
    yaml = "aten/src/ATen/native/native_functions.yaml"
    assert _error(fixture_checkout, "migrate", "ATAN2", "--dry-run") == (
        f"mpsgen: error: {yaml}:544: no operator named 'ATAN2' in native_functions.yaml "
        "(use atan2: native_functions.yaml names an op by its ATen base name)\n")
    assert _error(fixture_checkout, "migrate", "nn.functional.mish", "--dry-run").endswith(
        "(use mish: native_functions.yaml names an op by its ATen base name)\n")


def test_an_alias_is_named_as_one(fixture_checkout):
    assert _error(fixture_checkout, "migrate", "arctan2", "--dry-run") == (
        "mpsgen: error: aten/src/ATen/native/native_functions.yaml:566: arctan2 is an alias of atan2 (the OpInfo "
        "at torch/testing/_internal/common_methods_invocations.py:107 lists it): its kernels are atan2's "
        "(mpsgen migrate atan2)\n")


def test_dtype_loss_hint_says_when_the_catalog_body_serves_the_lost_dtypes(fixture_checkout):
    assert _error(fixture_checkout, "migrate", "asinh", "--dtypes", "float", "--dry-run").endswith(
        "(the catalog's asinh body serves them too: pass --dtypes float,complex)\n")
    assert _error(fixture_checkout, "migrate", "threshold", "--expr", "a <= threshold ? value : b", "--dry-run").endswith(
        "(an --expr registers float unless told: if the --expr body serves them, pass --dtypes float,integer)\n")
