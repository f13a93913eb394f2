"""Host-file registration helpers with several parameters: a `#define` that defines an MPSGraph kernel per
op and registers it (`REGISTER_X(func, graph_method)` -> `REGISTER_DISPATCH(func##_stub, ...)`), as
upstream's UnaryOps.mm does for the ops still served by MPSGraph through their stub. The text below is
written for this test in that shape."""

from __future__ import annotations

from mpsgen.facts.rules import MPSGRAPH
from mpsgen.facts.views import HostView
from mpsgen.read.cpp import mask_code

PATH = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
TEXT = r"""namespace at::native {

#define REGISTER_GRAPH_UNARY_STUB(func, graph_method)                          \
  static void graph_##func##_kernel(TensorIteratorBase& iter) {                \
    mps::unary_op(iter.input(0), iter.output(0), __func__,                     \
                  ^MPSGraphTensor*(MPSGraph * mpsGraph, MPSGraphTensor * x) {  \
                    return [mpsGraph graph_method##WithTensor:x name:nil];     \
                  });                                                          \
  }                                                                            \
  REGISTER_DISPATCH(func##_stub, graph_##func##_kernel)

REGISTER_GRAPH_UNARY_STUB(asinh, asinh);
REGISTER_GRAPH_UNARY_STUB(trunc, truncate);

static void logit_kernel(TensorIteratorBase& iter) {
  lib.exec_unary_kernel(iter, "logit");
}
REGISTER_DISPATCH(logit_stub, &logit_kernel);

} // namespace at::native
"""


def test_each_call_of_a_two_parameter_helper_is_a_registration_at_its_line():
    view = HostView.read(TEXT, PATH)
    assert [(r.stub, r.function, r.location.line) for r in view.registrations] == [
        ("logit_stub", "logit_kernel", 18),
        ("asinh_stub", "REGISTER_GRAPH_UNARY_STUB(asinh)", 12),
        ("trunc_stub", "REGISTER_GRAPH_UNARY_STUB(trunc)", 13),
    ]


def test_its_host_function_is_the_macro_body_an_mpsgraph_kernel_without_a_metal_name():
    view = HostView.read(TEXT, PATH)
    asinh = next(r for r in view.registrations if r.stub == "asinh_stub")
    function = view.function(asinh)
    assert function.params == ("TensorIteratorBase&",)
    assert function.kernel is None and MPSGRAPH.search(mask_code(function.body))
    logit = view.function(next(r for r in view.registrations if r.stub == "logit_stub"))
    assert logit.kernel == "logit" and not MPSGRAPH.search(mask_code(logit.body))


def test_a_new_native_section_stands_apart_from_the_code_above_it():
    """A host file with no native section yet (the last function's brace right above the
    namespace's end, no newline at the end of the file, as one upstream file has it): the
    section opens after a blank line, the rest of the file byte for byte as it was."""
    from mpsgen.edit.host import plan_host
    from mpsgen.edit.templates import Templates

    head = "#include <x.h>\n\nnamespace at::native {\nstatic void f() {\n  g();\n}\n"
    tail = "} // namespace at::native"
    change = plan_host(head + tail, Templates(None), "o/UnaryKernel.mm", stub="sgn_stub", functor="sgn", arity=1,
                       alpha=False, iterator_type="TensorIteratorBase&", kernel_stem="UnaryKernel", registered=[])
    assert change.text == head + (
        "\n#ifndef PYTORCH_JIT_COMPILE_SHADERS\n"
        "static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();\n"
        "#else\n#include <ATen/native/mps/UnaryKernel_metallib.h>\n#endif\n\n"
        "static void sgn_mps_kernel(TensorIteratorBase& iter) {\n"
        '  lib.exec_unary_kernel(iter, "sgn");\n}\n\n'
        "REGISTER_DISPATCH(sgn_stub, &sgn_mps_kernel)\n\n"
    ) + tail
    spaced = plan_host(head + "\n" + tail, Templates(None), "o/UnaryKernel.mm", stub="sgn_stub", functor="sgn",
                       arity=1, alpha=False, iterator_type="TensorIteratorBase&", kernel_stem="UnaryKernel",
                       registered=[])
    assert spaced.text == change.text  # a blank line there already: none added
