// mpsgen test data: Metal's numeric_limits for vector types (complex values are float2/half2):
// every component holds the scalar's value, so `.infinity().x` is the scalar infinity.
#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;
using namespace c10::metal;

static_assert(::metal::numeric_limits<float2>::infinity().y == INFINITY, "each component");
static_assert(::metal::numeric_limits<half2>::max().x == HALF_MAX, "the scalar's value");

template <typename T>
inline bool touches_infinity(T z) {
  constexpr auto big = ::metal::numeric_limits<T>::infinity().x;
  const auto low = ::metal::numeric_limits<T>::lowest();
  return z.x == big || z.y == -big || z.x == low.y;
}

struct edge_functor {
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T z) {
    return touches_infinity(z) ? T(0, 0) : z;
  }
  template <typename T, enable_if_t<!is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    return x == ::metal::numeric_limits<T>::infinity() ? T(0) : x;
  }
};

REGISTER_UNARY_OP(edge, float2, float2);
REGISTER_UNARY_OP(edge, half2, half2);
REGISTER_UNARY_OP(edge, float, float);
