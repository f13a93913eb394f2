// metal_shim.h: just enough of the Metal Shading Language and of c10/metal/utils.h, written in
// standard C++17, to compile and run mpsgen's catalog functors on a machine without Metal.
//
// Our own header; it models only what catalog bodies use, and models it strictly where that
// matters for correctness:
//   * half is _Float16 (real half-precision storage and rounding); bfloat is a float wrapper that
//     rounds to 8 significant bits (round-to-nearest-even on the float's low 16 bits).
//   * float -> bfloat and float2 <-> half2 conversions are explicit, so a body that forgets a cast
//     does not compile here.
//   * metal::is_floating_point_v is true for float2/half2 as in Metal; bodies that also take
//     complex values must use c10::metal::is_scalar_floating_point_v to tell them apart.
//   * There are no `using namespace` directives: bodies must qualify ::metal:: and c10::metal::.
//   * Metal has no double; the harness compiles with -Werror=double-promotion so a double literal
//     mixed into float math fails to compile.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// ---- constants Metal predefines (float) -------------------------------------------------------
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_LN2_F 0.69314718055994530942f

// ---- scalar types -------------------------------------------------------------------------------
using half = _Float16;
using uchar = unsigned char;
using ushort = unsigned short;
using uint = unsigned int;
using ulong = unsigned long;
static_assert(sizeof(long) == 8, "Metal's long is 64-bit");

struct bfloat {
  std::uint16_t bits;
  bfloat() : bits(0) {}
  explicit bfloat(float f) : bits(round_bits(f)) {}
  explicit bfloat(int i) : bfloat(static_cast<float>(i)) {}
  operator float() const {
    std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static std::uint16_t round_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if (std::isnan(f)) {
      return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // keep it a quiet NaN
    }
    const std::uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;  // round to nearest, ties to even
    return static_cast<std::uint16_t>(u >> 16);
  }
};

// ---- two-component vectors (complex numbers are float2/half2: x real, y imaginary) -----------------
template <typename E>
struct vec2 {
  E x, y;
  vec2() : x(0), y(0) {}
  vec2(E x_, E y_) : x(x_), y(y_) {}
  explicit vec2(E s) : x(s), y(s) {}
  template <typename F, std::enable_if_t<!std::is_same_v<E, F>, bool> = true>
  explicit vec2(const vec2<F>& o) : x(static_cast<E>(o.x)), y(static_cast<E>(o.y)) {}
  friend vec2 operator+(vec2 a, vec2 b) { return vec2(E(a.x + b.x), E(a.y + b.y)); }
  friend vec2 operator-(vec2 a, vec2 b) { return vec2(E(a.x - b.x), E(a.y - b.y)); }
  friend vec2 operator*(vec2 a, vec2 b) { return vec2(E(a.x * b.x), E(a.y * b.y)); }
  friend vec2 operator/(vec2 a, vec2 b) { return vec2(E(a.x / b.x), E(a.y / b.y)); }
  friend vec2 operator*(vec2 a, E s) { return vec2(E(a.x * s), E(a.y * s)); }
  friend vec2 operator*(E s, vec2 a) { return vec2(E(a.x * s), E(a.y * s)); }
  friend vec2 operator/(vec2 a, E s) { return vec2(E(a.x / s), E(a.y / s)); }
  vec2 operator-() const { return vec2(E(-x), E(-y)); }
};
using float2 = vec2<float>;
using half2 = vec2<half>;

namespace metal {

// ---- type traits --------------------------------------------------------------------------------
using std::enable_if_t;
using std::is_same_v;

template <typename T>
constexpr bool is_scalar_v = std::is_arithmetic_v<T> || std::is_same_v<T, half> ||
                             std::is_same_v<T, bfloat>;

template <typename T>
constexpr bool is_floating_point_v =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat> ||
    std::is_same_v<T, float2> || std::is_same_v<T, half2>;

template <typename T>
constexpr bool is_integral_v = std::is_integral_v<T>;

template <typename T>
constexpr bool is_signed_v = std::is_signed_v<T> || is_floating_point_v<T>;

template <typename U, typename T>
inline U as_type(const T v) {
  static_assert(sizeof(U) == sizeof(T), "as_type needs equal sizes");
  U u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// ---- math (float overloads only: bodies compute half/bfloat in float) -----------------------------
inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isfinite(float x) { return std::isfinite(x); }
inline bool signbit(float x) { return std::signbit(x); }
inline float fabs(float x) { return std::fabs(x); }
inline float abs(float x) { return std::fabs(x); }
inline float copysign(float x, float y) { return std::copysign(x, y); }
inline float trunc(float x) { return std::trunc(x); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
// Metal's max/min on floats return the non-NaN operand, like fmax/fmin.
inline float max(float x, float y) { return std::fmax(x, y); }
inline float min(float x, float y) { return std::fmin(x, y); }
inline float fmax(float x, float y) { return std::fmax(x, y); }
inline float fmin(float x, float y) { return std::fmin(x, y); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
template <typename T>
inline T select(T a, T b, bool c) { return c ? b : a; }
inline float dot(float2 a, float2 b) { return a.x * b.x + a.y * b.y; }

namespace precise {
inline float sqrt(float x) { return std::sqrt(x); }
inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline float pow(float x, float y) { return std::pow(x, y); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float tan(float x) { return std::tan(x); }
inline float atan(float x) { return std::atan(x); }
inline float atan2(float y, float x) { return std::atan2(y, x); }
inline float tanh(float x) { return std::tanh(x); }
inline float asinh(float x) { return std::asinh(x); }
inline float acosh(float x) { return std::acosh(x); }
inline float atanh(float x) { return std::atanh(x); }
inline float fmod(float x, float y) { return std::fmod(x, y); }
inline float abs(float x) { return std::fabs(x); }
}  // namespace precise

}  // namespace metal

namespace c10 {
namespace metal {

template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<half> { using type = float; };
template <> struct OpMath<bfloat> { using type = float; };
template <> struct OpMath<half2> { using type = float2; };
template <> struct OpMath<short> { using type = int; };
template <> struct OpMath<char> { using type = int; };
template <> struct OpMath<uchar> { using type = int; };
template <typename T>
using opmath_t = typename OpMath<T>::type;

template <typename T>
constexpr bool is_complex_v = std::is_same_v<T, float2> || std::is_same_v<T, half2>;

template <typename T>
constexpr bool is_scalar_floating_point_v =
    ::metal::is_floating_point_v<T> && ::metal::is_scalar_v<T>;

template <typename T>
constexpr bool is_scalar_integral_v = ::metal::is_integral_v<T> && ::metal::is_scalar_v<T>;

}  // namespace metal
}  // namespace c10
