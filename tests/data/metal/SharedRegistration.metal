// mpsgen test data: one macro call registers two functors (as upstream's files register a list of
// ops per dtype). A problem in one of them belongs to that one only.
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

struct twice_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(x + x);
  }
};

struct thrice_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(x + x + x);
  }
};

#define REGISTER_BOTH(DTYPE)                 \
  REGISTER_UNARY_OP(twice, DTYPE, DTYPE);    \
  REGISTER_UNARY_OP(thrice, DTYPE, DTYPE)

REGISTER_BOTH(float);
REGISTER_BOTH(half);
