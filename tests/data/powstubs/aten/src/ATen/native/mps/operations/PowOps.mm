// mpsgen fixture: the legacy MPS kernels of an op's other overloads: a graph for the tensor
// exponent, and a function handing a wrapped scalar to that overload.
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/pow_native.h>
#endif

namespace at::native {

TORCH_IMPL_FUNC(pow_tensor_tensor_out_mps)(const Tensor& base, const Tensor& exp, const Tensor& out) {
  mps::binary_op(base, exp, out, "pow", ^MPSGraphTensor*(MPSGraph* graph, MPSGraphTensor* a, MPSGraphTensor* b) {
    return [graph powerWithPrimaryTensor:a secondaryTensor:b name:nil];
  });
}

TORCH_IMPL_FUNC(pow_Scalar_out_mps)(const Scalar& base, const Tensor& exp, const Tensor& out) {
  at::pow_out(const_cast<Tensor&>(out), mps::wrapped_scalar_tensor_mps(base, exp.device()), exp);
}

} // namespace at::native
