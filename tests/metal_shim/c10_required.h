// mpsgen test shim: the c10::metal functions a catalog body requires (its `requires`) and the
// miniature's c10/metal lacks; our own text, the semantics of the library functions they stand for.
#pragma once

namespace c10 {
namespace metal {
template <typename T, ::metal::enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
inline float pow(T a, T b) {
  return ::metal::precise::pow(static_cast<float>(a), static_cast<float>(b));
}

template <typename T, ::metal::enable_if_t<is_scalar_integral_v<T>, bool> = true>
inline T pow(T a, T b) {
  T result = 1;
  for (long e = 0; e < static_cast<long>(b); e++) {
    result = static_cast<T>(result * a);
  }
  return result;
}

template <typename T, ::metal::enable_if_t<is_complex_v<T>, bool> = true>
inline float2 pow(T a, T b) {
  const float r = ::metal::precise::sqrt(float(a.x) * float(a.x) + float(a.y) * float(a.y));
  const float theta = ::metal::precise::atan2(float(a.y), float(a.x));
  const float m = ::metal::precise::exp(float(b.x) * ::metal::precise::log(r) - float(b.y) * theta);
  const float phase = float(b.x) * theta + float(b.y) * ::metal::precise::log(r);
  return float2(m * ::metal::precise::cos(phase), m * ::metal::precise::sin(phase));
}

} // namespace metal
} // namespace c10
