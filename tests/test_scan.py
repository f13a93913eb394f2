"""`mpsgen scan`: exact JSON and Markdown on the miniature checkout, one behaviour per test on its
records, and the fast common_mps.py reader against `testlists.find_xfail_dicts`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import FIXTURE_CHECKOUT, assert_golden, copy_checkout, run_cli

from mpsgen.read.checkout import COMMON_MPS, OPERATIONS_DIR, Checkout
from mpsgen.render.scan_json import report_to_json
from mpsgen.render.scan_markdown import render_markdown
from mpsgen.commands.scan import read_xfail_keys, scan_checkout
from mpsgen.read.testlists import find_xfail_dicts


@pytest.fixture(scope="module")
def report():
    return scan_checkout(Checkout(FIXTURE_CHECKOUT))


@pytest.fixture(scope="module")
def records(report):
    return {r.op: r for r in report.ops}


def _json_text(root: Path, args=()) -> str:
    result = run_cli(["-C", str(root), "scan", "--json", *args])
    assert result.exit_code == 0, result.output
    return result.stdout.replace(json.dumps(str(root.resolve())), json.dumps("fixtures/pytorch"))


def test_json_on_fixture_checkout_matches_golden():
    text = _json_text(FIXTURE_CHECKOUT)
    document = json.loads(text)
    assert document["totals"]["ops"] == len(document["ops"])
    assert_golden(text, "scan/fixture.json")


def test_markdown_candidates_on_fixture_checkout_matches_golden():
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan", "--candidates", "--markdown"])
    assert result.exit_code == 0
    assert result.stdout.startswith("### MPS backing of")
    assert_golden(result.stdout, "scan/fixture_candidates.md")


def test_summary_table_names_every_backing_and_the_host_files():
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan"])
    assert result.exit_code == 0
    for word in ("native", "mpsgraph", "mps-other", "composite", "none", "BinaryOps.mm", "Activation.mm"):
        assert word in result.stdout
    assert "candidates: 28 ready, 4 need --expr, 7 need a hand-written port" in " ".join(result.stdout.split())


def test_mpsgraph_kernel_through_a_shared_helper(records):
    atan2 = records["atan2"]
    assert atan2.backing == "mpsgraph"
    (kernel,) = atan2.kernels
    assert (kernel.kernel, kernel.definition, str(kernel.implementation)) == (
        "atan2_out_mps", "impl-func", "aten/src/ATen/native/mps/operations/BinaryOps.mm:151")
    assert kernel.graph_sites == 0  # the graph is built in binaryOpTensor
    assert kernel.graph_helpers == ("BinaryOpFn", "binaryOpTensor")  # the block macro and the helper
    assert atan2.candidate.tier == "ready"


def test_generator_macro_instance_is_the_implementation(records):
    (kernel,) = records["asinh"].kernels
    assert kernel.definition == "macro-instance CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC"
    assert kernel.backing == "mpsgraph"
    assert kernel.lines == 1


def test_kernel_composing_aten_ops_is_other_mps(records):
    assert records["sgn"].backing == "mps-other"
    assert records["sgn"].kernels[0].graph_helpers == ()


def test_own_graph_sites_are_counted(records):
    assert records["xlogy"].graph_sites == 1
    assert records["hardswish"].graph_sites == 1  # hardswish_out_mps; hardswish_mps and hardswish_mps_ call it
    assert [k.kernel for k in records["hardswish"].kernels] == ["hardswish_out_mps", "hardswish_mps", "hardswish_mps_"]


def test_native_op_has_its_metal_dtype_groups(records):
    abs_ = records["abs"]
    assert abs_.backing == "native"
    assert abs_.stub == "abs_stub"
    assert abs_.metal_dtypes == ("float", "integer", "complex")  # float2/half2 registrations are complex
    assert abs_.candidate is None


def test_new_op_candidate_is_none_with_stub_and_xfails(records):
    heaviside = records["heaviside"]
    assert heaviside.backing == "none"
    assert heaviside.stub_signature == "void(*)(TensorIteratorBase&)"
    assert heaviside.xfail_keys == ("heaviside",)
    assert heaviside.candidate is None  # a new-op job, not a migration


def test_xfail_keys_map_through_opinfo_names(records):
    assert records["mish"].xfail_keys == ("nn.functional.mish",)
    assert records["special_ndtri"].xfail_keys == ("special.ndtri",)


def test_composite_and_delegating_entries(records):
    assert records["_cast_Byte"].backing == "composite"
    sgn = dict(records["sgn"].overloads)
    assert sgn["sgn"] == sgn["sgn.out"] == "mps-other"  # functional follows its structured_delegate


def test_candidates_are_ordered_by_tier_then_size(report):
    tiers = [r.candidate.tier for r in report.candidates()]
    assert tiers == sorted(tiers, key=("ready", "expr", "port").index)
    ops = [r.op for r in report.candidates()]
    assert ops[:3] == ["acosh", "asinh", "atanh"]
    # the ternary shapes wait for launchers; mean's and polygamma's kernels are not defined: last (the
    # per-device log_sigmoid_backward needs an --expr body now; gelu and gelu_backward take their CPU kernels)
    assert ops[-7:] == ["addcdiv", "addcmul", "mse_loss_backward", "smooth_l1_loss_backward",
                        "huber_loss_backward", "mean", "polygamma"]


@pytest.mark.parametrize(
    "op, tier, words",
    [
        ("remainder", "expr", "no catalog body"),
        ("logit_backward", "expr", "what logit_backward_stub receives for it is read from the shared .cpp function"),
        ("relu", "ready", "no kernel of its own: relu (aten/src/ATen/native/Activation.cpp:50), relu_"),
        # its shared function calls threshold_stub: migrate registers that stub's kernel with it
        ("threshold_backward", "ready", "threshold_stub, threshold's stub (called at aten/src/ATen/native/Activation.cpp:"),
        ("gelu", "ready", "params stub, body from gelu's CPU kernel, both branches on approximate (GeluType::Tanh or not) "
                          "(aten/src/ATen/native/cpu/Activation.cpp:128)"),
        ("log_sigmoid_backward", "expr", "supported stub signature, no catalog body"),
        # the graph's body computes (a - b) in float; CPU rounds it to half first: nearer the float64
        # value than CPU's, which try's verdict accepts as test_output_match does
        ("mse_loss", "ready", "body from mse_loss's MPSGraph graph"),
        ("signbit", "ready", "body from signbit's MPSGraph graph (signbit_out_mps)"),
        ("softplus", "ready", "params stub (beta, threshold in SoftplusParams), catalog body (float"),
        ("softplus_backward", "ready", "params stub (beta, threshold in SoftplusBackwardParams)"),
        ("threshold", "ready", "params stub (threshold, value in ThresholdParams)"),
        ("hardtanh_backward", "ready", "params stub (min_val, max_val in HardtanhBackwardParams)"),
        ("nan_to_num", "ready", "params stub (nan, posinf, neginf in NanToNumParams)"),
        ("polygamma", "port", "stub polygamma_stub has signature void(*)(TensorIteratorBase&, const int64_t)"),
        ("addcmul", "port", "exec_ternary_kernel in this checkout takes no scalar"),
    ],
)
def test_candidate_reasons(records, op, tier, words):
    assert records[op].candidate.tier == tier
    assert words in records[op].candidate.reason


def test_totals_add_up(report):
    document = report_to_json(report, root="x")
    totals = document["totals"]
    assert sum(v["ops"] for v in totals["by_backing"].values()) == totals["ops"] == len(report.ops)
    assert sum(f["graph_sites"] for f in totals["files"]) == totals["graph_sites"] == 28
    assert sum(totals["candidates"].values()) == len(document["candidates"])


def test_markdown_summary_without_candidates(report):
    text = render_markdown(report)
    assert "Candidates for" not in text
    assert "| Activation.mm | 16 | 20 | 0 |" in text


def test_unscannable_host_file_is_a_note_not_an_error(tmp_path):
    root = copy_checkout(tmp_path)
    path = root / OPERATIONS_DIR / "Broken.mm"
    path.write_text("namespace at::native {\nTensor relu_mps(const Tensor& self) {\n  return self;\n", encoding="utf-8")
    shutil.move(root / OPERATIONS_DIR / "Activation.mm", tmp_path / "Activation.mm")
    document = json.loads(_json_text(root))
    relu = next(r for r in document["ops"] if r["op"] == "relu")
    assert relu["backing"] == "mps-unknown"
    assert any("Broken.mm" in note for note in document["notes"])
    broken = next(f for f in document["totals"]["files"] if f["path"].endswith("Broken.mm"))
    assert broken["error"]


def test_a_host_file_with_an_explicit_specialization_is_delimited(tmp_path):
    """Upstream's Shape.mm specializes a template helper (`template <> std::string f<int64_t>()`)
    above its kernels: the file is read like any other, its kernels found."""
    root = copy_checkout(tmp_path)
    path = root / OPERATIONS_DIR / "Activation.mm"
    text = path.read_text(encoding="utf-8")
    anchor = "namespace at::native {\n"
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, anchor + "template <typename T>\nstd::string type_word();\n\n"
                                 "template <>\nstd::string type_word<int64_t>() {\n  return \"long\";\n}\n\n"),
                    encoding="utf-8")
    document = json.loads(_json_text(root))
    assert document["notes"] == []
    relu = next(r for r in document["ops"] if r["op"] == "relu")
    assert relu["backing"] != "mps-unknown"
    activation = next(f for f in document["totals"]["files"] if f["path"].endswith("/Activation.mm"))
    assert activation["error"] is None


def test_migrated_op_becomes_native(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "atan2"])
    assert result.exit_code == 0, result.output
    document = json.loads(_json_text(root))
    atan2 = next(r for r in document["ops"] if r["op"] == "atan2")
    assert atan2["backing"] == "native"
    assert atan2["candidate"] is None
    assert "float" in atan2["metal_dtypes"]


def test_json_and_markdown_together_is_bad_usage():
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan", "--json", "--markdown"])
    assert result.exit_code == 2
    assert "pick one" in result.stderr


def test_not_a_checkout_is_bad_input(tmp_path):
    result = run_cli(["-C", str(tmp_path), "scan"])
    assert result.exit_code == 2


def _reference_entries(text):
    return [(d.name, d.function, e.key, e.dtypes, e.location) for d in find_xfail_dicts(text, COMMON_MPS) for e in d.entries]


def _fast_entries(text):
    return [(x.dict_name, x.function, x.key, x.dtypes, x.location) for x in read_xfail_keys(text, COMMON_MPS)]


def test_fast_xfail_reader_matches_libcst_reader_on_fixture():
    text = (FIXTURE_CHECKOUT / COMMON_MPS).read_text(encoding="utf-8")
    assert _fast_entries(text) == _reference_entries(text)


@pytest.mark.parametrize(
    "snippet",
    [
        'A = {"x": None, "y": [torch.float32], "z": (torch.int8,)}\n',
        'A = {"x": (torch.float32)}\n',  # a parenthesised name, not a tuple
        'A = {"x": None, "y": [torch.float32, 3]}\n',
        'A = {"x" "y": None}\n',
        'A: dict[str, list | None] = {\n    # comment\n    "x": [],\n    "y": (),\n}\n',
        'def f():\n    if True:\n        A = {"x": None}\n    B = {"y": None,}\n',
        'def f(\n    a,\n) -> None:\n    A = {"x": None}\nB = {"z": [torch.half]}\n',
        'A = B = {"x": None}\nC = {}\n',
    ],
)
def test_fast_xfail_reader_matches_libcst_reader_on_shapes(snippet):
    assert _fast_entries(snippet) == _reference_entries(snippet)


def test_unreadable_kernel_file_is_a_note_not_an_error(tmp_path):
    root = copy_checkout(tmp_path)
    (root / "aten/src/ATen/native/mps/kernels/Broken.metal").write_text("struct broken_functor {\n", encoding="utf-8")
    document = json.loads(_json_text(root))
    assert any("Broken.metal" in note for note in document["notes"])
    assert next(r for r in document["ops"] if r["op"] == "abs")["metal_dtypes"] == ["float", "integer", "complex"]
