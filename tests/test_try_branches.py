"""Issue 46: try samples the values where the functor's branches switch, and reports which of its
branches those values took (g++'s coverage on the host build)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from mpsgen.commands.tryop.api import _branch_values, prepare
from mpsgen.commands.tryop.branchvalues import (
    boundary_inputs,
    branch_values,
    domain_values,
    functor_span,
    functor_spans,
    neighbours,
    opinfo_domain,
)
from mpsgen.commands.tryop.coverage import Target, branches, untaken_lines
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.commands.tryop.values import make_inputs
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.compiler import find_compiler
from support import FIXTURE_CHECKOUT, copy_checkout, needs, run_cli

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())
ACTIVATION = "aten/src/ATen/native/mps/kernels/ActivationKernel.metal"

FUNCTOR = """\
// before
struct f_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    constexpr float low = 0.25f;
    const float f = float(x);
    if (f < low) {
      return x;
    }
    if (2.0f * f + 1.0f >= 3.0f - low) {  // (1.75 - 1) / 2
      return T(0);
    }
    return static_cast<T>(::metal::min(f, 6.0f) * ::metal::max(f - 3.0f, 0.0f));
  }
};
// after
"""


# ---- the values -----------------------------------------------------------------------------------


def test_the_functor_span_is_its_struct_to_the_closing_brace():
    assert functor_span(FUNCTOR, 2) == (2, 15)


HELPERS = """\
template <typename scalar_t>
inline scalar_t twice_(scalar_t x) {
  return x > 0 ? scalar_t(2) * x : x;
}

inline float unused_(float x) {
  return x;
}

inline float half_(float x) {
  return twice_(x) / 4.0f;
}

struct h_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(half_(float(x)));
  }
};
"""


def test_the_functor_lines_take_the_files_functions_it_calls_directly_or_not():
    # a derived body's helpers (gelu's gelu_tanh_scalar) are written with it: measured and mutated with it
    assert functor_spans(HELPERS, 14) == ((14, 19), (1, 4), (10, 12))


def test_each_comparison_gives_the_operand_value_on_its_boundary():
    # f < low: 0.25; 2f + 1 >= 2.75: 0.875; min(f, 6): 6; max(f - 3, 0): 3 (the clamp's kinks)
    assert boundary_inputs(FUNCTOR, 2, 15) == [0.25, 0.875, 6.0, 3.0]


def test_a_returned_comparison_gives_its_boundary_too():
    text = "struct g_functor {\n  inline T operator()(const T x) {\n    return x >= 1.5f ? x : -x;\n  }\n};\n"
    assert boundary_inputs(text, 1, 5) == [1.5]


def test_a_constant_compared_with_what_try_cannot_invert_is_sampled_itself():
    text = "struct g_functor {\n  inline T operator()(const T x, const T y) {\n    return x * y > 2.5f ? x : y;\n  }\n};\n"
    assert boundary_inputs(text, 1, 5) == [2.5]


def test_neighbours_are_the_dtypes_adjacent_values_on_both_sides():
    assert neighbours(1.0, "float") == [0.9999999403953552, 1.0, 1.0000001192092896]
    assert neighbours(1.0, "half") == [0.99951171875, 1.0, 1.0009765625]
    assert neighbours(1.0, "bfloat") == [0.99609375, 1.0, 1.0078125]
    assert neighbours(0.0, "float") == [-1.401298464324817e-45, 0.0, 1.401298464324817e-45]
    assert neighbours(2.5, "int") == [1, 2, 3, 4]
    assert neighbours(0.0, "uchar") == [0, 1]
    assert neighbours(1.0, "bool") == [] and neighbours(math.inf, "float") == []


def test_the_opinfo_domain_is_read_and_sampled_densely_inside_and_just_outside():
    checkout = Checkout.find(FIXTURE_CHECKOUT)
    assert opinfo_domain(checkout, "special_ndtri") == (0.0, 1.0)
    assert opinfo_domain(checkout, "hypot") is None
    inside = domain_values((0.0, 1.0))
    assert inside[:2] == [0.0, 1.0] and len(inside) == 34 and all(0.0 < v < 1.0 for v in inside[2:])
    values = branch_values("float", [], [], inside)
    assert -1.401298464324817e-45 in values and 1.0000001192092896 in values  # just outside
    assert any(0.97575 < v < 1.0 for v in values)  # ndtri's upper tail


def test_special_values_meet_each_operand_with_the_companions():
    base = make_inputs("float", 2, seed=0, samples=3)
    inputs = make_inputs("float", 2, seed=0, samples=3, special=(7.0,))
    assert inputs.columns[0][: base.count] == base.columns[0]
    extra = list(zip(*(c[base.count :] for c in inputs.columns)))
    assert extra == [(7.0, 7.0), (7.0, 1.0), (7.0, -2.5), (7.0, 0.5), (1.0, 7.0), (-2.5, 7.0), (0.5, 7.0)]


@needs_torch
def test_hardtanh_backward_samples_x_on_min_val_and_max_val_of_every_scalar_set(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "migrate", "hardtanh_backward"]).exit_code == 0
    checkout = Checkout.find(root)
    prepared = prepare(checkout, "hardtanh_backward")
    special = _branch_values(checkout, prepared)
    for t in prepared.facts.input_types:
        inputs = make_inputs(t, 2, 0, 4, special[t])
        # the kernel's operands are (grad_output, x): x on each bound, grad_output non-zero
        pairs = set(zip(*inputs.columns))
        for chosen in prepared.sets:
            for name in ("min_val", "max_val"):
                bound = chosen.as_dict()[name]
                assert (1.0, float(bound)) in pairs, (t, chosen.label, name)
                below, _, above = neighbours(float(bound), t)
                assert (1.0, below) in pairs and (1.0, above) in pairs


# ---- the coverage ---------------------------------------------------------------------------------


def _gcov(lines) -> str:
    return json.dumps({"files": [{"file": "k.metal", "lines": lines}, {"file": "<other>", "lines": lines}]})


def test_a_branch_counts_as_taken_when_any_instantiation_took_it_and_throw_edges_are_not_branches():
    float_line = {"line_number": 7, "branches": [{"count": 3, "throw": False}, {"count": 0, "throw": False}]}
    half_line = {"line_number": 7, "branches": [{"count": 0, "throw": False}, {"count": 2, "throw": False}]}
    line10 = {"line_number": 10, "branches": [{"count": 5, "throw": False}, {"count": 0, "throw": False},
                                              {"count": 0, "throw": True}]}
    outside = {"line_number": 20, "branches": [{"count": 0, "throw": False}]}
    found = branches(_gcov([float_line, half_line, line10, outside]), Target("k.metal", ((2, 15),), FUNCTOR))
    assert (found.taken, found.total, found.summary) == (3, 4, "3 of 4 branches taken")
    assert untaken_lines(found) == ["k.metal:10: `if (2.0f * f + 1.0f >= 3.0f - low) {  // (1.75 - 1) / 2`: "
                                    "branch 1 of 2 never taken"]


def _strict_root(tmp_path) -> Path:
    """hypot with a branch no value of try takes: x * x == 2 (x = sqrt(2) is not a float)."""
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    kernel = root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = kernel.read_text(encoding="utf-8")
    start = text.index("struct hypot_functor {")
    at = text.index("{\n", text.index("operator()", start)) + 2
    kernel.write_text(text[:at] + "    if (float(a) * float(a) == 2.0f) {\n      return a;\n    }\n" + text[at:],
                      encoding="utf-8")
    return root


@needs_compiler
@needs_torch
def test_an_untaken_branch_warns_and_fails_only_with_strict(tmp_path):
    root = _strict_root(tmp_path)
    kernel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    line = (root / kernel).read_text(encoding="utf-8").split("\n").index("    if (float(a) * float(a) == 2.0f) {") + 1
    plain = run_cli(["-C", str(root), "try", "hypot", "--backend", "host", "--reference", "torch", "--format", "plain"])
    assert plain.exit_code == 0, plain.output
    untaken = f"untaken branch: {kernel}:{line}: `if (float(a) * float(a) == 2.0f) {{`: branch 0 of 2 never taken"
    assert untaken in plain.stdout.splitlines()
    assert "warning: try's values never take these branches, so it judged the body without them " \
           "(--strict makes this exit 1)" in plain.stdout
    strict = run_cli(["-C", str(root), "try", "hypot", "--backend", "host", "--reference", "torch", "--strict", "--json"])
    assert strict.exit_code == 1
    doc = json.loads(strict.stdout)
    coverage = doc["coverage"]
    assert coverage["measured"] and coverage["taken"] == coverage["total"] - 1
    assert coverage["untaken"] == [{"line": line, "code": "if (float(a) * float(a) == 2.0f) {", "branch": 0,
                                    "branches_on_line": 2}]
    assert doc["exit_code"] == 1 and all(r["status"] == "passed" for r in doc["dtypes"])


@needs_compiler
@needs_torch
def test_try_special_ndtri_takes_every_branch_of_the_catalog_body(tmp_path):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "special_ndtri"]).exit_code == 0
    done = run_cli(["-C", str(root), "try", "special_ndtri", "--backend", "host", "--reference", "torch", "--json",
                    "--strict"])
    assert done.exit_code == 0, done.output
    coverage = json.loads(done.stdout)["coverage"]
    assert coverage["measured"] and coverage["untaken"] == [] and coverage["taken"] == coverage["total"] > 10
    plain = run_cli(["-C", str(root), "try", "special_ndtri", "--backend", "host", "--reference", "torch",
                     "--format", "plain"])
    summary = [line for line in plain.stdout.splitlines() if line.startswith("branches: ")]
    ((first, last),) = coverage["lines"]
    assert summary == [f"branches: {coverage['taken']} of {coverage['total']} branches taken in special_ndtri_functor "
                       f"(aten/src/ATen/native/mps/kernels/UnaryKernel.metal:{first}-{last})"]


def test_a_derived_body_with_an_untaken_branch_is_written_not_checked_and_the_note_names_it(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from mpsgen.commands import bodycheck
    from mpsgen.commands.newop import plan_new_op
    from mpsgen.commands.tryop.coverage import Coverage, Untaken
    from mpsgen.facts.resolve import Options

    coverage = Coverage("k.metal", ((3, 9),), 3, 4, (Untaken(5, "if (a > 1.0f) {", 1, 2),))
    passed = [SimpleNamespace(metal_type="float", status="passed", cases=5, cpu_overflows=0)]
    monkeypatch.setattr(bodycheck, "torch_importable", lambda: True)
    monkeypatch.setattr(bodycheck, "cached_result", lambda kind, inputs, run: run())
    monkeypatch.setattr(bodycheck, "try_op", lambda *a, **k: SimpleNamespace(results=passed, untaken=True, coverage=coverage))
    plan = plan_new_op(Checkout(copy_checkout(tmp_path)), "copysign", Options(body="cpu"))
    notes = [n.message for n in plan.notes]
    assert "copysign: body from copysign's CPU kernel not checked: 3 of 4 branches taken by try's values: " \
           "k.metal:5: `if (a > 1.0f) {`: branch 1 of 2 never taken" in notes, notes
    assert any(e.path.endswith("BinaryKernel.metal") for e in plan.edits)  # written, as an unchecked body is
