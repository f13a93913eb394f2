"""Values a CPU lambda captures from its dispatch scope (issue 42, item 2): a copy of the stub's double
direct-initialised (`const scalar_t d(delta);`, a function declaration to a parser), a Scalar converted
once (`eps_scalar.to<scalar_t>()`), bounds computed from it (`scalar_t(1) - e`) and a branch on it
choosing between two lambdas. Each is a params field or the alpha operand, or computed in the functor
from one; the branch is a per-element select. The kernels are our own (tests/data/captured), laid over
a copy of the miniature, whose CPU files register none of these stubs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mpsgen.commands.tryop.reference import torch_unavailable
from mpsgen.facts.bodies import BodyRequest, resolve_body
from mpsgen.facts.resolve import resolve_op
from mpsgen.facts.translate import ParamRead, Untranslatable, translate_condition
from mpsgen.facts.views import Views
from mpsgen.facts.resolve import Options
from mpsgen.edit.workspace import Workspace
from mpsgen.read.checkout import Checkout
from mpsgen.read.cppsyntax import read_cpu_kernels
from mpsgen.read.kernelfile import NamespacePrefixes
from mpsgen.read.metalhost.compiler import find_compiler
from support import assert_golden, changed_files, copy_checkout, diff_paths, every_file, needs, run_cli

DATA = Path(__file__).parent / "data" / "captured"
KERNELS = "aten/src/ATen/native/cpu/CapturedKernels.cpp"
needs_try = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")
needs_torch = needs(torch_unavailable())


def _checkout(tmp_path: Path) -> Path:
    root = copy_checkout(tmp_path)
    shutil.copytree(DATA, root, dirs_exist_ok=True)
    return root


def _kernels():
    return read_cpu_kernels((DATA / KERNELS).read_text(encoding="utf-8"), KERNELS)


def test_a_direct_initialised_copy_of_a_scalar_is_a_scope_value():
    kernels = _kernels()
    (huber,) = kernels.lambdas("huber_kernel")
    assert [(name, kind, kernels.source.text_of(value)) for name, kind, value in huber.scope] == \
        [("d", "scalar_t", "delta")]
    smooth = kernels.lambdas("smooth_l1_kernel")
    # the bfloat16 branch's `const float b_f(static_cast<float>(beta));` is no bare name: not a copy
    assert [name for name, _, _ in smooth[0].scope] == []
    assert [name for name, _, _ in smooth[1].scope] == ["b"]


def test_a_branch_is_recorded_with_its_condition_expression():
    kernels = _kernels()
    first, second = kernels.lambdas("logit_kernel")
    assert first.conditions == ("!(iter.numel() == 0)", "(e < scalar_t(0))")
    assert [kernels.source.text_of(n) for n in first.condition_nodes] == ["iter.numel() == 0", "e < scalar_t(0)"]
    assert second.conditions == ("!(iter.numel() == 0)", "!(e < scalar_t(0))")


def test_a_condition_reading_only_the_scalars_translates_and_any_other_is_refused():
    kernels = _kernels()
    first, second = kernels.lambdas("logit_kernel")
    spelling = dict(metal="", c10="", c10_functions=frozenset(), known=lambda name: False)
    reads = (ParamRead("eps_scalar", "eps", "scalar"),)
    assert translate_condition(kernels.source, first, first.condition_nodes[1], params=reads, **spelling) == \
        "eps < scalar_t(0)"
    with pytest.raises(Untranslatable) as refused:
        translate_condition(kernels.source, first, first.condition_nodes[0], params=reads, **spelling)
    assert refused.value.reason == "the branch on `iter.numel() == 0` reads more than the stub's scalars"


def _offer(root: Path, op: str):
    from mpsgen.facts.paramskernel import field_enumerators
    from mpsgen.read.c10lib import checkout_functions

    views = Views(Workspace(Checkout(root)))
    spec = resolve_op(views, op, Options(), "migrate")
    params = None if spec.params is None else tuple((f.name, f.kind, field_enumerators(f)) for f in spec.params.fields)
    arity = spec.params.arity if spec.params is not None else spec.arity
    request = BodyRequest(views, spec.facts, op, spec.functor, arity, spec.alpha and params is None, None,
                          NamespacePrefixes("", ""), checkout_functions(views.ws), params=params,
                          alpha_name=spec.alpha_name)
    return resolve_body(request, forced="cpu").chosen


def test_the_offers_read_the_captured_values_as_fields_operands_and_expressions_of_them(tmp_path):
    root = _checkout(tmp_path)
    huber = _offer(root, "huber_loss")
    assert huber.expr == "huber_scalar(a, b, delta)"
    # as the file's text has it (clang-format lays out the written file)
    assert huber.helpers == ("template <typename scalar_t>\n"
                             "inline scalar_t huber_scalar(scalar_t x, scalar_t y, scalar_t delta) {\n"
                             "    auto gap = abs(x - y);\n"
                             "    return gap < delta ? static_cast<scalar_t>(0.5) * gap * gap : "
                             "delta * (gap - static_cast<scalar_t>(0.5) * delta);\n"
                             "  }\n",)
    smooth = _offer(root, "smooth_l1_loss")  # the float32 lambda; the dtype branch is no select
    assert smooth.expr == "smooth_l1_scalar(a, b, beta)"
    assert smooth.location.line == 39
    logit = _offer(root, "logit")
    assert logit.expr == "(eps < scalar_t(0)) ? (logit_then_scalar(x)) : (logit_scalar(x, eps))"
    assert logit.describe == "logit's CPU kernel, both branches on `(e < scalar_t(0))` selected per element"
    assert "  v = v < (eps) ? (eps) : (v > (scalar_t(1) - eps) ? (scalar_t(1) - eps) : v);\n" in logit.helpers[1]
    backward = _offer(root, "logit_backward")
    assert backward.expr == ("(alpha < scalar_t(0)) ? (logit_backward_then_scalar(a, b)) : "
                             "(logit_backward_scalar(a, b, alpha))")
    assert "  return (v < (alpha) || v > (scalar_t(1) - alpha)) ? scalar_t(0)\n" in backward.helpers[1]


@needs_try
@needs_torch
@pytest.mark.parametrize("op", ["huber_loss", "logit", "logit_backward"])
def test_migrate_writes_the_cpu_body_and_verify_and_try_pass(tmp_path, op):
    root = _checkout(tmp_path)
    before = every_file(root)
    dry = run_cli(["-C", str(root), "migrate", op, "--dry-run"])
    assert dry.exit_code == 0, dry.stderr
    assert every_file(root) == before
    assert_golden(dry.stdout, f"captured/{op}.diff")
    done = run_cli(["-C", str(root), "migrate", op])
    assert done.exit_code == 0, done.stderr
    after = every_file(root)
    assert {p for p in changed_files(before, after) if not p.startswith(".mpsgen")} == diff_paths(dry.stdout)
    again = run_cli(["-C", str(root), "migrate", op])
    assert again.exit_code == 0, again.stderr
    assert every_file(root) == after
    verify = run_cli(["-C", str(root), "verify", op, "--static-only"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    tried = run_cli(["-C", str(root), "try", op, "--backend", "host", "--json"])
    assert tried.exit_code == 0, tried.stdout + tried.stderr
    assert every_file(root) == after
    assert {r["status"] for r in json.loads(tried.stdout)["dtypes"]} <= {"passed", "skipped"}


@needs_try
@needs_torch
def test_smooths_l1s_cpu_body_is_written_where_cpu_rounds_beta_to_half_with_the_cases_named(tmp_path):
    # CPU's half kernel holds beta in half (1e6 -> inf, so |d| - beta/2 at |d| = inf is inf - inf = NaN);
    # the functor holds it at float and gives inf, the op's value in float64: try's rule for a body more
    # accurate than CPU (issue 42, item 1) passes it and the note names those cases
    root = _checkout(tmp_path)
    dry = run_cli(["-C", str(root), "migrate", "smooth_l1_loss", "--dry-run"])
    assert dry.exit_code == 0, dry.stderr
    notes = " ".join(dry.stderr.split())
    assert "body: from aten/src/ATen/native/cpu/CapturedKernels.cpp:39, smooth_l1_loss's CPU kernel" in notes
    assert ("nearer the op computed in float64 than CPU (CPU rounds an intermediate to the input type; the kernel "
            "computes at opmath): (0.0, inf) gave inf, CPU nan, float64 inf; (0.0, -inf) gave inf, CPU nan, "
            "float64 inf;") in notes
    assert "    return static_cast<T>(smooth_l1_scalar(a, b, beta));\n" in dry.stdout.replace("+    ", "    ")
    assert "#error" not in dry.stdout


def test_a_kernel_parameter_read_as_it_is_is_its_field_and_a_gradient_serves_floating_dtypes_only(tmp_path):
    # huber_backward's params need a launcher the miniature's library cannot take: asked directly
    from mpsgen.facts.views import read_op
    from mpsgen.read.c10lib import checkout_functions

    root = _checkout(tmp_path)
    views = Views(Workspace(Checkout(root)))
    facts = read_op(views, "huber_loss_backward")
    request = BodyRequest(views, facts, "huber_loss_backward", "huber_backward", 3, False, None,
                          NamespacePrefixes("", ""), checkout_functions(views.ws),
                          params=(("norm", "scalar", ()), ("delta", "double", ())))
    offer = resolve_body(request, forced="cpu").chosen
    assert offer.expr == "huber_backward_scalar(a, b, c, norm, delta)"
    assert "  if (d <= -delta) {\n" in offer.helpers[0] and "      return -norm * g * delta;\n" in offer.helpers[0]
    assert offer.supports == ("float",)  # AT_DISPATCH_ALL_TYPES: its integer types are no gradient
