// Hand-written for mpsgen's tests: functors whose loops run as many times as a value says.
#include <metal_stdlib>
using namespace metal;

// Degree-n member of a three-term recurrence family (L_0 = 1, L_1 = 1 - x), n given as an integer:
// the loop runs n - 1 times.
template <typename T>
inline float recurrence_n(T x, long n) {
  if (n < 0) {
    return 0.0;
  }
  if (n == 0) {
    return 1.0;
  }
  float before = 1.0;
  float now = 1.0 - x;
  for (long step = 1; step < n; step++) {
    const float after = ((2 * step + 1 - x) * now - step * before) / (step + 1);
    before = now;
    now = after;
  }
  return now;
}

// The same with n as a float: truncated first.
template <typename T>
inline float recurrence_n(T x, T n) {
  return recurrence_n(x, static_cast<long>(n));
}

struct laguerre_polynomial_l_functor {
  template <typename T>
  inline T operator()(const T x_, const T n_) {
    const float x = static_cast<float>(x_);
    const float n = static_cast<float>(n_);
    return static_cast<T>(recurrence_n(x, n));
  }
};

// A loop bounded by a local computed from the operand, behind a branch: not a loop count.
inline float rising(float x) {
  if (x >= 8.0f) {
    return x;
  }
  const int top = static_cast<int>(::metal::floor(x));
  float r = 1.0f;
  for (int i = 1; i < top; i++) {
    r *= float(i);
  }
  return r;
}

struct local_bound_functor {
  template <typename T>
  inline T operator()(const T a) {
    return static_cast<T>(rising(float(a)));
  }
};
