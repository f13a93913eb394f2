//  MPS -> MPS copies through the copy kernels (ours, in the shape of the real operations/Copy.mm)
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/TensorIterator.h>
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
#ifndef PYTORCH_JIT_COMPILE_SHADERS
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();
#else
#include <ATen/native/mps/Copy_metallib.h>
#endif

namespace mps {

// a copy that also materialises the conjugate bit when source and destination disagree on it
static void copy_cast_kernel_mps(Tensor& dst, const Tensor& src) {
  auto iter = TensorIteratorConfig().check_all_same_dtype(false).add_output(dst).add_input(src).build();
  const auto name = src.is_conj() != dst.is_conj() ? "copy_conj" : "copy_identity";
  lib.exec_unary_kernel(iter, name);
}

} // namespace mps
} // namespace at::native
