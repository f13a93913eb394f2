#pragma once
// Index stubs (mpsgen test fixture, written for it): their kernels take a tensor besides the
// iterator and read or write it at positions the iterator's index values give.

#include <ATen/native/DispatchStub.h>

namespace at {
struct TensorIterator;
class TensorBase;
} // namespace at

namespace at::native {

using take_fn = void (*)(TensorIterator& iter, const TensorBase& input);
using put_fn = void (*)(TensorIterator& iter, const TensorBase& self, const bool accumulate);
using sort_fn = void (*)(const TensorBase&, const TensorBase&, const TensorBase&, int64_t, bool, bool);

DECLARE_DISPATCH(take_fn, take_stub)
DECLARE_DISPATCH(put_fn, put_stub)
DECLARE_DISPATCH(sort_fn, sort_stub)

} // namespace at::native
