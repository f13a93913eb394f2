"""`mpsgen bench`: the bytes-moved model per layout, the record's schema, the comparison (speedup,
slower rows marked, memory growth) on hand-made records, the MPS code path with its device calls
stubbed (synchronise, allocated memory), and runs on the CPU of an op with a params struct
(softplus), a ternary op (addcmul) and a reduction (prod) with their Scalars and dims from the op
model. No timing is ever asserted: only what ran, how often, and what the record says of it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mpsgen.commands.bench import harness
from mpsgen.commands.bench.compare import compare_records
from mpsgen.commands.bench.layouts import (BROADCAST, CONTIGUOUS, SCALAR, STRIDED, Case, bytes_moved, cases,
                                           operand_shapes, parse_shapes)
from mpsgen.commands.bench.record import SCHEMA, Memory, Record, Row, load_record, record_to_json, write_record
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.errors import MpsgenError
from mpsgen.read.checkout import Checkout
from mpsgen.render.bench_text import compare_lines, compare_markdown, per_shape, run_lines, speedup
from reduction_support import reduction_checkout
from support import FIXTURE_CHECKOUT, copy_checkout, needs, run_cli, snapshot

needs_torch = needs(torch_unavailable())
SMALL = ["--shapes", "16x8,4x8", "--repeat", "2"]


# ------------------------------------------------------------------------------ bytes moved


@pytest.mark.parametrize("layout, arity, in_size, out_size, want", [
    # (4, 8): 32 elements; a broadcast row is 8 of them, a scalar operand 1
    (CONTIGUOUS, 2, 4, 4, (32 + 32) * 4 + 32 * 4),
    (STRIDED, 2, 4, 4, (32 + 32) * 4 + 32 * 4),  # a strided view reads as many elements as the dense one
    (BROADCAST, 2, 4, 4, (32 + 8) * 4 + 32 * 4),
    (SCALAR, 2, 4, 4, (32 + 1) * 4 + 32 * 4),
    (BROADCAST, 1, 4, 4, 8 * 4 + 32 * 4),  # a unary op's operand is the row, expanded
    (CONTIGUOUS, 3, 2, 2, 3 * 32 * 2 + 32 * 2),
    (BROADCAST, 3, 2, 2, (32 + 8 + 8) * 2 + 32 * 2),
    (SCALAR, 3, 2, 2, (32 + 1 + 1) * 2 + 32 * 2),
    (CONTIGUOUS, 2, 2, 4, 2 * 32 * 2 + 32 * 4),  # int16 in, float32 out (int2float)
])
def test_bytes_moved_per_layout(layout, arity, in_size, out_size, want):
    assert bytes_moved(Case(layout, (4, 8)), arity, in_size, out_size) == want


def test_bytes_moved_of_a_reduction_counts_the_reduced_output():
    assert bytes_moved(Case(CONTIGUOUS, (4, 8), 1), 1, 4, 4) == 32 * 4 + 4 * 4  # innermost: 4 outputs
    assert bytes_moved(Case(CONTIGUOUS, (4, 8), 0), 1, 4, 4) == 32 * 4 + 8 * 4  # outermost: 8 outputs
    assert bytes_moved(Case(BROADCAST, (4, 8), 1), 1, 4, 8) == 8 * 4 + 4 * 8  # an expanded row, int -> long
    assert bytes_moved(Case(CONTIGUOUS, (1024, 1024)), 2, 4, 4) == 3 * 1024 * 1024 * 4


def test_operand_shapes_of_a_1d_and_a_3d_shape():
    assert operand_shapes(Case(BROADCAST, (6,)), 2) == ((6,), (6,))  # a 1-D row is the whole tensor
    assert operand_shapes(Case(BROADCAST, (2, 3, 4)), 2) == ((2, 3, 4), (1, 1, 4))
    assert operand_shapes(Case(SCALAR, (2, 3, 4)), 3) == ((2, 3, 4), (), ())


def test_cases_leave_out_what_an_op_cannot_take():
    unary = cases(((4, 8),), 1, reduction=False)
    assert [c.layout for c in unary] == [CONTIGUOUS, STRIDED, BROADCAST]  # no second operand to make a scalar
    binary = cases(((4, 8), (2, 2)), 2, reduction=False)
    assert [(c.layout, c.shape) for c in binary] == [(layout, shape) for shape in ((4, 8), (2, 2))
                                                     for layout in (CONTIGUOUS, STRIDED, BROADCAST, SCALAR)]
    reduction = cases(((4, 8), (5,)), 1, reduction=True)
    assert [(c.layout, c.shape, c.dim) for c in reduction] == [
        (CONTIGUOUS, (4, 8), 1), (CONTIGUOUS, (4, 8), 0), (STRIDED, (4, 8), 1), (STRIDED, (4, 8), 0),
        (BROADCAST, (4, 8), 1), (BROADCAST, (4, 8), 0), (CONTIGUOUS, (5,), 0), (STRIDED, (5,), 0), (BROADCAST, (5,), 0)]


def test_parse_shapes():
    assert parse_shapes("1024x1024, 4096,2x3x4") == ((1024, 1024), (4096,), (2, 3, 4))
    for bad in ("10x0", "ax3", "3x", ","):
        with pytest.raises(MpsgenError):
            parse_shapes(bad)


# ------------------------------------------------------------------------------ the op model


def test_the_op_model_says_how_the_checkout_serves_each_op():
    from mpsgen.commands.bench.model import op_model

    checkout = Checkout.find(str(FIXTURE_CHECKOUT))
    yaml = "aten/src/ATen/native/native_functions.yaml"
    found = {op: op_model(checkout, op) for op in ("hypot", "softplus", "logaddexp", "sum")}
    assert {op: m.mps for op, m in found.items()} == {
        "hypot": f"no MPS kernel: no dispatch line of hypot names MPS ({yaml}:644)",
        "softplus": f"MPS: softplus_out_mps ({yaml}:836), an MPS function of its own, not a Metal kernel through the stub",
        "logaddexp": "native Metal kernel: logaddexp_stub -> logaddexp_mps_kernel "
                     "(aten/src/ATen/native/mps/operations/BinaryKernel.mm:63)",
        "sum": f"MPS on the shared dispatch line `CPU, CUDA, MPS, XPU: sum_out` ({yaml}:1262); no dispatch stub"}
    assert [op for op, m in found.items() if m.native] == ["logaddexp"]
    # registered dtypes where the kernel file registers the functor, in the model's order
    assert found["logaddexp"].dtypes == ("float32", "float16", "bfloat16", "int64", "int32", "int16", "uint8", "int8", "bool")
    assert found["logaddexp"].dtypes_from == "registered for MPS (aten/src/ATen/native/mps/kernels/BinaryKernel.metal)"
    assert (found["softplus"].arity, found["softplus"].scalars) == (1, ("beta", "threshold"))


# ------------------------------------------------------------------------------ record and comparison


def _record(op="hypot", rows=(), memory=(), device="cpu", measure=None, notes=()) -> Record:
    return Record(op, device, "2.13.0+cpu", "Linux x86_64, Python 3.11.7", f"torch 2.13.0+cpu: aten::{op}", {}, "",
                  "registered for MPS (aten/src/ATen/native/mps/kernels/BinaryKernel.metal)", "", "native Metal kernel",
                  3, 20, measure or {"rss": "the process's resident set"}, tuple(rows), tuple(memory), tuple(notes))


def _row(layout, dtype, median, shape=(1024, 1024), note=""):
    moved = bytes_moved(Case(layout, shape), 2, 4 if dtype == "float32" else 2, 4 if dtype == "float32" else 2)
    return Row(layout, shape, None, dtype, dtype, median, median * 0.9 if median else None, 20 if median else 0,
               moved if median else 0, note)


BEFORE = _record(rows=[_row(CONTIGUOUS, "float32", 2000.0), _row(STRIDED, "float32", 3000.0),
                       _row(CONTIGUOUS, "float16", 1000.0), _row(SCALAR, "float16", 10.0, (4, 8))],
                 memory=[Memory("float32", ((64, 96), (72, 104), (80, 112)), {"rss": (1000, 5096, 9192)}),
                         Memory("float16", ((64, 96), (72, 104), (80, 112)), {"rss": (1000, 1000, 1000)})],
                 device="mps", measure={"device": "driver", "rss": "rss"})
AFTER = _record(rows=[_row(CONTIGUOUS, "float32", 500.0), _row(STRIDED, "float32", 4000.0),
                      _row(CONTIGUOUS, "float16", None, note="not run: torch refuses it (RuntimeError: no)"),
                      _row(BROADCAST, "float16", 20.0, (4, 8))],
                memory=[Memory("float32", ((64, 96), (72, 104), (80, 112)), {"device": (10, 10, 10), "rss": (0, 0, 0)})],
                device="mps", measure={"device": "driver", "rss": "rss"})


def test_the_record_schema_is_pinned(tmp_path):
    record = replace(BEFORE, scalars={"beta": 1.0}, scalars_from="SoftplusParams fields beta", notes=("a note",))
    doc = record_to_json(record)
    assert list(doc) == ["schema", "op", "device", "torch", "platform", "call", "scalars", "scalars_from", "dtypes_from",
                         "dim", "mps", "warmup", "repeat", "memory_measure", "notes", "rows", "memory"]
    assert doc["schema"] == SCHEMA == "mpsgen-bench/1"
    assert doc["rows"][0] == {"layout": "contiguous", "shape": [1024, 1024], "dim": None, "dtype": "float32",
                              "out_dtype": "float32", "median_us": 2000.0, "min_us": 1800.0, "repeats": 20,
                              "bytes": 3 * 1024 * 1024 * 4, "gbps": round(3 * 1024 * 1024 * 4 / 2000e-6 / 1e9, 3), "note": ""}
    assert doc["memory"][0] == {"dtype": "float32", "shapes": [[64, 96], [72, 104], [80, 112]],
                                "readings": {"rss": [1000, 5096, 9192]}, "growth": {"rss": 4096.0}, "note": ""}
    path = tmp_path / "r.json"
    write_record(record, str(path))
    assert load_record(str(path)) == record
    assert json.loads(path.read_text()) == doc


def test_a_file_that_is_not_a_record_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    result = run_cli(["bench", "--compare", str(bad), str(bad)])
    assert result.exit_code == 2
    assert result.stderr == (f"mpsgen: error: {bad}: not a bench record (schema 'other', expected 'mpsgen-bench/1') "
                             "(name a record written by `mpsgen bench OP --json FILE`)\n")
    bad.write_text("{\n oops")
    result = run_cli(["bench", "--compare", str(bad), str(bad)])
    assert result.exit_code == 2 and result.stderr.startswith(f"mpsgen: error: {bad}:2: not JSON (")
    missing = tmp_path / "missing.json"
    assert run_cli(["bench", "--compare", str(missing), str(bad)]).stderr.startswith(f"mpsgen: error: {missing}: No such file")


def test_the_comparison_of_two_hand_made_records():
    cmp = compare_records(BEFORE, AFTER)
    rows = {(r.layout, r.shape, r.dtype): r for r in cmp.rows}
    assert [(r.layout, r.dtype) for r in cmp.rows] == [(CONTIGUOUS, "float32"), (STRIDED, "float32"),
                                                       (CONTIGUOUS, "float16"), (SCALAR, "float16"), (BROADCAST, "float16")]
    fast = rows[(CONTIGUOUS, (1024, 1024), "float32")]
    assert fast.speedup == 4.0 and not fast.slower
    slow = rows[(STRIDED, (1024, 1024), "float32")]
    assert slow.speedup == 0.75 and slow.slower
    assert cmp.slower == (slow,)
    # memory: float32 grew 4096 bytes a new shape before (rss: the first reading of BEFORE's memory_key
    # is device, which BEFORE does not have for float32: none), and none after (device flat)
    assert (fast.before_growth, fast.after_growth) == (None, 0.0)
    refused = rows[(CONTIGUOUS, (1024, 1024), "float16")]
    assert refused.speedup is None and refused.note == "after: not run: torch refuses it (RuntimeError: no)"
    assert rows[(SCALAR, (4, 8), "float16")].note == "not in after"
    assert rows[(BROADCAST, (4, 8), "float16")].note == "not in before"


def test_memory_growth_is_the_record_s_own_reading():
    cpu_before = replace(BEFORE, memory_measure={"rss": "rss"})
    cmp = compare_records(cpu_before, replace(AFTER, memory_measure={"rss": "rss"}))
    first = cmp.rows[0]
    assert (first.before_growth, first.after_growth) == (4096.0, 0.0)
    assert per_shape(4096.0) == "+4.0 KiB" and per_shape(0.0) == "0 B" and per_shape(-585.1) == "-585 B"
    assert per_shape(None) == "-" and per_shape(3 * 1024 * 1024) == "+3.0 MiB"


def test_the_pr_table_in_markdown_marks_the_slower_row():
    cmp = compare_records(replace(BEFORE, memory_measure={"rss": "rss"}), replace(AFTER, memory_measure={"rss": "rss"}))
    text = compare_markdown(cmp)
    assert text == (
        "mpsgen bench hypot: before torch 2.13.0+cpu: aten::hypot on mps, after torch 2.13.0+cpu: aten::hypot on mps\n"
        "median of 20 / 20 timed calls; speedup = before / after; GB/s = bytes read + written / median; memory: growth "
        "per new shape of the dtype's sweep (rss / rss)\n"
        "\n"
        "| layout | shape | dtype | before µs | after µs | speedup | GB/s before | GB/s after | mem/new shape before "
        "| mem/new shape after | note |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
        "| contiguous | 1024x1024 | float32 | 2,000 | 500.0 | 4.00x | 6.29 | 25.2 | +4.0 KiB | 0 B |  |\n"
        "| strided | 1024x1024 | float32 | 3,000 | 4,000 | **0.75x slower** | 4.19 | 3.15 | +4.0 KiB | 0 B |  |\n"
        "| contiguous | 1024x1024 | float16 | 1,000 | - | - | 6.29 | - | 0 B | - | after: not run: torch refuses it "
        "(RuntimeError: no) |\n"
        "| scalar | 4x8 | float16 | 10.0 | - | - | 0.013 | - | 0 B | - | not in after |\n"
        "| broadcast | 4x8 | float16 | - | 20.0 | - | - | 0.0072 | 0 B | - | not in before |\n"
        "\n"
        "1 of 2 rows slower after (marked 'slower')\n")
    plain = compare_lines(cmp)
    assert any(line.startswith("strided") and "0.75x slower" in line for line in plain)


def test_a_row_slower_by_a_hair_is_marked_with_the_digits_that_show_it():
    def row(before, after):
        return compare_records(_record(rows=[_row(CONTIGUOUS, "float32", before)]),
                               _record(rows=[_row(CONTIGUOUS, "float32", after)])).rows[0]

    assert speedup(row(28008.0, 28011.0)) == "0.9999x slower"
    assert speedup(row(100.0, 100.0)) == "1.00x"  # as fast: not slower
    assert speedup(row(100.0, 99.0)) == "1.01x"


def test_records_of_two_ops_are_refused_and_two_devices_noted():
    with pytest.raises(MpsgenError, match="before times hypot and after atan2"):
        compare_records(BEFORE, replace(AFTER, op="atan2"))
    cmp = compare_records(BEFORE, replace(AFTER, device="cpu"))
    assert "the records ran on different devices (before: mps, after: cpu)" in cmp.notes


# ------------------------------------------------------------------------------ the MPS path, stubbed


class FakeMps:
    """torch.mps's calls as the harness makes them: synchronise counted, memory from a script."""

    def __init__(self, driver):
        self.synchronized = 0
        self.emptied = 0
        self.driver = iter(driver)

    def synchronize(self):
        self.synchronized += 1

    def empty_cache(self):
        self.emptied += 1

    def driver_allocated_memory(self):
        return next(self.driver)

    def current_allocated_memory(self):
        return 4096


@needs_torch
def test_the_mps_path_runs_with_its_device_calls_stubbed(monkeypatch):
    import torch

    sweep, repeat, warmup = 3, 4, 2
    fake = FakeMps(driver=[1 << 20, (1 << 20) + 3000, (1 << 20) + 6000] * 3)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    for name in ("synchronize", "empty_cache", "driver_allocated_memory", "current_allocated_memory"):
        monkeypatch.setattr(torch.mps, name, getattr(fake, name))
    device = harness.open_device(torch, "mps")
    assert device.name == "mps" and set(device.measures) == {"device", "allocated", "rss"}
    ticks = iter(range(0, 10**9, 1000))  # every timed region lasts 1000 ns: the harness's arithmetic, not a timing
    options = harness.BenchOptions(device="mps", shapes=((8, 4),), repeat=repeat, warmup=warmup, sweep=sweep)
    reports = []
    record = harness.bench_op(Checkout.find(str(FIXTURE_CHECKOUT)), "hypot", options, lambda *a: reports.append(a),
                              device=replace(device, place="cpu"), clock=lambda: next(ticks))
    # the progress display: a report before each case and each sweep, and each stage's end
    assert reports[0] == ("timing", 0, 12, "float32 contiguous 8x4") and reports[12:14] == [
        ("timing", 12, 12, "done"), ("memory", 0, 3, f"float32: {sweep} new shapes")]
    assert reports[-1] == ("memory", 3, 3, "done") and len(reports) == 12 + 1 + 3 + 1
    assert record.device == "mps" and not any("CPU run" in n for n in record.notes)
    layouts = [CONTIGUOUS, STRIDED, BROADCAST, SCALAR]
    assert [(r.dtype, r.layout) for r in record.rows] == [(d, layout) for d in ("float32", "float16", "bfloat16")
                                                          for layout in layouts]
    assert {r.median_us for r in record.rows} == {1.0} and {r.repeats for r in record.rows} == {repeat}
    # the probe (1), then per case: the first call (1), each warm-up (1), each timed call (2: opened and closed),
    # then per sweep shape 2 (after the call, after releasing the cache)
    cases_run = len(record.rows)
    assert fake.synchronized == 1 + cases_run * (1 + warmup + 2 * repeat) + 3 * sweep * 2
    assert fake.emptied == 3 * sweep
    assert [m.readings["device"] for m in record.memory] == [(1 << 20, (1 << 20) + 3000, (1 << 20) + 6000)] * 3
    assert [m.growth["device"] for m in record.memory] == [3000.0] * 3
    assert record.growth_of("float16") == 3000.0 and record.memory_key == "device"
    assert all(m.readings["allocated"] == (4096,) * sweep for m in record.memory)


@needs_torch
def test_an_op_without_an_mps_kernel_in_torch_is_one_note(monkeypatch):
    import torch

    fake = FakeMps(driver=[0] * 100)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", fake.synchronize)

    def refuse(torch_, model):
        def run(tensors, dim):
            raise NotImplementedError("Could not run 'aten::hypot.out' with arguments from the 'MPS' backend.\nmore")
        return harness.TorchCall("torch: aten::hypot", run, {})

    monkeypatch.setattr(harness, "torch_call", refuse)
    device = replace(harness.open_device(torch, "mps"), place="cpu")
    record = harness.bench_op(Checkout.find(str(FIXTURE_CHECKOUT)), "hypot", harness.BenchOptions(), device=device)
    assert record.rows == () and record.memory == ()
    assert record.notes == (f"torch {torch.__version__} has no MPS kernel for hypot (NotImplementedError: Could not run "
                            "'aten::hypot.out' with arguments from the 'MPS' backend.); nothing timed",)
    assert run_lines(record)[-1] == f"note: {record.notes[0]}"


@needs_torch
def test_without_an_mps_device_the_default_is_one_line_pointing_at_cpu():
    import torch

    if torch.backends.mps.is_available():
        pytest.skip("this machine has an MPS device")
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "bench", "hypot"])
    assert result.exit_code == 2
    assert result.stderr == (f"mpsgen: error: no MPS device is present (torch {torch.__version__}: "
                             "torch.backends.mps.is_available() is False) (`--device cpu` runs the same harness on the CPU)\n")


# ------------------------------------------------------------------------------ runs on the CPU


@needs_torch
def test_hypot_on_cpu_writes_a_record_of_every_registered_dtype_and_layout(tmp_path):
    before = snapshot(FIXTURE_CHECKOUT)
    out = tmp_path / "a.json"
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "bench", "hypot", "--device", "cpu", *SMALL, "--json", str(out)])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == SCHEMA and doc["device"] == "cpu" and doc["op"] == "hypot"
    assert doc["dtypes_from"] == "the catalog's default groups (float): the checkout registers no Metal kernel for hypot"
    assert [(r["dtype"], r["layout"], r["shape"]) for r in doc["rows"]] == [
        (d, layout, shape) for d in ("float32", "float16", "bfloat16") for shape in ([16, 8], [4, 8])
        for layout in ("contiguous", "strided", "broadcast", "scalar")]
    assert all(r["median_us"] > 0 and r["repeats"] == 2 and r["out_dtype"] == r["dtype"] for r in doc["rows"])
    assert doc["notes"] == ["a CPU run: torch's CPU kernel for hypot, not an MPS one. MPS in the checkout: no MPS kernel: "
                            "no dispatch line of hypot names MPS (aten/src/ATen/native/native_functions.yaml:644)"]
    assert list(doc["memory_measure"]) == ["rss"] and [m["dtype"] for m in doc["memory"]] == ["float32", "float16", "bfloat16"]
    assert all(len(m["readings"]["rss"]) == harness.SWEEP for m in doc["memory"])
    assert result.stdout.splitlines()[0].startswith("mpsgen bench hypot on cpu: torch ")
    assert snapshot(FIXTURE_CHECKOUT) == before
    again = run_cli(["bench", "--compare", str(out), str(out), "--markdown"])
    assert again.exit_code == 0
    table = [line for line in again.stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 24 and all("| 1.00x |" in line for line in table[1:])  # the header, a row per case


@needs_torch
def test_softplus_runs_with_the_scalars_of_its_params_struct(tmp_path):
    out = tmp_path / "s.json"
    assert run_cli(["-C", str(FIXTURE_CHECKOUT), "bench", "softplus", "--device", "cpu", *SMALL, "--dtypes", "float32",
                    "--json", str(out)]).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["scalars"] == {"beta": 1.0, "threshold": 20.0}
    assert doc["scalars_from"] == "softplus_stub takes a params struct: SoftplusParams fields beta, threshold"
    assert [r["layout"] for r in doc["rows"]] == ["contiguous", "strided", "broadcast"] * 2  # unary: no scalar operand


@needs_torch
def test_addcmul_runs_three_operands_with_its_scalar(tmp_path):
    out = tmp_path / "t.json"
    assert run_cli(["-C", str(FIXTURE_CHECKOUT), "bench", "addcmul", "--device", "cpu", "--shapes", "4x8",
                    "--repeat", "2", "--dtypes", "float16", "--json", str(out)]).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["scalars"] == {"value": 1.0} and doc["scalars_from"] == "addcmul_stub takes 1 Scalar: value"
    assert doc["call"].endswith(": aten::addcmul")
    # three operands: the broadcast and scalar layouts read two rows / two 0-dim tensors besides the first
    assert {r["layout"]: r["bytes"] for r in doc["rows"]} == {"contiguous": 4 * 32 * 2, "strided": 4 * 32 * 2,
                                                              "broadcast": (32 + 16 + 32) * 2, "scalar": (32 + 2 + 32) * 2}


@needs_torch
def test_prod_runs_over_its_dims_with_the_registered_dtypes(tmp_path):
    root = reduction_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "prod"]).exit_code == 0
    out = tmp_path / "p.json"
    result = run_cli(["-C", str(root), "bench", "prod", "--device", "cpu", "--shapes", "4x8", "--repeat", "2",
                      "--json", str(out)])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["dim"] == "int dim" and doc["call"].endswith("torch.prod(input, dim)")
    assert doc["dtypes_from"] == "registered for MPS (aten/src/ATen/native/mps/kernels/ReduceOps.metal)"
    dtypes = list(dict.fromkeys(r["dtype"] for r in doc["rows"]))
    assert dtypes == ["float32", "float16", "bfloat16", "int64", "int32", "bool"]
    assert [(r["layout"], r["dim"]) for r in doc["rows"][:6]] == [
        ("contiguous", 1), ("contiguous", 0), ("strided", 1), ("strided", 0), ("broadcast", 1), ("broadcast", 0)]
    assert {r["dtype"]: r["out_dtype"] for r in doc["rows"]}["int32"] == "int64"
    assert "reduces: the schema's `int dim`, innermost and outermost" in result.stdout


# ------------------------------------------------------------------------------ usage


@pytest.mark.parametrize("args, message", [
    ([], "name an OP to time, or pass --compare BEFORE AFTER"),
    (["hypot", "--compare", "a", "b"], "--compare reads two records; it takes no OP"),
    (["--compare", "a", "b", "--shapes", "4x8"], "--json, --shapes and --dtypes belong to a run; --compare reads two records"),
    (["hypot", "--markdown"], "--markdown prints the --compare table"),
    (["hypot", "--shapes", "4xx8"], "--shapes 4xx8: '4xx8' is not a shape"),
    (["hypot", "--dtypes", "float99"], "--dtypes float99: unknown dtype 'float99'"),
])
def test_bad_usage_is_one_line(args, message):
    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "bench", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"mpsgen: error: {message} (") and result.stderr.count("\n") == 1


def test_the_migration_summary_names_both_bench_commands(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0
    steps = result.stdout.split("next steps\n", 1)[1].splitlines()
    assert steps == [
        "  bench: mpsgen bench hypot --json hypot-before.json   (before rebuilding: the build is still the one from "
        "before the change)",
        "  build: cd build && ninja torch_cpu",
        "  test: python test/test_mps.py -k test_output_match_hypot",
        "  bench: mpsgen bench hypot --json hypot-after.json && mpsgen bench --compare hypot-before.json "
        "hypot-after.json --markdown   (the table for the PR)"]


def test_the_compare_table_through_each_renderer(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    write_record(replace(BEFORE, memory_measure={"rss": "rss"}), str(before))
    write_record(replace(AFTER, memory_measure={"rss": "rss"}), str(after))
    rich = run_cli(["bench", "--compare", str(before), str(after), "--format", "rich"])
    plain = run_cli(["bench", "--compare", str(before), str(after)])
    assert rich.exit_code == plain.exit_code == 0
    # rich draws the table with every figure whole (no ellipsis) however wide it is
    strided = next(line for line in rich.stdout.splitlines() if "strided" in line)
    assert strided.startswith("│ strided") and "0.75x slower" in strided and "…" not in rich.stdout
    assert [c.strip() for c in strided.strip("│").split("│")] == [
        "strided", "1024x1024", "float32", "3,000", "4,000", "0.75x slower", "4.19", "3.15", "+4.0 KiB", "0 B", ""]
    assert plain.stdout.splitlines() == compare_lines(compare_records(load_record(str(before)), load_record(str(after)),
                                                                      str(before), str(after)))
