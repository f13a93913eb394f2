// mpsgen fixture: the CPU functions of an op whose overloads call different stubs, and one that
// calls none (it hands a wrapped scalar to another overload).
#include <ATen/native/Pow.h>

namespace at::meta {

TORCH_META_FUNC2(pow, Tensor_Tensor)(const Tensor& base, const Tensor& exp) {
  build_borrowing_binary_op(maybe_get_output(), base, exp);
}

} // namespace at::meta

namespace at::native {

DEFINE_DISPATCH(pow_tensor_tensor_stub);
DEFINE_DISPATCH(pow_tensor_scalar_stub);

TORCH_IMPL_FUNC(pow_Tensor_Tensor_out)(const Tensor& base, const Tensor& exp, const Tensor& out) {
  pow_tensor_tensor_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(pow_Tensor_Scalar_out)(const Tensor& base, const Scalar& exp, const Tensor& out) {
  pow_tensor_scalar_stub(device_type(), *this, exp);
}

TORCH_IMPL_FUNC(pow_Scalar_out)(const Scalar& base, const Tensor& exp, const Tensor& out) {
  at::pow_out(const_cast<Tensor&>(out), wrapped_scalar_tensor(base, exp.device()), exp);
}

} // namespace at::native
