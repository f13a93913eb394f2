// mpsgen test data: unsuffixed floating literals are float in Metal, in every spelling.
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

static_assert(is_same_v<decltype(0.5), float>, "0.5 is float");
static_assert(is_same_v<decltype(.25 + 1. + 1e-2 + 2.5E+3), float>, "all float");

struct damp_functor {
  template <typename T>
  inline T operator()(const T x) {
    const float scale = x > 0.5 ? 0.25 : 1e-2;
    return static_cast<T>(float(x) * scale);
  }
};

REGISTER_UNARY_OP(damp, float, float);
REGISTER_UNARY_OP(damp, half, half);
