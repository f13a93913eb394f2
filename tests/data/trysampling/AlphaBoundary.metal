// Hand-written for mpsgen's tests: a functor that compares its alpha with a constant.
template <typename scalar_t>
inline scalar_t clipped_ratio(scalar_t g, scalar_t x, scalar_t lo) {
  return (x < lo || x > scalar_t(1) - lo)
      ? scalar_t(0)
      : ((x == scalar_t(0)) ? g * INFINITY : g / (x + scalar_t(1)));
}

struct clipped_ratio_functor {
  template <typename T>
  inline T operator()(const T g_, const T x_, const T lo_) {
    using scalar_t = T;
    const float g = static_cast<float>(g_);
    const float x = static_cast<float>(x_);
    const float lo = static_cast<float>(lo_);
    return static_cast<T>((lo < scalar_t(0)) ? g : clipped_ratio(g, x, lo));
  }
};
