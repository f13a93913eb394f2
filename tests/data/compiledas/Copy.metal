// The copy kernels (ours, in the shape of the real kernels/Copy.metal): a copy that can also flip
// the conjugate bit of what it copies. One functor per flip, registered for every dtype by one
// file macro.
#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>

using namespace metal;
using namespace c10::metal;

struct copy_identity_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x;
  }
};

// conj is the identity on real values; on complex ones the imaginary part flips
struct copy_conj_functor {
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(x.x, -x.y);
  }
  template <typename T, enable_if_t<!is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    return x;
  }
};

#define REGISTER_COPY_KERNELS(DTYPE)              \
  REGISTER_UNARY_OP(copy_identity, DTYPE, DTYPE); \
  REGISTER_UNARY_OP(copy_conj, DTYPE, DTYPE)

REGISTER_COPY_KERNELS(float);
REGISTER_COPY_KERNELS(half);
REGISTER_COPY_KERNELS(bfloat);
REGISTER_COPY_KERNELS(long);
REGISTER_COPY_KERNELS(int);
REGISTER_COPY_KERNELS(short);
REGISTER_COPY_KERNELS(char);
REGISTER_COPY_KERNELS(uchar);
REGISTER_COPY_KERNELS(bool);
REGISTER_COPY_KERNELS(float2);
REGISTER_COPY_KERNELS(half2);
