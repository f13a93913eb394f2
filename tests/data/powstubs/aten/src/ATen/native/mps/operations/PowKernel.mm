// mpsgen fixture: the MPS kernel of the scalar-exponent overload, already behind its stub.
#include <ATen/native/Pow.h>
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

static void pow_scalar_kernel(TensorIteratorBase& iter, const Scalar& exp) {
  lib.exec_unary_kernel(iter, "pow_scalar", exp);
}

REGISTER_DISPATCH(pow_tensor_scalar_stub, &pow_scalar_kernel)
} // namespace at::native
