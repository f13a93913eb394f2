"""mpsgen/params.py on small inputs: which stubs are params stubs, the model built from stub + schema,
the header and include edits in each file style."""

from __future__ import annotations

import pytest

from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.nfyaml import NativeFunctions
from mpsgen.facts.params import build_params, camel_case, family_header, is_params_stub
from mpsgen.edit.params import plan_header, plan_include
from mpsgen.read.stubs import Stub
from mpsgen.edit.templates import Templates

KERNELS = "aten/src/ATen/native/mps/kernels"


def stub(*params: str, name: str = "x_stub") -> Stub:
    return Stub(name, "x_fn", params, Location("aten/src/ATen/native/X.h", 3), Location("aten/src/ATen/native/X.h", 2))


def entry(schema: str):
    text = f"- func: {schema}\n  dispatch:\n    CPU, CUDA: x_out\n"
    return NativeFunctions(text, "native_functions.yaml").entries[0]


@pytest.mark.parametrize(
    "params, expected",
    [
        (("TensorIteratorBase&", "const Scalar&", "const Scalar&"), True),
        (("TensorIterator&", "const Scalar&", "const Scalar&"), True),
        (("TensorIteratorBase&", "std::optional<double>", "std::optional<double>", "std::optional<double>"), True),
        (("TensorIteratorBase&", "const Scalar&", "bool"), True),
        (("TensorIteratorBase&", "const Scalar&"), False),  # the alpha form of the plain kernels
        (("TensorIteratorBase&",), False),
        (("TensorIteratorBase&", "int64_t"), False),
        (("const Tensor&", "const Scalar&", "const Scalar&"), False),
    ],
)
def test_params_stubs_are_an_iterator_and_scalars(params, expected):
    assert is_params_stub(stub(*params)) is expected


def test_names_of_struct_macro_and_header():
    spec = build_params(stub("TensorIteratorBase&", "const Scalar&", "const Scalar&", name="softplus_backward_stub"),
                        entry("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor"),
                        "softplus_backward", f"{KERNELS}/ActivationKernel.metal", 2)
    assert (spec.struct, spec.macro, spec.header) == (
        "SoftplusBackwardParams", "REGISTER_SOFTPLUS_BACKWARD_OP", f"{KERNELS}/Activation.h")
    assert spec.include == "ATen/native/mps/kernels/Activation.h"
    assert camel_case("nan_to_num") == "NanToNum"
    assert family_header(f"{KERNELS}/PointwiseOps.metal") == f"{KERNELS}/PointwiseOps.h"


def test_fields_follow_the_schema_even_when_tensors_come_between():
    spec = build_params(
        stub("TensorIteratorBase&", "const Scalar&", "const Scalar&", "const Scalar&", "bool"),
        entry("elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result, "
              "Tensor self_or_result) -> Tensor"),
        "elu_backward", f"{KERNELS}/ActivationKernel.metal", 2)
    assert [(f.name, f.kind) for f in spec.fields] == [
        ("alpha", "scalar"), ("scale", "scalar"), ("input_scale", "scalar"), ("is_result", "bool")]
    assert [line for f in spec.fields for line in f.struct_lines] == [
        "T alpha;", "T scale;", "T input_scale;", "bool is_result;"]
    assert [i for f in spec.fields for i in f.host_inits] == [
        "alpha.to<scalar_t>()", "scale.to<scalar_t>()", "input_scale.to<scalar_t>()", "is_result"]


def test_an_optional_carries_its_value_and_flag_with_the_default_resolved_on_the_host():
    spec = build_params(stub("TensorIteratorBase&", "std::optional<double>"),
                        entry("logit(Tensor self, float? eps=None) -> Tensor"), "logit",
                        f"{KERNELS}/UnaryKernel.metal", 1, {"eps": "scalar_t(-1)"})
    (field,) = spec.fields
    assert field.struct_lines == ("T eps;", "bool has_eps;")
    assert field.host_inits == ("eps.has_value() ? static_cast<scalar_t>(*eps) : scalar_t(-1)", "eps.has_value()")
    assert spec.expr_names == ("eps", "has_eps")


def test_a_stub_with_more_parameters_than_the_schema_is_refused():
    with pytest.raises(MpsgenError) as caught:
        build_params(stub("TensorIterator&", "const Scalar&", "double"),
                     entry("huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor"),
                     "huber_backward", f"{KERNELS}/PointwiseOps.metal", 3)
    assert caught.value.message == (
        "x_stub takes 2 parameters besides the iterator (const Scalar&, double) but huber_loss_backward has "
        "1 non-tensor arguments (reduction) (no call of the stub in aten/src/ATen/native/*.cpp says what the shared "
        "function passes)")
    assert str(caught.value.location) == "aten/src/ATen/native/X.h:2"


# ---- header and include edits --------------------------------------------------------------------


def workspace(tmp_path, files: dict[str, str]) -> Workspace:
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text("")
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    return Workspace(Checkout(tmp_path))


def spec_for(kernel_file: str = f"{KERNELS}/FooKernel.metal"):
    return build_params(stub("TensorIteratorBase&", "const Scalar&", "const Scalar&", name="foo_stub"),
                        entry("foo(Tensor self, Scalar lo, Scalar hi) -> Tensor"), "foo", kernel_file, 1)


def test_a_header_without_siblings_is_just_pragma_once(tmp_path):
    ws = workspace(tmp_path, {})
    ws.apply(plan_header(ws, Templates(), spec_for()))
    assert ws.read(f"{KERNELS}/Foo.h") == "#pragma once\n\ntemplate <typename T>\nstruct FooParams {\n  T lo;\n  T hi;\n};\n"
    assert ws.plan().edits[0].created


def test_a_header_keeps_crlf_and_a_missing_final_newline(tmp_path):
    rel = f"{KERNELS}/Foo.h"
    ws = workspace(tmp_path, {rel: "#pragma once\r\n\r\n// nothing yet"})
    ws.apply(plan_header(ws, Templates(), spec_for()))
    assert ws.read(rel) == (
        "#pragma once\r\n\r\n// nothing yet\r\n\r\ntemplate <typename T>\r\nstruct FooParams {\r\n  T lo;\r\n  T hi;\r\n};\r\n")


def test_include_goes_to_its_sorted_place_in_a_sorted_block(tmp_path):
    rel = f"{KERNELS}/FooKernel.metal"
    ws = workspace(tmp_path, {rel: "#include <c10/metal/indexing.h>\n#include <metal_stdlib>\nusing namespace metal;\n"})
    ws.apply(plan_include(ws.read(rel), rel, "ATen/native/mps/kernels/Foo.h"))
    assert ws.read(rel).startswith("#include <ATen/native/mps/kernels/Foo.h>\n#include <c10/metal/indexing.h>\n")


def test_include_goes_after_an_unsorted_block_and_not_into_preprocessor_branches(tmp_path):
    rel = "aten/src/ATen/native/mps/operations/Foo.mm"
    text = ("// comment\n#include <b.h>\n#include <a.h>\n\n#ifndef AT_PER_OPERATOR_HEADERS\n#include <ATen/Functions.h>\n"
            "#endif\n")
    ws = workspace(tmp_path, {rel: text})
    ws.apply(plan_include(ws.read(rel), rel, "ATen/native/mps/kernels/Foo.h"))
    assert ws.read(rel) == text.replace("#include <a.h>\n", "#include <a.h>\n#include <ATen/native/mps/kernels/Foo.h>\n")


def test_include_already_there_changes_nothing(tmp_path):
    rel = f"{KERNELS}/FooKernel.metal"
    text = "#include <metal_stdlib>\n#include <ATen/native/mps/kernels/Foo.h>\n"
    ws = workspace(tmp_path, {rel: text})
    ws.apply(plan_include(ws.read(rel), rel, "ATen/native/mps/kernels/Foo.h"))
    assert ws.read(rel) == text


def test_an_include_in_a_comment_does_not_count(tmp_path):
    rel = f"{KERNELS}/FooKernel.metal"
    text = "// #include <ATen/native/mps/kernels/Foo.h>\n#include <metal_stdlib>\n"
    ws = workspace(tmp_path, {rel: text})
    ws.apply(plan_include(ws.read(rel), rel, "ATen/native/mps/kernels/Foo.h"))
    assert ws.read(rel) == text.replace("#include <metal_stdlib>\n", "#include <ATen/native/mps/kernels/Foo.h>\n#include <metal_stdlib>\n")


def test_an_op_without_catalog_body_gets_a_placeholder_that_stops_the_build():
    from mpsgen.facts.paramskernel import find_params_body, render_params_functor

    body = find_params_body(op="foo", name="foo", params=spec_for(), expr=None, dtypes=None)
    assert (body.source, body.supports, body.defaults) == ("placeholder", ("float", "integer", "bool"), ("float",))
    choice = render_params_functor(Templates(), body, name="foo", params=spec_for(), expr=None, groups=("float",))
    assert choice.text == (
        "struct foo_functor {\n"
        "  // mpsgen: write the body, then delete the #error line.\n"
        "  // Kind: unary; params: lo, hi.\n"
        "  // Dtype groups: float.\n"
        '#error "mpsgen: write the body of this functor, then delete this line"\n'
        "  template <typename T>\n"
        "  inline T operator()(const T x, const FooParams<T> params) {\n"
        "    return x;\n"
        "  }\n"
        "};\n"
    )


def test_a_created_header_gets_the_usual_file_mode_not_a_temp_files(tmp_path):
    import os
    import stat

    from mpsgen.edit.apply import apply_plan

    ws = workspace(tmp_path, {f"{KERNELS}/FooKernel.metal": "#include <metal_stdlib>\n"})
    ws.apply(plan_header(ws, Templates(), spec_for()))
    old = os.umask(0o022)
    try:
        apply_plan(ws.plan())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / KERNELS / "Foo.h").stat().st_mode) == 0o644


def test_a_wrapped_header_without_structs_gets_the_struct_before_its_else(tmp_path):
    rel = f"{KERNELS}/Foo.h"
    text = "#if !defined(STABLE)\n#pragma once\n\n#else\n#error \"no\"\n#endif\n"
    ws = workspace(tmp_path, {rel: text})
    ws.apply(plan_header(ws, Templates(), spec_for()))
    assert ws.read(rel) == text.replace("\n#else", "\ntemplate <typename T>\nstruct FooParams {\n  T lo;\n  T hi;\n};\n\n#else")
    assert [str(c) for c in ws.plan().changes] == [f"{rel}:5: params-struct: struct FooParams"]


LIBRARY = "aten/src/ATen/native/mps/MetalShaderLibrary.h"


def test_scan_tiers_of_params_stubs(tmp_path):
    from mpsgen.facts.views import DispatchSite, Views
    from mpsgen.facts.paramskernel import params_candidate
    from mpsgen.facts.resolve import generation_problem

    softplus = entry("softplus.out(Tensor self, Scalar beta=1, Scalar threshold=20, *, Tensor(a!) out) -> Tensor(a!)")
    shared = (DispatchSite(softplus, softplus.dispatch[0]),)
    two = stub("TensorIteratorBase&", "const Scalar&", "const Scalar&", name="softplus_stub")
    three = stub("TensorIteratorBase&", "const Scalar&", "const Scalar&", "bool", name="softplus_stub")
    both = "void exec_unary_kernel_with_params(TensorIteratorBase& iter);\nvoid exec_binary_kernel_with_params(TensorIteratorBase& iter);\n"

    def problem(library: str, declared: Stub, root) -> str | None:
        views = Views(workspace(root, {LIBRARY: library}))
        found = generation_problem(views, "softplus", shared, (), declared, "", "new-op", entries=(softplus,))
        return None if found is None else found.message

    assert problem(both, two, tmp_path / "a") is None
    views = Views(workspace(tmp_path / "b", {LIBRARY: both}))
    assert params_candidate(views, "softplus", shared, two, "softplus", {}, "mpsgraph") == (
        "expr", "params stub (beta, threshold in SoftplusParams), no catalog body: pass --expr over x and beta, threshold")
    binary_only = "void exec_binary_kernel_with_params(TensorIteratorBase& iter);\n"
    assert problem(binary_only, two, tmp_path / "c") == (
        "softplus_stub (void(*)(TensorIteratorBase&, const Scalar&, const Scalar&)) needs "
        "MetalShaderLibrary::exec_unary_kernel_with_params, which this checkout's "
        "aten/src/ATen/native/mps/MetalShaderLibrary.h does not declare")
    assert problem(both, three, tmp_path / "d").startswith("softplus_stub takes 3 parameters besides the iterator")


def test_an_optional_without_a_known_default_is_reported(tmp_path):
    from mpsgen.facts.views import OpFacts, Views
    from mpsgen.facts.paramskernel import choose_params_kernel
    from mpsgen.edit.pipeline import StepContext, host_step
    from mpsgen.facts.plan import OpPlan
    from mpsgen.facts.resolve import Options

    class Spec:  # what the params kernel choice and the host step read of an OpSpec
        op = functor = "foo"
        arity = 1
        alpha = False
        alpha_name = "alpha"
        facts = OpFacts("foo", (entry("foo(Tensor self, float? lo=None, float? hi=None) -> Tensor"),), (), (), None, "",
                        (), (), None, "foo", (), None, (), ())
        kernel_file = f"{KERNELS}/FooKernel.metal"
        host_file = "aten/src/ATen/native/mps/operations/FooKernel.mm"
        iterator_type = "TensorIteratorBase&"
        compiled = None  # no functor compiled under another name (OpSpec.compiled)
        stub = stub("TensorIteratorBase&", "std::optional<double>", "std::optional<double>", name="foo_stub")
        params = build_params(stub, entry("foo(Tensor self, float? lo=None, float? hi=None) -> Tensor"), "foo",
                              kernel_file, 1, {"hi": "scalar_t(1)"})

    ws = workspace(tmp_path, {
        Spec.kernel_file: "#include <c10/metal/indexing.h>\n",
        Spec.host_file: "#include <ATen/native/mps/OperationUtils.h>\n\nnamespace at::native {\n} // namespace at::native\n",
        "c10/metal/indexing.h": "#define REGISTER_UNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO) x\n",
    })
    views = Views(ws)
    choice = choose_params_kernel(views, Templates(), Spec, Options())
    for change in host_step(StepContext(views, Templates(), OpPlan(Spec, choice))):
        ws.apply(change)
    notes = [str(n) for n in choice.notes]
    assert notes == ["FooParams.lo: no catalog default for an unset lo; the host passes 0 with has_lo = false "
                     "(resolve it as the CPU kernel does, in the host or the functor)"]
    assert [n.kind for n in choice.notes] == ["todo"]
    host = ws.read(Spec.host_file)
    assert "lo.has_value() ? static_cast<scalar_t>(*lo) : scalar_t(0)" in host
    assert "hi.has_value() ? static_cast<scalar_t>(*hi) : scalar_t(1)" in host
