// mpsgen test data: a kernel file that registers lists of ops through its own
// macros, one macro call per dtype (or per dtype pair), as upstream's kernel
// files do. New ops join a list when what the list's calls register is exactly
// some of the new op's dtype groups.
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

// Not a registration list: writes one functor.
#define PASS_THROUGH_FUNCTOR(NAME)   \
  struct NAME##_functor {            \
    template <typename T>            \
    inline T operator()(const T x) { \
      return x;                      \
    }                                \
  }

PASS_THROUGH_FUNCTOR(alpha);
PASS_THROUGH_FUNCTOR(beta);
PASS_THROUGH_FUNCTOR(delta);
PASS_THROUGH_FUNCTOR(zeta);
PASS_THROUGH_FUNCTOR(eta);
PASS_THROUGH_FUNCTOR(theta);
PASS_THROUGH_FUNCTOR(iota);
PASS_THROUGH_FUNCTOR(kappa);
PASS_THROUGH_FUNCTOR(lambda);
PASS_THROUGH_FUNCTOR(mu);

// A sorted list over (input, output) pairs: the floating types, bfloat where
// the Metal version has it.
#define REGISTER_SORTED_KERNELS(DTYPE_IN, DTYPE_OUT) \
  REGISTER_UNARY_OP(alpha, DTYPE_IN, DTYPE_OUT);     \
  REGISTER_UNARY_OP(beta, DTYPE_IN, DTYPE_OUT);      \
  REGISTER_UNARY_OP(delta, DTYPE_IN, DTYPE_OUT)

REGISTER_SORTED_KERNELS(float, float);
REGISTER_SORTED_KERNELS(half, half);
#if __METAL_VERSION__ >= 310
REGISTER_SORTED_KERNELS(bfloat, bfloat);
#endif

// An unsorted list, output first: integer inputs computed in float.
#define REGISTER_PROMOTING_KERNELS(DTYPE0, DTYPE1) \
  REGISTER_UNARY_OP(zeta, DTYPE1, DTYPE0);         \
  REGISTER_UNARY_OP(eta, DTYPE1, DTYPE0)

REGISTER_PROMOTING_KERNELS(float, long);
REGISTER_PROMOTING_KERNELS(float, int);
REGISTER_PROMOTING_KERNELS(float, short);
REGISTER_PROMOTING_KERNELS(float, uchar);
REGISTER_PROMOTING_KERNELS(float, char);
REGISTER_PROMOTING_KERNELS(float, bool);

// One call per component type of the complex types.
#define REGISTER_COMPLEX_KERNELS(COMPONENT)             \
  REGISTER_UNARY_OP(theta, COMPONENT##2, COMPONENT##2); \
  REGISTER_UNARY_OP(iota, COMPONENT##2, COMPONENT##2)

REGISTER_COMPLEX_KERNELS(float);
REGISTER_COMPLEX_KERNELS(half);

// The integer types; bool unless the build says otherwise.
#define REGISTER_INTEGER_KERNELS(DTYPE)   \
  REGISTER_UNARY_OP(kappa, DTYPE, DTYPE); \
  REGISTER_UNARY_OP(lambda, DTYPE, DTYPE)

REGISTER_INTEGER_KERNELS(long);
REGISTER_INTEGER_KERNELS(int);
REGISTER_INTEGER_KERNELS(short);
REGISTER_INTEGER_KERNELS(uchar);
REGISTER_INTEGER_KERNELS(char);
#ifndef MPSGEN_TEST_NO_BOOL
REGISTER_INTEGER_KERNELS(bool);
#endif

REGISTER_UNARY_OP(mu, float, float);
REGISTER_UNARY_OP(mu, half, half);
