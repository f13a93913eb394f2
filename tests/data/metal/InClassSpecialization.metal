// mpsgen test data: an explicit specialization of a member function template written inside its
// struct (valid C++17; Metal's compiler and clang accept it, g++ refuses it at class scope).
#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;

struct flip_functor {
  template <typename T>
  inline T operator()(const T x) {
    return -x;
  }
  template <>
  inline bool operator()(const bool x) {
    return !x;
  }
  template <>
  inline uchar operator()<uchar>(const uchar x) {
    return static_cast<uchar>(255 - x);
  }
};

REGISTER_UNARY_OP(flip, float, float);
REGISTER_UNARY_OP(flip, bool, bool);
REGISTER_UNARY_OP(flip, uchar, uchar);

namespace helpers {
template <typename T>
inline T twice(T x) {
  return x + x;
}
template <>
inline bool twice(bool x) {
  return x;
}
} // namespace helpers
