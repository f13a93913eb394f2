// Hand-written for mpsgen's tests: functors registered through c10's OPMATH macros, directly and
// through a one-parameter macro of the file, beside plain registrations.
#include <c10/metal/indexing.h>

struct square_sum_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(a * a + b * b);
  }
};

struct twice_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(a + a + b - b);
  }
};

#define REGISTER_WIDE_FLOATS(NAME)              \
  REGISTER_OPMATH_BINARY_OP(NAME, half, half); \
  REGISTER_OPMATH_BINARY_OP(NAME, bfloat, bfloat)

REGISTER_BINARY_OP(square_sum, float2, float2);
REGISTER_OPMATH_BINARY_OP(square_sum, half2, half2);
// REGISTER_OPMATH_BINARY_OP(square_sum, float, float);
REGISTER_WIDE_FLOATS(twice);
REGISTER_BINARY_OP(twice, float, float);
