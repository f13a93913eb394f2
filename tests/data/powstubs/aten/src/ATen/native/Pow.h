// mpsgen fixture: a header declaring one stub per overload family of an op.
#pragma once

#include <ATen/native/DispatchStub.h>

namespace at::native {

using pow_tensor_tensor_fn = void (*)(TensorIteratorBase&);
using pow_tensor_scalar_fn = void (*)(TensorIteratorBase&, const c10::Scalar&);

DECLARE_DISPATCH(pow_tensor_tensor_fn, pow_tensor_tensor_stub)
DECLARE_DISPATCH(pow_tensor_scalar_fn, pow_tensor_scalar_stub)

} // namespace at::native
