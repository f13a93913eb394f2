"""`mpsgen try OP`: the op's functor, as it stands in the kernel file, against a CPU reference."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.facts.catalog import load_catalog
from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.read.checkout import COMMON_METHODS, Checkout
from mpsgen.read.metalhost.compiler import PRELUDE_DIR, find_compiler
from mpsgen.read.metalhost.rewrite import rewrite_metal
from mpsgen.model import Location
from mpsgen.commands.tryop.api import TryOptions, try_op
from mpsgen.commands.tryop.compare import compare
from mpsgen.commands.tryop.lookup import functor_facts
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.commands.tryop.run import mps_unavailable
from mpsgen.commands.tryop.source import host_program, shader_source
from mpsgen.commands.tryop.tolerances import Tolerance, opinfo_tolerances
from mpsgen.commands.tryop.values import Inputs, make_inputs, traps
from support import copy_checkout, needs, run_cli, run_heavy, sampled

BINARY = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())


def _apply(root: Path, *args: str) -> None:
    result = run_cli(["-C", str(root), *args])
    assert result.exit_code == 0, result.output


@pytest.fixture
def hypot_root(tmp_path) -> Path:
    root = copy_checkout(tmp_path)
    _apply(root, "new-op", "hypot")
    return root


# ---- inputs ----------------------------------------------------------------------------------------


def test_half_edges_are_half_values_with_subnormals_infinities_and_nan():
    inputs = make_inputs("half", 1, seed=0, samples=0)
    (column,) = inputs.columns
    assert column[:4] == (0.0, -0.0, 1.0, -1.0)
    assert math.copysign(1.0, column[1]) == -1.0
    assert {math.inf, -math.inf, 65504.0, -65504.0, 5.960464477539063e-08} <= set(column)
    assert any(math.isnan(v) for v in column)
    assert -2.9802322387695312e-06 in column  # a subnormal half (3e-6 rounded), negative


def test_binary_inputs_broadcast_every_edge_against_every_edge_then_add_samples():
    edges = make_inputs("float", 1, seed=0, samples=0).count
    inputs = make_inputs("float", 2, seed=0, samples=5)
    assert inputs.count == edges * edges + 5
    pairs = {(repr(a), repr(b)) for a, b in zip(*inputs.columns)}
    assert (repr(math.inf), repr(-0.0)) in pairs and (repr(-0.0), repr(math.inf)) in pairs


def test_samples_are_seeded():
    assert make_inputs("int", 2, seed=3, samples=8) == make_inputs("int", 2, seed=3, samples=8)
    assert make_inputs("int", 2, seed=3, samples=8) != make_inputs("int", 2, seed=4, samples=8)


def test_integer_edges_stay_in_range():
    (column,) = make_inputs("uchar", 1, seed=0, samples=0).columns
    assert column == (0, 1, 2, 7, 100, 255)


# ---- comparison ------------------------------------------------------------------------------------


def test_compare_counts_mismatches_and_errors_against_the_tolerance():
    inputs = Inputs("float", ((1.0, 2.0, 3.0, math.nan),))
    result = compare(inputs, (1.0, 2.0 + 1e-5, 3.5, math.nan), (1.0, 2.0, 3.0, math.nan), "float")
    assert (result.cases, result.mismatches, result.status) == (4, 1, "failed")
    assert result.max_abs == 0.5 and result.max_rel == pytest.approx(0.5 / 3)
    assert [m.inputs for m in result.examples] == [(3.0,)]


def test_cpu_overflowing_in_an_intermediate_is_a_match_only_where_the_value_is_finite_and_given():
    inf, big = math.inf, 3.4e38
    inputs = Inputs("float", ((big, big, big, big, math.nan),))
    want = (inf, inf, inf, -inf, math.nan)  # the CPU op's: inf, and NaN for a NaN input
    wide = {0: 2.1e38, 1: 2.1e38, 2: inf, 3: -2.1e38, 4: math.nan}.get  # in float64, rounded to float
    got = (2.1e38, 3.4e38, 3.0e38, -2.1e38, 1.0)
    result = compare(inputs, got, want, "float", wide=wide)
    # case 0 and 3: CPU overflowed, the kernel gives the value; case 1: a wrong value there; case 2:
    # the value itself overflows, so a finite kernel value is wrong; case 4: NaN in, NaN wanted
    assert ([m.got for m in result.examples], result.cpu_overflows) == ([3.4e38, 3.0e38, 1.0], 2)
    assert "matches CPU except where CPU overflows in an intermediate: 2 cases" in result.note
    without = compare(inputs, got, want, "float")  # no float64 reference (integer inputs): no rule
    assert (without.mismatches, without.cpu_overflows) == (5, 0)
    assert compare(Inputs("int", ((1,),)), (5,), (6,), "int", wide=lambda i: 5).mismatches == 1  # exact types: never


def test_a_value_nearer_the_float64_op_than_cpus_is_a_match_named_in_the_note_and_a_wrong_one_is_not():
    # mse_loss in half: CPU rounds a - b to half before squaring, the kernel squares it at opmath
    inputs = Inputs("half", ((-2.5, -2.5, -2.5, -2.5, 3.0), (0.0010004043579101562,) * 4 + (1.0,)))
    want = (6.26171875, 6.26171875, 7.0, 6.26171875, 4.0)  # CPU's (case 2: made far off)
    wide = {0: 6.25390625, 1: 6.25390625, 2: 6.25390625, 3: 6.25390625, 4: 4.0}.get  # in float64, rounded to half
    # case 0: the float64 value; case 1: a wrong constant (1.01 *); case 2: nearer the float64 value
    # than CPU but outside the tolerance of it; case 3: a flipped branch (the other side's value)
    got = (6.25390625, 6.31640625, 6.5, 0.0, 4.0)
    result = compare(inputs, got, want, "half", wide=wide)
    assert [m.got for m in result.examples] == [6.31640625, 6.5, 0.0]
    assert result.nearer_float64 == (((-2.5, 0.0010004043579101562), 6.25390625, 6.26171875, 6.25390625),)
    assert result.note == ("1 case nearer the op computed in float64 than CPU (CPU rounds an intermediate to the input "
                           "type; the kernel computes at opmath): (-2.5, 0.0010004043579101562) gave 6.25390625, "
                           "CPU 6.26171875, float64 6.25390625")
    right = compare(inputs, (6.25390625,) * 4 + (4.0,), want, "half", wide=wide)
    assert (right.status, right.mismatches, len(right.nearer_float64)) == ("passed", 0, 4)
    assert right.note.endswith("; 1 more")
    without = compare(inputs, (6.25390625,) * 4 + (4.0,), want, "half")  # no float64 reference: no rule
    assert (without.status, without.mismatches) == ("failed", 4)


def test_a_kernels_infinity_that_is_the_float64_value_is_a_match_where_cpu_gives_nan_and_a_wrong_one_is_not():
    # smooth_l1_loss in half, beta 1e6: CPU holds beta in half (inf), so |d| - beta / 2 at |d| = inf is
    # inf - inf, NaN; the kernel holds beta at float and gives inf, the op's value in float64
    inf, nan = math.inf, math.nan
    inputs = Inputs("half", ((0.0, 0.0, 0.0, 1.0), (inf, -inf, inf, 2.0)))
    want = (nan, nan, nan, 0.5)
    wide = {0: inf, 1: inf, 2: inf, 3: 0.5}.get
    # case 0, 1: the float64 value; case 2: -inf, a flipped sign (not the float64 value); case 3 agrees
    result = compare(inputs, (inf, inf, -inf, 0.5), want, "half", wide=wide)
    assert [(m.inputs, m.got) for m in result.examples] == [((0.0, inf), -inf)]
    assert [case[0] for case in result.nearer_float64] == [(0.0, inf), (0.0, -inf)]
    right = compare(inputs, (inf, inf, inf, 0.5), want, "half", wide=wide)
    assert (right.status, right.mismatches, len(right.nearer_float64)) == ("passed", 0, 3)
    nan_where_finite = compare(inputs, (inf, inf, inf, nan), want, "half", wide=wide)  # the op's value is 0.5
    assert nan_where_finite.mismatches == 1 and nan_where_finite.examples[0].inputs == (1.0, 2.0)
    assert compare(inputs, (inf, inf, inf, 0.5), want, "half").mismatches == 3  # no float64 reference: no rule
    # a finite CPU value is never passed over: nextafter(inf, -0.0) in half is 65504 on CPU; metal::nextafter
    # steps float's ulp and gives inf, which is also float64's value rounded to half
    step = compare(Inputs("half", ((inf,), (-0.0,))), (inf,), (65504.0,), "half", wide=lambda i: inf)
    assert (step.status, step.mismatches, step.nearer_float64) == ("failed", 1, ())


def test_a_value_of_either_of_the_cpus_scalar_loop_answers_is_a_match_and_a_value_of_neither_is_not():
    inputs = Inputs("float", ((1.0, 2.0, 3.0),))
    want = (-1.0, 2.0, -3.0)  # the vectorised loop's
    # case 0: the scalar loop alone gives 1 and within the strided tensor 1; case 2: alone gives 3 (a
    # size-dependent value), strided -4: the kernel's -4 matches the strided one
    alone = {0: (1.0, 1.0), 1: (2.0, 2.0), 2: (3.0, -4.0)}.get
    result = compare(inputs, (1.0, 2.0, -4.0), want, "float", alone=alone)
    assert (result.mismatches, result.status) == (0, "passed")
    assert result.note.startswith("2 cases match the CPU's scalar loop")
    wrong = compare(inputs, (1.5, 2.0, 4.0), want, "float", alone=alone)
    assert [m.got for m in wrong.examples] == [1.5, 4.0]
    assert compare(inputs, (1.0, 2.0, -3.0), want, "float", alone=lambda i: 1.0).status == "passed"  # one value


def test_integer_outputs_must_match_exactly():
    inputs = Inputs("int", ((5, 6),))
    assert compare(inputs, (5, 7), (5, 6), "int").mismatches == 1
    assert compare(inputs, (5, 6), (5, 6), "int").status == "passed"


def test_opinfo_mps_tolerance_overrides_are_read_with_their_location():
    checkout = Checkout.find(Path(__file__).resolve().parent.parent / "fixtures" / "pytorch")
    text = checkout.read(COMMON_METHODS)
    asinh_line = text[: text.index("DecorateInfo(toleranceOverride({torch.float32: tol(atol=1e-4")].count("\n") + 1
    assert opinfo_tolerances(checkout, "asinh") == {
        "float32": Tolerance(1e-4, 1e-4, Location(COMMON_METHODS, asinh_line)),
        "complex64": Tolerance(1e-4, 1e-4, Location(COMMON_METHODS, asinh_line)),
    }
    # precisionOverride (every device) and overrides for other test classes do not count.
    assert set(opinfo_tolerances(checkout, "atanh")) == {"float16"}
    assert opinfo_tolerances(checkout, "hypot") == {}


# ---- the shader source -----------------------------------------------------------------------------


def test_shader_source_is_self_contained_and_maps_lines_to_real_files(hypot_root):
    checkout = Checkout.find(hypot_root)
    facts = functor_facts(checkout, "hypot")
    assert (facts.kernel_file, facts.functor, facts.arity, facts.input_types) == (BINARY, "hypot", 2, ("float", "half", "bfloat"))
    source = shader_source(checkout, facts, facts.input_types)
    lines = source.splitlines()
    assert lines[0] == f'#line 1 "{BINARY}"'
    assert not [line for line in lines if line.startswith("#include <c10/")]
    assert '#line 1 "c10/metal/indexing.h"' in lines and '#line 1 "c10/metal/utils.h"' in lines
    assert "#include <metal_stdlib>" in lines
    tail = source[source.index('#line 1 "<mpsgen try kernels>"'):]
    assert tail.count("kernel void mpsgen_try_") == 3
    assert (
        "kernel void mpsgen_try_half(\n"
        "    device ::c10::metal::result_of<hypot_functor, half, half>* out [[buffer(0)]],\n"
        "    constant half* in0 [[buffer(1)]],\n"
        "    constant half* in1 [[buffer(2)]],\n"
        "    uint i [[thread_position_in_grid]]) {\n"
        "  hypot_functor f;\n"
        "  out[i] = f(in0[i], in1[i]);\n"
        "}\n"
    ) in tail


@needs_compiler
def test_the_string_sent_to_mps_compiles_on_the_host_as_it_is(hypot_root, tmp_path):
    """The exact string try would give torch.mps.compile_shader, compiled alone by the host path."""
    checkout = Checkout.find(hypot_root)
    facts = functor_facts(checkout, "hypot")
    source = shader_source(checkout, facts, facts.input_types)
    program = host_program(checkout, facts, source, [make_inputs("float", 2, 0, 1)])
    assert source in program and program.index(source) == program.index('#line 1 "aten/')
    path = tmp_path / "shader.metal"
    path.write_text(rewrite_metal(source), encoding="utf-8")
    compiler = find_compiler()[0]
    ran = subprocess.run(compiler.syntax_command(path, ()), capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[:3000]


@needs_compiler
def test_an_error_in_the_kernel_file_is_reported_at_its_line(hypot_root):
    path = hypot_root / BINARY
    text = path.read_text(encoding="utf-8")
    # the body calls the checkout's c10::metal::hypot: misspell that call
    path.write_text(text.replace("c10::metal::hypot(", "c10::metal::hypott(", 1), encoding="utf-8")
    line = text[: text.index("c10::metal::hypot(")].count("\n") + 1
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"mpsgen: error: {BINARY}:{line}: ")
    assert "hypott" in result.stderr


# ---- try end to end --------------------------------------------------------------------------------


@needs_compiler
def test_a_functor_that_never_finishes_fails_in_one_line(hypot_root, monkeypatch):
    # a loop no input ends (a volatile read each turn: the compiler keeps it) stands for a loop as long
    # as an input's value, which try's extremes (3.4e38) make as good as endless: exit 1 and one line,
    # not an internal error, and the timeout is try's own (shortened here: the loop never ends)
    from mpsgen.commands.tryop import run

    monkeypatch.setattr(run, "RUN_TIMEOUT", 1.0)
    path = hypot_root / BINARY
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("return c10::metal::hypot(", "for (volatile int spin = 0; spin == 0;) {\n    }\n"
                                 "    return c10::metal::hypot(", 1), encoding="utf-8")
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 1, result.output
    assert result.stderr == ("mpsgen: error: hypot's functor did not finish on the host in 1 s on try's values "
                             "(look for a loop bounded by an input's value: try draws extremes such as 3.4e38)\n")


@needs_compiler
@pytest.mark.parametrize("reference", ["catalog", pytest.param("torch", marks=needs_torch)])
def test_try_finds_a_seeded_wrong_body(tmp_path, reference):
    root = copy_checkout(tmp_path)
    _apply(root, "new-op", "hypot", "--expr", "a - b")
    result = run_cli(["-C", str(root), "try", "hypot", "--json", "--reference", reference])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["backend"] == "host" and doc["not_run"] == ["mps: not macOS (this is linux)"]
    assert [(d["dtype"], d["status"]) for d in doc["dtypes"]] == [
        ("float32", "failed"), ("float16", "failed"), ("bfloat16", "failed")]
    first = doc["dtypes"][0]["examples"][0]
    assert (first["inputs"], first["got"], first["want"]) == ([0.0, 1.0], -1.0, 1.0)


@needs_compiler
def test_try_passes_the_catalog_hypot_against_the_catalog_reference(hypot_root):
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 0, result.output
    assert "ran hypot_functor (aten/src/ATen/native/mps/kernels/BinaryKernel.metal:" in result.stdout
    assert "not run: mps: not macOS (this is linux)" in result.stdout
    assert "reference: catalog: ref_hypot" in result.stdout
    assert "3 dtype(s): all match" in result.stdout


@needs_compiler
def test_integer_division_cases_that_trap_are_left_out_and_said_so(tmp_path):
    root = copy_checkout(tmp_path)
    _apply(root, "migrate", "fmod")
    report = try_op(Checkout.find(root), "fmod", TryOptions(reference="catalog", samples=4))
    assert report.exit_code == 0
    long_result = next(r for r in report.results if r.metal_type == "long")
    inputs = make_inputs("long", 2, 0, 4)
    # The host driver decides in C++; the Python rule must agree case for case.
    left_out = [inputs.case(i) for i in range(inputs.count) if traps(inputs, i)]
    assert (-(1 << 63), -1) in left_out and (7, 0) in left_out and (0, 0) in left_out
    assert long_result.cases == inputs.count - len(left_out)
    assert f"{len(left_out)} cases left out: they trap on a CPU (integer division by 0" in long_result.note


@needs_compiler
@needs_torch
def test_integer_cases_that_do_not_divide_are_all_run(tmp_path):
    root = copy_checkout(tmp_path)
    report = try_op(Checkout.find(root), "maximum", TryOptions(reference="torch", samples=4))
    ints = next(r for r in report.results if r.metal_type == "int")
    assert (ints.status, ints.cases, ints.note) == ("passed", make_inputs("int", 2, 0, 4).count, "")


# Each catalog body, as new-op/migrate writes it, registered for every group it supports (a superset of
# its default groups), run by try against torch's CPU op on every registered dtype and, for a params
# body, every scalar set try draws, edge values included (a mismatch fails; CPU overflowing in an
# intermediate is try's counted rule). logaddexp is already native in the miniature and the miniature
# has no logical_not: both run below on a checkout of their own.
CATALOG = load_catalog()
# addcmul and addcdiv need the Scalar-taking exec_ternary_kernel, which mpsgen adds beside an
# OperationUtils.mm the miniature lacks: tests/test_alpha_launcher.py migrates and tries them there.
# The miniature's yaml has no pow: tests/test_pow_stubs.py migrates it on a checkout of its own.
OWN_CHECKOUT = frozenset({"logaddexp", "logical_not", "addcmul", "addcdiv", "pow"})
CATALOG_OPS = sorted(op for op in CATALOG if op not in OWN_CHECKOUT)
# Run in every run (each catalog body is compiled and run against torch: heavy, CI runs all): every
# dtype group (int2float, integer, complex, bool), a binary body, hypot's refused int2float, a
# backward. Params bodies run locally in tests/test_try_scalars.py (softplus, threshold, and
# softplus_backward with CPU's overflow in an intermediate).
LOCAL_CATALOG_OPS = ("asinh", "fmod", "hypot", "sgn", "sigmoid_backward")  # asinh: the OpInfo tolerance test too


def _catalog_ops_run() -> list[str]:
    return CATALOG_OPS if run_heavy() else [op for op in CATALOG_OPS if op in LOCAL_CATALOG_OPS]


@pytest.fixture(scope="module")
def every_catalog_body(tmp_path_factory) -> Path:
    root = copy_checkout(tmp_path_factory.mktemp("catalog-bodies"))
    for op in _catalog_ops_run():  # the ops whose test runs
        groups = CATALOG[op].supports
        result = run_cli(["-C", str(root), "new-op", op, "--dtypes", ",".join(groups)])
        if result.exit_code != 0 and "would never be called" in result.stderr:
            # int2float for an op whose meta function keeps the input dtype (hypot): refused
            groups = tuple(g for g in groups if g != "int2float")
            result = run_cli(["-C", str(root), "new-op", op, "--dtypes", ",".join(groups)])
        if result.exit_code != 0:
            _apply(root, "migrate", op, "--dtypes", ",".join(groups))
    return root


def _registered(root: Path, op: str) -> set[str]:
    return set(functor_facts(Checkout.find(root), op).input_types)


def _assert_matches_torch(root: Path, op: str) -> None:
    report = try_op(Checkout.find(root), op, TryOptions(reference="torch", samples=16))
    assert report.reference.startswith("torch 2.13.0")
    failed = {(r.scalars, r.dtype): [(m.inputs, m.got, m.want) for m in r.examples[:3]]
              for r in report.results if r.status == "failed"}
    assert not failed
    # Skipped only where the CPU op itself has no kernel for the dtype (e.g. hypot on integers), or
    # where a scalar set's value does not fit the dtype (threshold's value=-2 for uint8).
    for r in report.results:
        assert r.status == "passed" or (r.status == "skipped" and (
            "not implemented for" in r.note or "Scalar::to refuses it" in r.note)), (r.scalars, r.dtype, r.note)
    assert sum(r.cases for r in report.results if r.status == "passed") > 0
    sets = report.scalar_sets or ("",)
    assert sorted((r.scalars, r.metal_type) for r in report.results) == sorted(
        (s, t) for s in sets for t in _registered(root, op))


@needs_compiler
@needs_torch
@pytest.mark.parametrize("op", sampled(CATALOG_OPS, LOCAL_CATALOG_OPS))
def test_every_catalog_body_matches_torch_on_cpu(every_catalog_body, op):
    _assert_matches_torch(every_catalog_body, op)
    registered = {t for group in CATALOG[op].supports for t in METAL_INPUT_TYPES[group]
                  if not (op == "hypot" and group == "int2float")}  # refused: see every_catalog_body
    assert _registered(every_catalog_body, op) == registered


@needs_compiler
@needs_torch
@pytest.mark.heavy
def test_the_catalog_logaddexp_body_matches_torch_on_cpu(tmp_path):
    # the miniature's logaddexp functor is its own: the catalog's body takes its place, registered as before
    from test_catalog import render

    root = copy_checkout(tmp_path)
    path = root / BINARY
    text = path.read_text(encoding="utf-8")
    start = text.index("struct logaddexp_functor {")
    end = text.index("};\n", start) + 3
    path.write_text(text[:start] + render("logaddexp") + text[end:], encoding="utf-8")
    assert "real_(" in path.read_text(encoding="utf-8")
    _assert_matches_torch(root, "logaddexp")


@needs_compiler
@needs_torch
@pytest.mark.heavy
def test_the_catalog_logical_not_body_matches_torch_on_cpu(real_checkout_older):
    from test_replay_214 import add_legacy_logical_not

    add_legacy_logical_not(real_checkout_older)  # the legacy kernel the yaml names, as the replay adds it
    _apply(real_checkout_older, "migrate", "logical_not", "--dtypes", ",".join(CATALOG["logical_not"].supports))
    _assert_matches_torch(real_checkout_older, "logical_not")


@needs_compiler
@needs_torch
@pytest.mark.heavy
def test_migrated_softplus_backward_passes_try_on_the_real_size_checkout(real_checkout_older):
    # issue 35's contradiction, where it was found: the 2.13.0 real-size checkout
    _apply(real_checkout_older, "migrate", "softplus_backward")
    result = run_cli(["-C", str(real_checkout_older), "try", "softplus_backward", "--backend", "host", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    overflows = {(r["scalars"], r["dtype"]): r["cpu_overflows"] for r in doc["dtypes"] if r["cpu_overflows"]}
    assert overflows == {("beta=0.5, threshold=2", "float32"): 8, ("beta=0.5, threshold=2", "bfloat16"): 6}


@needs_compiler
@needs_torch
def test_a_dtype_the_cpu_op_lacks_is_compared_with_the_catalog_reference(tmp_path):
    # integer hypot kernels: the fixture's BinaryOps.cpp says hypot keeps the input dtype (so new-op
    # refuses int2float as never called); without it (a checkout of a wheel's files) they are written
    root = copy_checkout(tmp_path)
    (root / "aten/src/ATen/native/BinaryOps.cpp").unlink()
    _apply(root, "new-op", "hypot", "--dtypes", "float,int2float")
    report = try_op(Checkout.find(root), "hypot", TryOptions(samples=4))
    ints = next(r for r in report.results if r.metal_type == "int")
    assert (ints.status, ints.out_type) == ("passed", "float")
    assert ints.note.startswith("torch 2.13.0+cpu CPU: aten::hypot refuses it (\"hypot_cpu\" not implemented for 'Int'); "
                                "compared with catalog: ref_hypot")
    floats = next(r for r in report.results if r.metal_type == "float")
    assert (floats.status, floats.note, floats.tolerance) == ("passed", "", (1.3e-6, 1e-5))


@needs_compiler
@needs_torch
def test_the_opinfo_mps_tolerance_replaces_the_default(every_catalog_body):
    report = try_op(Checkout.find(every_catalog_body), "asinh", TryOptions(samples=4))
    floats = next(r for r in report.results if r.metal_type == "float")
    assert floats.tolerance == (1e-4, 1e-4)
    assert floats.note.startswith(f"tolerance from {COMMON_METHODS}:")
    halves = next(r for r in report.results if r.metal_type == "half")
    assert (halves.tolerance, halves.note) == ((1e-3, 1e-5), "")


@needs_compiler
@needs_torch
def test_a_kernel_returning_another_type_than_the_cpu_op_fails(tmp_path):
    root = copy_checkout(tmp_path)
    # mpsgen refuses `integer` for an op that promotes integers to float: make the wrong kernel by hand
    _apply(root, "new-op", "copysign", "--dtypes", "float,int2float", "--expr", "a")
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = kernel.read_text(encoding="utf-8")
    wrong = text.replace("REGISTER_INT2FLOAT_BINARY_OP(copysign);", "REGISTER_INTEGER_BINARY_OP(copysign);")
    wrong = wrong.replace("  inline float operator()(const T a_, const T b_) {\n"
                          "    const float a = static_cast<float>(a_);\n"
                          "    const float b = static_cast<float>(b_);\n"
                          "    return a;\n",
                          "  inline T operator()(const T a, const T b) {\n"
                          "    return static_cast<T>(a);\n")
    assert wrong.count("REGISTER_INTEGER_BINARY_OP(copysign);") == 1 and "inline T operator()(const T a, const T b)" in wrong
    kernel.write_text(wrong, encoding="utf-8")
    report = try_op(Checkout.find(root), "copysign", TryOptions(reference="torch", samples=4))
    ints = next(r for r in report.results if r.metal_type == "int")
    assert (ints.status, ints.out_type) == ("failed", "int")
    assert ints.note.endswith("the kernel returns int, the reference float")


# ---- where it cannot run ---------------------------------------------------------------------------


def test_an_op_without_a_metal_kernel_is_refused_with_what_to_do(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "try", "hypot"])
    assert result.exit_code == 2
    assert result.stderr.startswith("mpsgen: error: aten/src/ATen/native/native_functions.yaml:")
    assert "hypot has no native Metal kernel to run in this checkout (give it one with `mpsgen new-op hypot`" in result.stderr


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the message given off macOS")
def test_without_a_compiler_or_mps_try_says_why(hypot_root, monkeypatch):
    monkeypatch.setenv("MPSGEN_CXX", "no-such-compiler-mpsgen")
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 2
    assert result.stderr == (
        "mpsgen: error: the functor cannot run here: no MPS (not macOS (this is linux)) and $MPSGEN_CXX names "
        "'no-such-compiler-mpsgen', which is not an executable on PATH (install g++ or clang++, or run on a Mac with MPS)\n")


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the message given off macOS")
def test_the_mps_path_says_why_it_cannot_run_here(hypot_root):
    assert mps_unavailable() == "not macOS (this is linux)"
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--backend", "mps"])
    assert result.exit_code == 2
    assert result.stderr.startswith("mpsgen: error: --backend mps cannot run here: not macOS (this is linux)")


def test_prelude_ships_inside_the_package():
    assert (PRELUDE_DIR / "metal_stdlib").is_file() and (PRELUDE_DIR / "mpsgen_metal.h").is_file()
    assert PRELUDE_DIR.parent.name == "metalhost" and PRELUDE_DIR.parent.parent.name == "read"


@needs_compiler
def test_a_compile_error_in_another_functor_is_named_as_pre_existing(hypot_root):
    path = hypot_root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = path.read_text(encoding="utf-8")
    assert text.count("return c10::metal::max(a, b);") == 1
    text = text.replace("return c10::metal::max(a, b);", "return c10::metal::max(a, no_such_name);", 1)
    path.write_text(text, encoding="utf-8")
    line = text[: text.index("no_such_name")].count("\n") + 1
    result = run_cli(["-C", str(hypot_root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"mpsgen: error: aten/src/ATen/native/mps/kernels/BinaryKernel.metal:{line}: ")
    assert "no_such_name" in first
    assert first.endswith("(pre-existing: in maximum_functor, not hypot_functor; the whole kernel file must compile "
                          "for try to run hypot_functor on the host)")


# ---- the verdict follows test_output_match: a body at opmath where CPU rounds an intermediate -------

# the miniature's own loss functors (issue 42): mse at opmath, and huber with a flipped branch or a wrong constant
OPMATH_MSE = "(a - b) * (a - b)"
HUBER_FLIPPED = "abs(a - b) < delta ? delta * (abs(a - b) - 0.5f * delta) : 0.5f * (a - b) * (a - b)"
HUBER_CONSTANT = "abs(a - b) < delta ? 0.45f * (a - b) * (a - b) : delta * (abs(a - b) - 0.5f * delta)"


@needs_compiler
@needs_torch
def test_a_body_at_opmath_where_cpu_rounds_an_intermediate_passes_with_a_note_naming_the_cases(tmp_path):
    root = copy_checkout(tmp_path)
    _apply(root, "migrate", "mse_loss", "--expr", OPMATH_MSE)
    result = run_cli(["-C", str(root), "try", "mse_loss", "--backend", "host", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    by_dtype = {d["dtype"]: d for d in doc["dtypes"]}
    assert {d: r["status"] for d, r in by_dtype.items()} == {"float32": "passed", "float16": "passed", "bfloat16": "passed"}
    half = by_dtype["float16"]
    assert half["nearer_float64"] > 0 and half["mismatches"] == 0
    first = half["nearer_float64_cases"][0]
    # the kernel's value is the float64 one, CPU's is not
    assert first["got"] == first["float64"] != first["cpu"]
    assert f"{half['nearer_float64']} cases nearer the op computed in float64 than CPU" in half["note"]
    assert f"({', '.join(repr(v) for v in first['inputs'])}) gave {first['got']}, CPU {first['cpu']}" in half["note"]
    text = run_cli(["-C", str(root), "try", "mse_loss", "--backend", "host", "--format", "plain"])
    total = sum(d["nearer_float64"] for d in doc["dtypes"])
    assert text.stdout.splitlines()[-1] == f"3 dtype(s): all match ({total} cases nearer the op in float64 than CPU: see the notes)"


@needs_compiler
@needs_torch
@pytest.mark.parametrize("expr", [HUBER_FLIPPED, HUBER_CONSTANT], ids=["flipped-branch", "wrong-constant"])
def test_a_flipped_branch_or_a_wrong_constant_still_fails(tmp_path, expr):
    root = copy_checkout(tmp_path)
    _apply(root, "migrate", "huber_loss", "--expr", expr)
    result = run_cli(["-C", str(root), "try", "huber_loss", "--backend", "host", "--json"])
    assert result.exit_code == 1, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert {d["dtype"] for d in doc["dtypes"] if d["status"] == "failed"} == {"float32", "float16", "bfloat16"}
