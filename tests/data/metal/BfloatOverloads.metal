// mpsgen test data: a bfloat argument to a function overloaded for float and for float2 (and one
// overloaded for float and half). Metal converts the bfloat to float; the call is not ambiguous.
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

namespace own {
inline float grow(float x) {
  return x + 1.0f;
}
inline float2 grow(float2 z) {
  return float2(z.x + 1.0f, z.y);
}
} // namespace own

struct grow_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(own::grow(x));
  }
};

REGISTER_UNARY_OP(grow, float, float);
REGISTER_UNARY_OP(grow, half, half);
REGISTER_UNARY_OP(grow, bfloat, bfloat);
