// mpsgen test data: a unary kernel file laid out as 2.15's UnaryKernel.metal is, with functors
// defined after the registrations that come before them (here, the rounding family's list macro
// and a run of integer registrations), so that "after the last functor" is below their uses.
#include <c10/metal/indexing.h>
using namespace c10::metal;

struct alpha_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x;
  }
};

struct beta_functor {
  template <typename T>
  inline T operator()(const T x) {
    return -x;
  }
};

REGISTER_UNARY_OP(alpha, int, int);
REGISTER_UNARY_OP(alpha, long, long);

#define REGISTER_ROUND_LIKE_OPS(DTYPE)    \
  REGISTER_UNARY_OP(alpha, DTYPE, DTYPE); \
  REGISTER_UNARY_OP(beta, DTYPE, DTYPE)

REGISTER_ROUND_LIKE_OPS(float);
REGISTER_ROUND_LIKE_OPS(half);
REGISTER_ROUND_LIKE_OPS(bfloat);
REGISTER_UNARY_OP(beta, int, int);
REGISTER_UNARY_OP(beta, long, long);

struct gamma_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x + x;
  }
};

#define INSTANTIATE_GAMMA(DTYPE) REGISTER_UNARY_OP(gamma, DTYPE, DTYPE)
INSTANTIATE_GAMMA(float);
INSTANTIATE_GAMMA(half);
