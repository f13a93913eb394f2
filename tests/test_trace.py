"""`mpsgen trace`: small scripts of our own, traced in-process against the miniature checkout, with
their exact records; saved recordings; the script's failures; no torch."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from support import FIXTURE_CHECKOUT, copy_checkout, run_cli, snapshot

from mpsgen.commands.trace.analysis import entry_of

HEAD = "import sys\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"

MLP = HEAD + textwrap.dedent("""
    torch.manual_seed(0)


    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return F.softplus(self.fc2(F.mish(self.fc1(x))))


    model = MLP()
    for batch in (2, 3, 5):
        model(torch.randn(batch, 8)).sum().backward()
    print("trained")
""")


def _script(tmp_path, body: str, name: str = "script.py"):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def _trace(tmp_path, body: str, *args: str, options=(), name="script.py"):
    pytest.importorskip("torch")
    path = _script(tmp_path, body, name)
    return run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", *options, str(path), *args]), path


def _json(tmp_path, body: str, *args: str, name="script.py", expect_exit=0):
    result, path = _trace(tmp_path, body, *args, options=("--json",), name=name)
    assert result.exit_code == expect_exit, result.output
    document = json.loads(result.stdout)
    assert document["script"]["path"] == str(path)
    return document, result


def _by_overload(document) -> dict[str, dict]:
    return {row["overload"]: row for row in document["ops"]}


def test_mish_on_three_shapes_is_one_mpsgraph_op_with_three_graphs(tmp_path):
    document, _ = _json(tmp_path, HEAD + "for n in (1, 2, 3):\n    F.mish(torch.ones(n, 4))\n")
    assert document["ops"] == [
        {"op": "mish", "overload": "aten::mish.default", "backing": "mpsgraph", "calls": 3, "distinct_shapes": 3,
         "dtypes": ["float32"], "candidate": "ready", "reason": "supported stub signature, catalog body (float)"},
        # torch.ones has only a CompositeExplicitAutograd kernel: followed to what it calls
        {"op": "empty", "overload": "aten::empty.memory_format", "backing": "absent", "calls": 3, "distinct_shapes": 1,
         "dtypes": [], "candidate": None, "reason": None},
        {"op": "fill", "overload": "aten::fill_.Scalar", "backing": "absent", "calls": 3, "distinct_shapes": 3,
         "dtypes": ["float32"], "candidate": None, "reason": None},
        {"op": "ones", "overload": "aten::ones.default", "backing": "absent", "calls": 3, "distinct_shapes": 1,
         "dtypes": [], "candidate": None, "reason": None},
    ]
    totals = document["totals"]
    assert totals["mpsgraph"] == {"ops": 1, "calls": 3, "distinct_shapes": 3}
    assert totals["migrate_now"] == {"ops": ["mish"], "distinct_shapes": 3, "command": "mpsgen migrate mish"}
    assert totals["summary"] == ("mpsgen can migrate 1 of the 1 MPSGraph ops now (3 of 3 cached graphs): "
                                 "mpsgen migrate mish")


def test_same_shape_again_is_no_new_graph_but_a_new_dtype_is(tmp_path):
    body = HEAD + "x = torch.ones(2, 4)\nF.mish(x)\nF.mish(x)\nF.mish(x.double())\n"
    document, _ = _json(tmp_path, body)
    mish = _by_overload(document)["aten::mish.default"]
    assert (mish["calls"], mish["distinct_shapes"], mish["dtypes"]) == (3, 2, ["float32", "float64"])


def test_mlp_with_mish_and_softplus_over_three_batch_shapes(tmp_path):
    document, result = _json(tmp_path, MLP)
    rows = _by_overload(document)
    graph = [(r["op"], r["overload"], r["calls"], r["distinct_shapes"], r["candidate"])
             for r in document["ops"] if r["backing"] == "mpsgraph"]
    assert graph == [
        ("mish", "aten::mish.default", 3, 3, "ready"),
        ("mish_backward", "aten::mish_backward.default", 3, 3, "ready"),
        ("softplus", "aten::softplus.default", 3, 3, "ready"),
        ("softplus_backward", "aten::softplus_backward.default", 3, 3, "ready"),
    ]
    assert rows["aten::softplus.default"]["reason"] == "params stub (beta, threshold in SoftplusParams), catalog body (float)"
    # F.linear is CompositeImplicitAutograd: the mode sees what it decomposes into
    assert "aten::linear.default" not in rows
    assert (rows["aten::addmm.default"]["calls"], rows["aten::addmm.default"]["distinct_shapes"]) == (6, 6)
    assert {r["backing"] for r in document["ops"] if r["backing"] != "mpsgraph"} == {"absent"}
    assert document["totals"]["mpsgraph"] == {"ops": 4, "calls": 12, "distinct_shapes": 12}
    assert document["totals"]["migrate_now"]["command"] == "mpsgen migrate mish mish_backward softplus softplus_backward"
    assert document["totals"]["calls"] == sum(r["calls"] for r in document["ops"])
    assert result.stderr.splitlines()[-1] == "trained"  # the script's print went to stderr


def test_in_place_op_is_its_own_overload_of_the_same_op(tmp_path):
    document, _ = _json(tmp_path, HEAD + "x = torch.ones(2, 4)\nF.mish(x, inplace=True)\nF.mish(x)\n")
    rows = _by_overload(document)
    assert (rows["aten::mish_.default"]["op"], rows["aten::mish_.default"]["backing"]) == ("mish", "mpsgraph")
    assert rows["aten::mish_.default"]["candidate"] == "ready"
    assert document["totals"]["mpsgraph"] == {"ops": 1, "calls": 2, "distinct_shapes": 2}


def test_out_call_maps_to_the_out_entry_and_its_out_tensor_is_not_an_input(tmp_path):
    body = HEAD + textwrap.dedent("""
        a, b = torch.ones(2, 4), torch.ones(2, 4)
        out = torch.empty(0)
        torch.atan2(a, b, out=out)
        torch.atan2(a, b, out=out)
    """)
    document, _ = _json(tmp_path, body)
    row = _by_overload(document)["aten::atan2.out"]
    assert row == {"op": "atan2", "overload": "aten::atan2.out", "backing": "mpsgraph", "calls": 2,
                   "distinct_shapes": 1, "dtypes": ["float32"], "candidate": "ready",
                   "reason": "supported stub signature, catalog body (float, int2float)"}


def test_op_under_no_grad_is_recorded_without_its_backward(tmp_path):
    body = HEAD + textwrap.dedent("""
        x = torch.ones(3, 4, requires_grad=True)
        with torch.no_grad():
            y = F.softplus(x)
        print(y.requires_grad)
    """)
    document, result = _json(tmp_path, body)
    assert [r["overload"] for r in document["ops"]] == ["aten::softplus.default", "aten::empty.memory_format",
                                                        "aten::fill_.Scalar", "aten::ones.default"]
    assert _by_overload(document)["aten::softplus.default"]["calls"] == 1
    assert result.stderr.splitlines()[-1] == "False"


def test_overload_whose_entry_is_composite_takes_that_backing_and_no_tier(tmp_path):
    document, _ = _json(tmp_path, HEAD + "torch.fmod(torch.ones(2), torch.ones(2))\n")
    rows = _by_overload(document)
    assert (rows["aten::fmod.Tensor"]["backing"], rows["aten::fmod.Tensor"]["candidate"]) == ("mpsgraph", "ready")
    assert rows["aten::fmod.Tensor"]["calls"] == 1


def test_composite_kernel_is_followed_to_the_mpsgraph_op_it_calls(tmp_path):
    # fmod.Scalar's kernel is CompositeExplicitAutograd: it calls fmod.Tensor with the scalar wrapped,
    # which the mode never sees; the recorder learns that on meta tensors and counts it per call
    body = HEAD + textwrap.dedent("""
        x = torch.arange(6.0).reshape(2, 3)
        for _ in range(4):
            y = torch.fmod(x, 4.0)
        print(y.tolist())
    """)
    document, result = _json(tmp_path, body)
    rows = _by_overload(document)
    assert (rows["aten::fmod.Scalar"]["backing"], rows["aten::fmod.Scalar"]["candidate"]) == ("composite", None)
    assert rows["aten::fmod.Scalar"]["calls"] == 4
    assert rows["aten::fmod.Tensor"] == {"op": "fmod", "overload": "aten::fmod.Tensor", "backing": "mpsgraph", "calls": 4,
                                         "distinct_shapes": 1, "dtypes": ["float32"], "candidate": "ready",
                                         "reason": "supported stub signature, catalog body (float, integer)"}
    assert result.stderr.splitlines()[-1] == "[[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]]"  # the script's own results unchanged


def test_script_that_raises_keeps_the_trace_before_it_and_exits_1(tmp_path):
    body = HEAD + "F.mish(torch.ones(2))\nraise ValueError('bad   batch')\nF.softplus(torch.ones(2))\n"
    document, result = _json(tmp_path, body, name="raises.py", expect_exit=1)
    assert document["script"]["exit_status"] == 1
    assert document["script"]["exception"] == "ValueError: bad batch (raises.py:6)"
    assert [r["overload"] for r in document["ops"]] == ["aten::mish.default", "aten::empty.memory_format",
                                                        "aten::fill_.Scalar", "aten::ones.default"]
    err = result.stderr.splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert "runpy" not in result.stderr and "recorder.py" not in result.stderr  # the script's frames only
    assert err[-2] == "ValueError: bad   batch"
    assert err[-1] == (f"mpsgen: warning: {tmp_path / 'raises.py'} stopped with ValueError: bad batch (raises.py:6); "
                       "the trace covers what ran before")


@pytest.mark.heavy
def test_exit_status_and_argv_of_the_script(tmp_path):
    body = HEAD + "print(sys.argv)\nF.mish(torch.ones(1))\nsys.exit(int(sys.argv[1]))\n"
    document, result = _json(tmp_path, body, "3", "--flag", expect_exit=1)
    path = str(tmp_path / "script.py")
    assert document["script"] == {"path": path, "args": ["3", "--flag"], "exit_status": 3, "exception": None,
                                  "torch": document["script"]["torch"], "devices": ["cpu"]}
    assert result.stderr.splitlines()[0] == repr([path, "3", "--flag"])
    ok, _ = _json(tmp_path, body, "0")
    assert ok["script"]["exit_status"] == 0


def test_plain_table_is_exact(tmp_path):
    result, path = _trace(tmp_path, HEAD + "for n in (1, 2, 3):\n    F.mish(torch.ones(n, 4))\nF.hardswish(torch.ones(2))\n",
                          options=("--format", "plain"))
    assert result.exit_code == 0
    import torch

    assert result.stdout.splitlines() == [
        f"ATen ops called by {path} (torch {torch.__version__}, tensors on cpu)",
        "op         overload             backing   calls  shapes  graphs  dtypes   tier   reason",
        "mish       mish.default         mpsgraph      3       3       3  float32  ready  supported stub signature, catalog body (float)",
        "hardswish  hardswish.default    mpsgraph      1       1       1  float32  ready  supported stub signature, catalog body (float)",
        "empty      empty.memory_format  absent        4       1       -  -        -      -",
        "fill       fill_.Scalar         absent        4       4       -  float32  -      -",
        "ones       ones.default         absent        4       1       -  -        -      -",
        "16 calls of 5 overloads (5 ops); MPSGraph: 4 calls of 2 ops, 4 distinct input signatures (one cached graph each)",
        "mpsgen can migrate 2 of the 2 MPSGraph ops now (4 of 4 cached graphs): mpsgen migrate mish hardswish",
    ]


def test_markdown_names_the_command_in_code(tmp_path):
    body = HEAD + "F.mish(torch.ones(2))\ntorch.special.logit(torch.ones(2, requires_grad=True)).sum().backward()\n"
    result, _ = _trace(tmp_path, body, options=("--markdown",))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("### ATen ops called by ")
    assert lines[2] == "| op | overload | backing | calls | shapes | graphs | dtypes | tier | reason |"
    assert ("| logit_backward | logit_backward.default | mpsgraph | 1 | 1 | 1 | float32 | expr | supported stub signature, "
            "no catalog body; c10: logit_backward's stub passes a scalar, which no c10::metal function takes; cpu: no "
            "aten/src/ATen/native/cpu/*.cpp registers logit_backward_stub; graph: logit_backward_out_mps's graph reads "
            "eps: what logit_backward_stub receives for it is read from the shared .cpp function calling the stub, which "
            "this checkout lacks: pass --expr |") in lines
    assert lines[-1] == ("mpsgen can migrate 2 of the 3 MPSGraph ops now (2 of 3 cached graphs): "
                         "`mpsgen migrate logit mish`; 1 more with --expr (logit_backward)")


@pytest.mark.heavy
def test_save_then_ops_file_gives_the_same_report(tmp_path):
    saved = tmp_path / "ops.json"
    first, _ = _json(tmp_path, MLP)
    result, _ = _trace(tmp_path, MLP, options=("--json", "--save", str(saved)))
    assert json.loads(result.stdout) == first
    recording = json.loads(saved.read_text(encoding="utf-8"))
    assert recording["format"] == "mpsgen-trace/1"
    assert {"overload": "aten::mish.default", "inputs": [[[2, 16], "float32"]], "count": 1, "devices": ["cpu"]} in recording["calls"]
    again = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", "--json", "--ops-file", str(saved)])
    assert again.exit_code == 0
    assert json.loads(again.stdout) == first


def test_ops_file_needs_no_torch_and_reads_against_another_checkout(tmp_path, monkeypatch):
    saved = tmp_path / "ops.json"
    saved.write_text(json.dumps({
        "format": "mpsgen-trace/1", "torch": "2.13.0", "script": {"path": "train.py", "args": [], "exit_status": 0, "exception": None},
        "calls": [
            {"overload": "aten::sign.default", "inputs": [[[4], "float16"]], "count": 5, "devices": ["mps"]},
            {"overload": "aten::sign.default", "inputs": [[[8], "float16"]], "count": 1, "devices": ["mps"]},
            {"overload": "aten::relu_.default", "inputs": [[[4], "float32"]], "count": 2, "devices": ["mps"]},
            {"overload": "prims::add.default", "inputs": [], "count": 1, "devices": []},
        ]}), encoding="utf-8")
    monkeypatch.setitem(sys.modules, "torch", None)
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", "--json", "--ops-file", str(saved)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [(r["op"], r["overload"], r["backing"], r["calls"], r["distinct_shapes"], r["dtypes"], r["candidate"])
            for r in document["ops"]] == [
        ("sign", "aten::sign.default", "mpsgraph", 6, 2, ["float16"], "ready"),
        # relu: its shared function calls at::clamp_min, which MPS serves
        ("relu", "aten::relu_.default", "mpsgraph", 2, 1, ["float32"], "ready"),
        ("prims::add", "prims::add.default", "absent", 1, 1, [], None),
    ]
    assert document["script"]["devices"] == ["mps"]
    assert document["totals"]["summary"] == ("mpsgen can migrate 2 of the 2 MPSGraph ops now (3 of 3 cached graphs): "
                                             "mpsgen migrate sign relu")


@pytest.mark.parametrize("content, message", [
    ("{", "ops.json:1: not JSON"),
    ('{"format": "other"}', "ops.json: not an mpsgen trace recording (format is 'other', expected 'mpsgen-trace/1')"),
    ('{"format": "mpsgen-trace/1", "torch": "x", "script": {"path": "a", "args": [], "exit_status": 0, "exception": null}, '
     '"calls": [{"overload": "mish", "inputs": [], "count": 1, "devices": []}]}',
     "ops.json: not an mpsgen trace recording (calls[0].overload is 'mish', expected like 'aten::mish.default')"),
])
def test_bad_ops_file_is_one_line_exit_2(tmp_path, content, message):
    saved = tmp_path / "ops.json"
    saved.write_text(content, encoding="utf-8")
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", "--ops-file", str(saved)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"mpsgen: error: {tmp_path / message}")


def test_without_torch_says_how_to_get_it(tmp_path, monkeypatch):
    path = _script(tmp_path, "print('never runs')\n")
    monkeypatch.setitem(sys.modules, "torch", None)
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == ("mpsgen: error: mpsgen trace needs torch (import of torch halted; None in sys.modules) "
                             "(install it with: pip install 'mpsgen[trace]')\n")


@pytest.mark.parametrize("args, message", [
    ([], "mpsgen: error: name a SCRIPT to run, or pass --ops-file FILE (e.g. `mpsgen trace train.py`)"),
    (["--ops-file", "x.json", "s.py"], "mpsgen: error: name a SCRIPT to run or pass --ops-file, not both (e.g. `mpsgen trace train.py`)"),
    (["--json", "--markdown", "s.py"], "mpsgen: error: --json and --markdown are two output formats (pick one)"),
])
def test_bad_usage_is_one_line_exit_2(args, message):
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", *args])
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message + "\n")


def test_missing_script_is_one_line_exit_2(tmp_path):
    pytest.importorskip("torch")
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", str(tmp_path / "nope.py")])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"mpsgen: error: {tmp_path / 'nope.py'}: no such file (name the Python script to trace)\n"


def test_options_after_the_script_are_the_scripts(tmp_path):
    document, _ = _json(tmp_path, HEAD + "print(sys.argv[1:])\n", "--json", "-C", "x")
    assert document["script"]["args"] == ["--json", "-C", "x"]


@pytest.mark.heavy
def test_trace_leaves_the_checkout_byte_identical(tmp_path):
    pytest.importorskip("torch")
    root = copy_checkout(tmp_path)
    before = snapshot(root)
    path = _script(tmp_path, HEAD + "F.mish(torch.ones(2))\n")
    result = run_cli(["-C", str(root), "trace", str(path)])
    assert result.exit_code == 0
    assert snapshot(root) == before


@pytest.mark.parametrize("overload, expected", [
    ("aten::mish.default", ("mish", "mish")),
    ("aten::mish_.default", ("mish_", "mish")),
    ("aten::add_.Tensor", ("add_.Tensor", "add")),
    ("aten::mish.out", ("mish.out", "mish")),
    ("aten::__and__.Tensor", ("__and__.Tensor", "__and__")),
    ("prims::add.default", None),
])
def test_overload_names_map_to_yaml_entries_and_ops(overload, expected):
    assert entry_of(overload) == expected


def test_ctrl_c_in_the_script_is_reported_with_the_trace_so_far(tmp_path):
    body = HEAD + "F.mish(torch.ones(2))\nraise KeyboardInterrupt\n"
    document, result = _json(tmp_path, body, expect_exit=1)
    assert (document["script"]["exit_status"], document["script"]["exception"]) == (130, "KeyboardInterrupt (script.py:6)")
    assert [r["overload"] for r in document["ops"]][:1] == ["aten::mish.default"]


def test_rich_table_under_no_color_has_rows_and_no_ansi(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    result, _ = _trace(tmp_path, HEAD + "F.mish(torch.ones(2))\n", options=("--format", "rich"))
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout and "┃" in result.stdout
    assert "mish.default" in result.stdout and "mpsgraph" in result.stdout
    assert "mpsgen can migrate 1 of the 1 MPSGraph ops now" in " ".join(result.stdout.split())


def test_json_with_an_explicit_format_is_bad_usage():
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "trace", "--json", "--format", "plain", "s.py"])
    assert (result.exit_code, result.stderr) == (2, "mpsgen: error: --json and --format plain are two output formats (pick one)\n")


def test_help_ends_with_examples():
    result = run_cli(["trace", "--help"])
    assert result.stdout.rstrip("\n").splitlines()[-4:] == [
        "  Examples:", "    mpsgen trace --save ops.json train.py --epochs 1",
        "    mpsgen -C ~/pytorch trace --ops-file ops.json", "    mpsgen trace --markdown bench.py > trace.md"]


@pytest.mark.heavy
def test_totals_line_says_one_op_and_no_graph_when_none_ran(tmp_path):
    result, _ = _trace(tmp_path, HEAD + "F.mish(torch.ones(2))\n", options=("--format", "plain"))
    assert result.stdout.splitlines()[-2] == ("4 calls of 4 overloads (4 ops); MPSGraph: 1 call of 1 op, "
                                              "1 distinct input signature (one cached graph each)")
    result, _ = _trace(tmp_path, HEAD + "torch.ones(2)\n", options=("--format", "plain"))
    assert result.stdout.splitlines()[-1] == "No MPSGraph-backed op ran: nothing here for mpsgen migrate."


def test_following_composites_leaves_random_state_and_results_as_without_trace(tmp_path):
    import torch

    body = HEAD + "torch.manual_seed(7)\nprint(torch.randn(3).tolist(), torch.ones_like(torch.rand(2)).tolist())\n"
    document, result = _json(tmp_path, body)
    torch.manual_seed(7)
    expected = [torch.randn(3).tolist(), torch.ones_like(torch.rand(2)).tolist()]
    assert result.stderr.splitlines()[-1] == f"{expected[0]} {expected[1]}"
    rows = _by_overload(document)
    assert rows["aten::normal_.default"]["calls"] == 1  # randn's composite kernel, followed on meta tensors
    assert rows["aten::fill_.Scalar"]["calls"] == 1  # ones_like's
