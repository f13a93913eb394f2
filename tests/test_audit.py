"""`mpsgen audit` (issue 47): try's comparison over a checkout's native kernels, findings by kind,
a reproducer a Mac user pastes as is, exit codes as verify's.

The squaring hypot is our own fixture: the miniature given a hypot kernel by `new-op --expr` whose
body squares in float (the construct of upstream's 2.13 functor), so hypot(0, 3.4e38) overflows to
inf where CPU gives 3.4e38."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from mpsgen.commands.audit import (
    COMPLEX_SPECIAL,
    INF_NAN,
    INTEGER,
    OUTPUT_TYPE,
    OVERFLOW,
    PRECISION,
    SIGNED_ZERO,
    Case,
    classify,
    functor_code,
    reproducer,
    uncertainty,
)
from mpsgen.commands.tryop.compare import Mismatch
from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, needs, run_cli

needs_run = needs(torch_unavailable() or (None if find_compiler()[0] is not None else "no C++ compiler"))

KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
SQUARING = "sqrt(a * a + b * b)"
HYPOT_REPRODUCER = ('import torch; a = torch.tensor([0.0], dtype=torch.float32, device="mps"); '
                    'b = torch.tensor([3.4028234663852886e+38], dtype=torch.float32, device="mps"); '
                    'print(torch.hypot(a, b).cpu(), torch.hypot(a.cpu(), b.cpu()))')


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _with_hypot(tmp_path: Path, expr: str) -> Path:
    root = copy_checkout(tmp_path)
    done = run_cli(["-C", str(root), "new-op", "hypot", "--expr", expr])
    assert done.exit_code == 0, done.output
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    return root


@needs_run
def test_the_squaring_hypot_is_an_overflow_finding_with_its_reproducer(tmp_path):
    root = _with_hypot(tmp_path, SQUARING)
    done = run_cli(["-C", str(root), "audit", "hypot", "--json"])
    assert done.exit_code == 1, done.output
    report = json.loads(done.stdout)
    (op,) = report["ops"]
    assert (op["op"], op["status"], op["functor"], op["path"]) == ("hypot", "findings", "hypot_functor", KERNEL)
    overflow = [f for f in op["findings"] if f["kind"] == OVERFLOW and f["dtype"] == "float32"]
    assert len(overflow) == 1
    first = overflow[0]["cases"][0]
    assert first == {"inputs": [0.0, 3.4028234663852886e+38], "mps": "inf", "cpu": 3.4028234663852886e+38}
    assert overflow[0]["reproducer"] == HYPOT_REPRODUCER
    assert overflow[0]["uncertain"] is None  # sqrt and * are correctly rounded in Metal: nothing to doubt
    # every mismatch try finds is sorted into a kind, not only the ten examples try prints, and so is
    # every case try's verdict notes beyond upstream's samples (here: overflows at the top of float's range)
    tried = json.loads(run_cli(["-C", str(root), "try", "hypot", "--json"]).stdout)
    float32 = next(d for d in tried["dtypes"] if d["dtype"] == "float32")
    assert float32["mismatches"] > len(float32["examples"]) == 10
    assert float32["edge_overflows"] > 0
    found32 = [f for f in op["findings"] if f["dtype"] == "float32"]
    assert sum(f["count"] for f in found32) == (float32["mismatches"] + float32["edge_overflows"]
                                                + float32["beyond_samples"])
    assert all(f["unclassified"] == 0 and len(f["cases"]) <= 10 for f in found32)
    assert {f["kind"] for f in found32} == {OVERFLOW, INF_NAN}  # hypot(inf, nan): NaN where CPU gives inf
    assert report["by_kind"][OVERFLOW] >= 1
    # read-only: the checkout is byte-identical, ignored files included
    assert _git(root, "status", "--porcelain", "--ignored") == ""
    # the plain report lists the kind and the same reproducer
    plain = run_cli(["-C", str(root), "audit", "hypot"])
    assert plain.exit_code == 1
    assert "== overflow: overflow of an intermediate" in plain.stdout
    assert f"  reproduce: {HYPOT_REPRODUCER}" in plain.stdout.splitlines()
    markdown = run_cli(["-C", str(root), "audit", "hypot", "--markdown"])
    assert markdown.exit_code == 1
    assert f"```python\n{HYPOT_REPRODUCER}\n```" in markdown.stdout


@needs_run
def test_a_hypot_that_scales_before_squaring_is_not_reported(tmp_path):
    # the precise formulation: the larger magnitude factored out, so nothing squared overflows
    precise = ("fmax(fabs(a), fabs(b)) == 0 ? 0.0f : fmax(fabs(a), fabs(b)) * sqrt(1.0f + "
               "(fmin(fabs(a), fabs(b)) / fmax(fabs(a), fabs(b))) * (fmin(fabs(a), fabs(b)) / fmax(fabs(a), fabs(b))))")
    root = _with_hypot(tmp_path, precise)
    done = run_cli(["-C", str(root), "audit", "hypot", "--json", "--jobs", "1"])
    report = json.loads(done.stdout)
    kinds = {(f["dtype"], f["kind"]) for f in report["ops"][0]["findings"]}
    assert (("float32", OVERFLOW) not in kinds), kinds
    assert not any(k == OVERFLOW for _, k in kinds)


@needs_run
def test_ops_try_cannot_run_are_listed_with_the_reason_and_do_not_fail(tmp_path):
    root = copy_checkout(tmp_path)
    done = run_cli(["-C", str(root), "audit", "special_entr", "--json"])
    assert done.exit_code == 0, done.output
    (op,) = json.loads(done.stdout)["ops"]
    assert op["status"] == "not-run"
    assert op["reason"] == ("aten/src/ATen/native/native_functions.yaml:900: special_entr has no native Metal kernel "
                            "to run in this checkout (give it one with `mpsgen new-op special_entr`)")


def test_bad_usage_is_exit_2(tmp_path):
    root = copy_checkout(tmp_path)
    done = run_cli(["-C", str(root), "audit", "no_such_op"])
    assert done.exit_code == 2
    both = run_cli(["-C", str(root), "audit", "abs", "--json", "--markdown"])
    assert both.exit_code == 2
    assert json.loads(both.stdout)["error"] == "--json and --markdown are two output formats"


# ---- classification and the words of a finding ----------------------------------------------------

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize(("metal_type", "case", "kind"), [
    ("float", Mismatch((0.0, 3.4e38), INF, 3.4e38), OVERFLOW),
    ("float", Mismatch((1.0, NAN), 0.5, NAN), INF_NAN),
    ("float", Mismatch((INF, 1.0), NAN, INF), INF_NAN),
    ("float", Mismatch((1.0, -0.0), -INF, INF), SIGNED_ZERO),
    ("float2", Mismatch((complex(INF, NAN),), complex(NAN, 0), INF), COMPLEX_SPECIAL),
    ("float", Mismatch((1.0, 3.0), 1.5, 1.0), PRECISION),
    ("int", Mismatch((2147483647,), -2147483648, 2147483647), INTEGER),
])
def test_each_mismatch_has_its_kind(metal_type, case, kind):
    assert classify(metal_type, metal_type, case) == kind


def test_a_precision_finding_after_a_bounded_builtin_says_it_is_not_certain():
    code = "struct f_functor { float operator()(float x) { return exp(x) - 1.0f; } };"
    said = uncertainty(PRECISION, "float", (Case((1e-8,), 2e-8, 1e-8),), code)
    assert said.startswith("the kernel calls exp, which Metal computes within its accuracy table's ulp bound")
    assert uncertainty(OVERFLOW, "float", (Case((3e38,), INF, 3e38),), code) == ""
    assert "fast::exp" in uncertainty(INF_NAN, "float", (Case((NAN,), 0.0, NAN),), code.replace("exp(", "fast::exp("))
    assert "which zero" in uncertainty(SIGNED_ZERO, "float", (Case((-0.0, 0.0), -INF, INF),), "fmax(a, b)")
    assert "subnormal" in uncertainty(PRECISION, "float", (Case((1e-40,), 1.0, 0.0),), "a * b")
    assert "output type" in uncertainty(OUTPUT_TYPE, "float2", (), "x")


def test_the_functor_code_is_its_struct_and_the_helpers_it_calls():
    source = ("inline float helper(float x) { return log(x); }\n"
              "inline float other(float x) { return exp(x); }\n"
              "struct g_functor { float operator()(float x) { return helper(x); } };\n")
    code = functor_code(source, "g_functor")
    assert "log(x)" in code and "exp(x)" not in code


def test_a_reproducer_passes_scalars_and_special_values():
    line = reproducer("torch.ops.aten.softplus.default", "float16", Case((-INF,), NAN, 0.0), "beta=2, threshold=20")
    assert line == ('import torch; a = torch.tensor([-float("inf")], dtype=torch.float16, device="mps"); '
                    'print(torch.ops.aten.softplus.default(a, beta=2, threshold=20).cpu(), '
                    'torch.ops.aten.softplus.default(a.cpu(), beta=2, threshold=20))')
    assert "complex(float(\"inf\"), float(\"nan\"))" in reproducer("torch.abs", "complex64", Case((complex(INF, NAN),), 0, 0), "")


def test_a_builtin_called_through_its_namespace_is_not_the_source_function_of_that_name():
    # upstream's hypot: precise::sqrt is Metal's; the source's own complex sqrt (and what it calls) is not run
    source = ("inline float2 sqrt(float2 x) { return fast::divide(x, 2.0f); }\n"
              "struct hypot_functor { float operator()(float a, float b) { return precise::sqrt(a * a + b * b); } };\n")
    code = functor_code(source, "hypot_functor")
    assert "fast::divide" not in code
    assert uncertainty(OVERFLOW, "float", (Case((0.0, 3.4e38), INF, 3.4e38),), code) == ""
    unqualified = functor_code(source.replace("precise::sqrt(a", "sqrt(a"), "hypot_functor")
    assert "fast::divide" in unqualified
