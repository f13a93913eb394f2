"""Legacy removal: golden diffs over the fixture checkout, plus the properties every plan keeps."""

from __future__ import annotations

import difflib
import os
import textwrap
from pathlib import Path

import pytest

from mpsgen.read.cpp import find_definitions
from mpsgen.errors import MpsgenError
from mpsgen.edit.legacy import LegacyResult, find_dangling_references, plan_legacy_removal
from mpsgen.model import Location

TESTS = Path(__file__).parent
FIXTURE = TESTS.parent / "fixtures" / "pytorch"
OPERATIONS = "aten/src/ATen/native/mps/operations"
LEGACY_FILES = ("UnaryOps.mm", "BinaryOps.mm", "Activation.mm", "PointwiseOps.mm")
GOLDEN = TESTS / "golden" / "legacy"


def load_fixture() -> dict[str, str]:
    files = {}
    for name in LEGACY_FILES:
        with open(FIXTURE / OPERATIONS / name, encoding="utf-8", newline="") as f:
            files[f"{OPERATIONS}/{name}"] = f.read()
    return files


def structured(op: str, *extra: str) -> tuple[str, set[str], set[str]]:
    """A structured op: `MPS: <op>_out_mps` on `.out`, `CPU, CUDA: <op>_out` beside it."""
    return op, {f"{op}_out_mps"}, {f"{op}_out", f"{op}_out_mps", *extra}


# case name -> the ops migrated in one run, in order: (op, legacy kernels, yaml kernel names)
CASES: dict[str, list[tuple[str, set[str], set[str]]]] = {
    "atan2": [structured("atan2")],
    "xlogy": [structured("xlogy")],
    "fmod": [("fmod", {"fmod_mps_out"}, {"fmod_out", "fmod_mps_out"})],
    "fmod_remainder": [
        ("fmod", {"fmod_mps_out"}, {"fmod_out", "fmod_mps_out"}),
        structured("remainder"),
    ],
    "asinh": [structured("asinh")],
    "asinh_acosh_atanh": [structured("asinh"), structured("acosh"), structured("atanh")],
    "frac": [structured("frac")],
    "sign": [structured("sign")],
    "sgn": [structured("sgn", "sgn_sparse_out", "sgn_sparse_csr_out", "sgn_sparse", "sgn_sparse_", "NestedTensor_sgn")],
    "sigmoid_backward": [structured("sigmoid_backward")],
    "tanh_backward": [structured("tanh_backward")],
    "logit_backward": [structured("logit_backward")],
    "mish": [structured("mish")],
    "mish_backward": [("mish_backward", {"mish_backward_mps"}, {"mish_backward", "mish_backward_mps", "math_mish_backward"})],
    "mish_and_backward": [
        structured("mish"),
        ("mish_backward", {"mish_backward_mps"}, {"mish_backward", "mish_backward_mps", "math_mish_backward"}),
    ],
    "hardswish": [
        (
            "hardswish",
            {"hardswish_mps", "hardswish_mps_", "hardswish_out_mps"},
            {"hardswish", "hardswish_", "hardswish_out", "hardswish_mps", "hardswish_mps_", "hardswish_out_mps"},
        )
    ],
    "addcmul": [structured("addcmul")],
    "addcmul_addcdiv": [structured("addcmul"), structured("addcdiv")],
}


def run_case(files: dict[str, str], steps) -> tuple[dict[str, str], list[LegacyResult]]:
    current = dict(files)
    results = []
    for op, kernels, symbols in steps:
        result = plan_legacy_removal(current, kernels, op, symbols)
        current.update(result.texts)
        results.append(result)
    return current, results


def unified_diff(before: dict[str, str], after: dict[str, str]) -> str:
    out = []
    for path in sorted(before):
        if before[path] != after[path]:
            out.extend(
                difflib.unified_diff(
                    before[path].splitlines(keepends=True),
                    after[path].splitlines(keepends=True),
                    f"a/{path}",
                    f"b/{path}",
                )
            )
    return "".join(out)


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/legacy/<name>.diff; MPSGEN_REGEN_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / f"{name}.diff"
    if os.environ.get("MPSGEN_REGEN_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
        return
    assert path.exists(), f"missing golden {path}; run with MPSGEN_REGEN_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8"), f"{name}: diff differs from {path}"


@pytest.fixture(scope="module")
def fixture_files() -> dict[str, str]:
    return load_fixture()


# -- golden diffs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_diff(case, fixture_files):
    after, _ = run_case(fixture_files, CASES[case])
    check_golden(case, unified_diff(fixture_files, after))


# -- properties of every case -------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_only_whole_lines_are_deleted(case, fixture_files):
    """Everything outside the removed spans is byte-identical: the new text is the old one with
    runs of whole lines deleted, nothing inserted or rewritten."""
    after, _ = run_case(fixture_files, CASES[case])
    for path, before in fixture_files.items():
        old, new = before.splitlines(keepends=True), after[path].splitlines(keepends=True)
        ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        assert {tag for tag, *_ in ops} <= {"equal", "delete"}, path
        assert "".join(new) == after[path]


@pytest.mark.parametrize("case", sorted(CASES))
def test_running_again_removes_nothing(case, fixture_files):
    after, _ = run_case(fixture_files, CASES[case])
    for op, _kernels, symbols in CASES[case]:
        # after a migration the yaml has no `MPS:` line left for the op: no legacy kernels
        again = plan_legacy_removal(after, set(), op, symbols)
        assert again.texts == {} and again.removals == ()


@pytest.mark.parametrize("case", sorted(CASES))
def test_result_leaves_no_dangling_names_and_still_scans(case, fixture_files):
    after, results = run_case(fixture_files, CASES[case])
    removed = {r.name for result in results for r in result.removals if r.kind not in ("include", "macro-instance")}
    removed |= {k for _, kernels, _ in CASES[case] for k in kernels}
    assert find_dangling_references(after, removed) == []
    for path, text in after.items():
        find_definitions(text, path)  # still delimitable: braces and #if blocks intact
        assert "\n\n\n" not in text, f"{path}: two blank lines in a row"


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_operator_include_block_stays_valid(case, fixture_files):
    after, _ = run_case(fixture_files, CASES[case])
    for text in after.values():
        lines = [line for line in text.splitlines() if line.startswith("#")]
        start = lines.index("#ifndef AT_PER_OPERATOR_HEADERS")
        assert "#endif" in lines[start:]
        block = lines[start : lines.index("#endif", start) + 1]
        if "#else" in block:
            assert block[block.index("#else") + 1] != "#endif"


# -- reports ------------------------------------------------------------------------------------------


def test_atan2_report(fixture_files):
    (result,) = run_case(fixture_files, CASES["atan2"])[1]
    assert [(r.kind, r.name, r.location.line, r.line_count) for r in result.removals] == [
        ("include", "ATen/ops/atan2_native.h", 10, 1),
        ("impl-func", "atan2_out_mps", 151, 8),
    ]
    assert any("kept helper binaryOpTensor" in str(k) for k in result.kept)
    assert any("kept macro BinaryOpFn" in str(k) for k in result.kept)
    assert result.graph_sites == 0  # its graph lives in the shared binaryOpTensor


def test_xlogy_counts_its_graph_site(fixture_files):
    (result,) = run_case(fixture_files, CASES["xlogy"])[1]
    assert [(r.kind, r.name, r.graph_sites) for r in result.removals] == [
        ("include", "ATen/ops/xlogy_native.h", 0),
        ("impl-func", "xlogy_out_mps", 1),
    ]
    assert result.lines_removed == 42


def test_shared_helper_kept_for_the_other_op_then_removed_with_it(fixture_files):
    _, (fmod, remainder) = run_case(fixture_files, CASES["fmod_remainder"])
    assert [r.name for r in fmod.removals if r.kind == "static-helper"] == []
    assert any("remainder_fmod_template: still used at" in str(k) and "BinaryOps.mm:228" in str(k) for k in fmod.kept)
    assert [r.name for r in remainder.removals if r.kind == "static-helper"] == ["remainder_fmod_template"]
    # the helper called trunc_tensor, which UnaryOps.mm defines in namespace mps and frac still uses
    assert any("kept helper trunc_tensor" in str(k) for k in remainder.kept)


def test_generator_macro_instance_removed_macro_kept(fixture_files):
    _, results = run_case(fixture_files, CASES["asinh_acosh_atanh"])
    assert [r.name for res in results for r in res.removals if r.kind == "macro-instance"] == [
        "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(asinh_out_mps, asinh)",
        "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)",
        "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(atanh_out_mps, atanh)",
    ]
    assert all(
        any("kept macro CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC" in str(k) for k in res.kept) for res in results
    )


def test_hardswish_takes_its_private_macro_along(fixture_files):
    (result,) = run_case(fixture_files, CASES["hardswish"])[1]
    assert sorted((r.kind, r.name) for r in result.removals) == [
        ("function", "hardswish_mps"),
        ("function", "hardswish_mps_"),
        ("function", "hardswish_out_mps"),
        ("include", "ATen/ops/hardswish_native.h"),
        ("macro", "HARDSWISH_CONSTANT"),
    ]
    assert result.graph_sites == 1


def test_sign_keeps_its_include_while_sgn_still_calls_sign_out(fixture_files):
    (result,) = run_case(fixture_files, CASES["sign"])[1]
    assert [r.kind for r in result.removals] == ["impl-func"]
    assert any("kept #include <ATen/ops/sign_native.h>: the file still uses sign_out" in str(k) for k in result.kept)


def test_only_changed_files_are_returned(fixture_files):
    (result,) = run_case(fixture_files, CASES["mish"])[1]
    assert set(result.texts) == {f"{OPERATIONS}/Activation.mm"}


# -- refusals -----------------------------------------------------------------------------------------


def test_unknown_kernel_is_named_with_the_files_searched(fixture_files):
    with pytest.raises(MpsgenError) as info:
        plan_legacy_removal(fixture_files, {"hypot_out_mps"}, "hypot", {"hypot_out"})
    message = str(info.value)
    assert "hypot_out_mps" in message
    assert all(name in message for name in LEGACY_FILES)


def test_removing_again_with_the_same_kernels_is_refused(fixture_files):
    after, _ = run_case(fixture_files, CASES["atan2"])
    with pytest.raises(MpsgenError, match="atan2_out_mps"):
        plan_legacy_removal(after, {"atan2_out_mps"}, "atan2", {"atan2_out"})


def test_removal_that_would_leave_a_caller_is_refused(fixture_files):
    with pytest.raises(MpsgenError) as info:
        plan_legacy_removal(fixture_files, {"hardswish_out_mps"}, "hardswish", {"hardswish_out_mps"})
    assert info.value.location == Location(f"{OPERATIONS}/Activation.mm", 242)


def test_undelimitable_definition_is_refused_with_its_line():
    text = textwrap.dedent(
        """\
        namespace at::native {

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& self, const Tensor& out) {
        #if NEW_PATH
          if (self.is_complex()) {
        #else
          if (self.is_floating_point()) {
        #endif
            run(self, out);
          }
        }

        } // namespace at::native
        """
    )
    with pytest.raises(MpsgenError) as info:
        plan_legacy_removal({"ops/K.mm": text}, {"k_out_mps"}, "k", {"k_out_mps"})
    assert info.value.location == Location("ops/K.mm", 3)


def test_files_not_naming_the_kernel_are_not_scanned():
    broken = "void f() {\n"  # would be refused if scanned
    ok = "namespace at::native {\nTORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {\n}\n}\n"
    result = plan_legacy_removal({"a/Broken.mm": broken, "a/K.mm": ok}, {"k_out_mps"}, "k", set())
    assert result.texts == {"a/K.mm": ""}


# -- small synthetic shapes ---------------------------------------------------------------------------


def test_include_alone_in_the_else_branch_takes_the_else_along():
    text = textwrap.dedent(
        """\
        #ifndef AT_PER_OPERATOR_HEADERS
        #include <ATen/Functions.h>
        #else
        #include <ATen/ops/k_native.h>
        #endif

        namespace at::native {

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {
        }

        } // namespace at::native
        """
    )
    result = plan_legacy_removal({"K.mm": text}, {"k_out_mps"}, "k", {"k_out_mps", "k_out"})
    assert result.texts["K.mm"] == textwrap.dedent(
        """\
        #ifndef AT_PER_OPERATOR_HEADERS
        #include <ATen/Functions.h>
        #endif
        """
    )
    assert [str(k) for k in result.kept] == ["K.mm:1: kept the file: only preprocessor lines are left (delete it by hand)"]
    assert [k.kind for k in result.kept] == ["todo"]


def test_static_helpers_are_file_local_and_prototypes_go_with_their_function():
    a = textwrap.dedent(
        """\
        static void helper();

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {
          helper();
        }

        static void helper() {
          // helper() in a comment is not a use
        }
        """
    )
    b = "static void helper() {}\n\nvoid other() {\n  helper();\n}\n"
    result = plan_legacy_removal({"A.mm": a, "B.mm": b}, {"k_out_mps"}, "k", set())
    assert result.texts == {"A.mm": ""}
    assert [(r.kind, r.name, r.location.line) for r in result.removals] == [
        ("function", "helper", 1),
        ("impl-func", "k_out_mps", 3),
        ("static-helper", "helper", 7),
    ]


def test_helpers_used_by_a_removed_helper_go_transitively():
    text = textwrap.dedent(
        """\
        namespace mps {
        static int inner() { return 1; }

        static int outer() { return inner(); }
        } // namespace mps

        #define USE_OUTER() mps::outer()

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {
          USE_OUTER();
        }

        void keep() {}
        """
    )
    result = plan_legacy_removal({"A.mm": text}, {"k_out_mps"}, "k", set())
    assert result.texts["A.mm"] == "void keep() {}\n"  # the emptied namespace goes too
    assert [r.kind for r in result.removals] == ["static-helper", "static-helper", "macro", "impl-func"]


def test_plain_function_and_overloads_of_a_helper():
    text = textwrap.dedent(
        """\
        namespace mps {
        void run(const Tensor& t) {}
        void run(const Tensor& t, int k) { run(t); }
        } // namespace mps

        Tensor& k_mps(const Tensor& s, Tensor& out) {
          mps::run(s, 1);
          return out;
        }
        """
    )
    result = plan_legacy_removal({"A.mm": text}, {"k_mps"}, "k", set())
    assert result.texts["A.mm"] == ""
    assert [r.kind for r in result.removals] == ["static-helper", "static-helper", "function"]


def test_helper_named_in_an_unscannable_file_is_kept():
    a = "static void helper() {}\n\nTORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {\n  helper();\n}\n"
    broken = "void f() {\n  // helper\n  Tensor t;\n"  # names Tensor (a common identifier), never closes
    broken_too = "void g(const Tensor& s) {\n  helper();\n"  # never closes
    result = plan_legacy_removal({"A.mm": a, "B.mm": broken}, {"k_out_mps"}, "k", set())
    assert [r.kind for r in result.removals] == ["static-helper", "impl-func"]  # B.mm never names helper
    result = plan_legacy_removal({"A.h": a, "B.mm": broken_too}, {"k_out_mps"}, "k", set())
    assert [r.kind for r in result.removals] == ["impl-func"]
    # one note, for the helper: not one per word of the removed body the other file also says
    assert [k.message for k in result.kept] == ["kept helper: B.mm names it and cannot be scanned"]


def test_helper_a_macro_can_form_by_token_pasting_is_kept():
    text = textwrap.dedent(
        """\
        namespace mps {
        static void binaryOpTensor(const Tensor& a) {}
        static void binaryOpScalar(const Scalar& a) {}
        } // namespace mps

        #define CMP_FUNC(func_out, other_type) \\
          Tensor& func_out(const other_type& o) { mps::binaryOp##other_type(o); }

        CMP_FUNC(ge_scalar_out_mps, Scalar)

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& s) {
          mps::binaryOpTensor(s);
          mps::binaryOpScalar(1.0);
        }
        """
    )
    result = plan_legacy_removal({"A.mm": text}, {"k_out_mps"}, "k", set())
    assert [r.kind for r in result.removals] == ["impl-func"]
    assert any("kept helper binaryOpScalar: macro CMP_FUNC at A.mm:6 may paste it" in str(k) for k in result.kept)


def test_instantiation_defining_another_kernel_too_is_refused():
    text = "PAIR(asinh_out_mps, acosh_out_mps)\n"
    with pytest.raises(MpsgenError) as info:
        plan_legacy_removal({"U.mm": text}, {"asinh_out_mps"}, "asinh", set())
    assert info.value.location == Location("U.mm", 1) and "acosh_out_mps" in str(info.value)
    both = plan_legacy_removal({"U.mm": text}, {"asinh_out_mps", "acosh_out_mps"}, "asinh", set())
    assert both.texts == {"U.mm": ""}
