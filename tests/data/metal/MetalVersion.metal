// mpsgen test data: code under `#if __METAL_VERSION__ >= 310` is what a current Metal compiler
// builds (bfloat exists from Metal 3.1 on); the `#else` branch is not compiled.
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

struct keep_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x;
  }
};

REGISTER_UNARY_OP(keep, float, float);
#if __METAL_VERSION__ >= 310
REGISTER_UNARY_OP(keep, bfloat, bfloat);
#else
this branch is for compilers older than Metal 3.1 and is never read
#endif
