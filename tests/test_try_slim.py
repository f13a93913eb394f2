"""try's host build: the whole program checked, then built with only the tried functor's
registrations instantiated (`mpsgen.read.metalhost.slim`), with the same outcome as the whole
program built: the same values and coverage, the same errors, another functor's included."""

from __future__ import annotations

from mpsgen.commands.tryop import run
from mpsgen.commands.tryop.api import TryOptions, report_to_json, try_op
from mpsgen.read.checkout import Checkout
from mpsgen.read.metalhost.compiler import find_compiler
from mpsgen.read.metalhost.slim import declare_only
from support import copy_checkout, needs, run_cli

BINARY = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
COMPILER = find_compiler()[0]
needs_gcc = needs(None if COMPILER is not None and COMPILER.family == "gcc" else "no g++ (the slim build is g++'s)")


def test_other_functors_explicit_instantiations_become_declarations_and_nothing_else_changes():
    text = (
        '# 1 "kernels/K.metal"\n'
        "template <typename T> void run(T x);\n"
        "template void run<float>(float);\n"
        'static_assert(true, "template x"); template void ::c10::metal::unary_dense<float, exp_functor>(float*);\n'
        "  template void ::c10::metal::unary_dense<half, logit_functor>(half*);\n"
        "template struct holder<int>;\n"
        "extern template void run<int>(int);\n"
        "template <> void run<char>(char) {}\n"
        "void f() { x.template get<0>(); T::template apply<1>(); }\n"
        "# 7 \"kernels/K.metal\"\n"
        "template\n"
        "  void run<double>(double);\n"
    )
    slim, count = declare_only(text, "logit")
    assert count == 4
    assert slim == (
        '# 1 "kernels/K.metal"\n'
        "template <typename T> void run(T x);\n"
        "extern template void run<float>(float);\n"
        'static_assert(true, "template x"); extern template void ::c10::metal::unary_dense<float, exp_functor>(float*);\n'
        "  template void ::c10::metal::unary_dense<half, logit_functor>(half*);\n"
        "extern template struct holder<int>;\n"
        "extern template void run<int>(int);\n"
        "template <> void run<char>(char) {}\n"
        "void f() { x.template get<0>(); T::template apply<1>(); }\n"
        "# 7 \"kernels/K.metal\"\n"
        "extern template\n"
        "  void run<double>(double);\n"
    )
    assert declare_only(slim, "logit") == (slim, 0)  # a second pass changes nothing


@needs_gcc
def test_the_slim_build_gives_the_whole_builds_values_and_coverage(tmp_path, monkeypatch):
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    declared = []
    real = run.declare_only
    monkeypatch.setattr(run, "declare_only", lambda text, functor: declared.append(real(text, functor)[1]) or
                        real(text, functor))
    options = TryOptions(backend="host", reference="catalog", samples=8)
    slim = report_to_json(try_op(Checkout.find(root), "hypot", options))
    assert declared and declared[0] > 0  # the other functors' registrations were declared only
    monkeypatch.setattr(run, "_slim_build", lambda command, functor: None)  # the whole program built
    whole = report_to_json(try_op(Checkout.find(root), "hypot", options))
    assert slim == whole
    assert slim["coverage"]["measured"] and slim["exit_code"] == 0


@needs_gcc
def test_an_error_another_functors_registrations_alone_reach_is_still_named_as_pre_existing(tmp_path):
    # an error only an instantiation reaches (a member of T): the slim build instantiates no other
    # functor; the whole program's check does, and names it as before
    root = copy_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "hypot"]).exit_code == 0
    path = root / BINARY
    text = path.read_text(encoding="utf-8")
    assert text.count("return c10::metal::max(a, b);") == 1
    text = text.replace("return c10::metal::max(a, b);", "return c10::metal::max(a, b.no_such_member);", 1)
    path.write_text(text, encoding="utf-8")
    line = text[: text.index("no_such_member")].count("\n") + 1
    result = run_cli(["-C", str(root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"mpsgen: error: {BINARY}:{line}: ")
    assert "no_such_member" in first
    assert first.endswith("(pre-existing: in maximum_functor, not hypot_functor; the whole kernel file must compile "
                          "for try to run hypot_functor on the host)")
