// mpsgen test data: registrations of different functors separated by blank lines, one run
// followed at once by another macro's lines, and a functor defined below them all.
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

REGISTER_UNARY_OP(alpha, float, float);
REGISTER_UNARY_OP(alpha, half, half);

REGISTER_UNARY_OP(beta, float, float);
REGISTER_UNARY_OP(beta, half, half);
INSTANTIATE_OTHER_KERNELS(float);

struct gamma_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x + x;
  }
};

#define INSTANTIATE_GAMMA(DTYPE) REGISTER_UNARY_OP(gamma, DTYPE, DTYPE)
INSTANTIATE_GAMMA(float);
