// mpsgen_metal.h: the Metal Shading Language as seen by a host C++17 compiler (g++ or clang++).
//
// mpsgen's own mapping, written from the language's public description: it lets `g++ -fsyntax-only`
// check a .metal kernel file together with the checkout's own c10/metal headers, and lets mpsgen run
// a functor on the CPU. It models names and types, not the GPU:
//   * address spaces: `constant` is `const` (so `constant T*` and `device T*` overload apart, as in
//     Metal), `device`, `thread`, `threadgroup` vanish; `kernel` vanishes; attribute lists such as
//     [[buffer(0)]] and [[host_name("...")]] are blanked by mpsgen's rewrite of the copy it compiles.
//   * half is _Float16 (real half precision); bfloat keeps 8 significant bits (round to nearest even).
//   * vectors (float2 ... bool4) have x/y/z/w, [i], element-wise operators; swizzles are written
//     `v.zw()` by mpsgen's rewrite of the copy it compiles.
//   * math, type traits, numeric_limits, SIMD-group and atomic functions behave as on one thread.
//   * Metal has no double: the identifier `double` is poisoned after the standard headers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#ifndef __METAL__
#define __METAL__ 1
#endif
#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
#define __HAVE_BFLOAT__ 1

#define kernel
#define device
#define thread
#define threadgroup
#define threadgroup_imageblock
#define ray_data
#define object_data
#define constant const
// Metal's own helper macro for always-inlined functions (MLX-derived kernels use it).
#define METAL_FUNC inline

// ---- scalar types ---------------------------------------------------------------------------------
using half = _Float16;
using uchar = unsigned char;
using ushort = unsigned short;
using uint = unsigned int;
using ulong = unsigned long;
static_assert(sizeof(long) == 8, "Metal's long is 64 bits: use a 64-bit host (LP64)");

#ifdef MPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT
#define MPSGEN_BF_FROM_FLOAT explicit
#else
#define MPSGEN_BF_FROM_FLOAT
#endif
struct bfloat {
  unsigned short bits;  // no initializer: bfloat stays trivial, so it can live in unions
  bfloat() = default;
  // float -> bfloat is implicit, as in Metal (`return NAN;`, `return 0.0;` in a function returning a
  // template's T = bfloat: c10/metal/igamma.h). A class converting both ways cannot make
  // `c ? a_bfloat : a_float` float as Metal does (the host compiler calls it ambiguous), so a file
  // the host compiler refuses for that alone is compiled again with MPSGEN_BFLOAT_EXPLICIT_FROM_FLOAT
  // (`compiler.EXPLICIT_BFLOAT`), where the conversion is explicit and such a choice is float.
  MPSGEN_BF_FROM_FLOAT constexpr bfloat(float f) : bits(round_bits(f)) {}
  template <typename A, std::enable_if_t<std::is_floating_point_v<A>, int> = 0>
  MPSGEN_BF_FROM_FLOAT constexpr bfloat(A a) : bits(round_bits(static_cast<float>(a))) {}
  // half -> bfloat stays explicit (Metal has no implicit conversion between the two 16-bit types).
  template <typename A, std::enable_if_t<std::is_same_v<A, half>, int> = 0>
  constexpr explicit bfloat(A a) : bits(round_bits(static_cast<float>(a))) {}
  template <typename A, std::enable_if_t<std::is_integral_v<A>, int> = 0>
  constexpr bfloat(A a) : bits(round_bits(static_cast<float>(a))) {}
  constexpr operator float() const { return __builtin_bit_cast(float, static_cast<unsigned>(bits) << 16); }
  static constexpr unsigned short round_bits(float f) {
    unsigned u = __builtin_bit_cast(unsigned, f);
    if (f != f) {
      return static_cast<unsigned short>((u >> 16) | 0x40u);  // stays a quiet NaN
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<unsigned short>(u >> 16);
  }
  constexpr bfloat operator-() const { return bfloat(-static_cast<float>(*this)); }
  constexpr bfloat operator+() const { return *this; }
  template <typename A> constexpr bfloat& operator+=(A a) { return *this = bfloat(float(*this) + float(a)); }
  template <typename A> constexpr bfloat& operator-=(A a) { return *this = bfloat(float(*this) - float(a)); }
  template <typename A> constexpr bfloat& operator*=(A a) { return *this = bfloat(float(*this) * float(a)); }
  template <typename A> constexpr bfloat& operator/=(A a) { return *this = bfloat(float(*this) / float(a)); }
};

namespace mpsgen_detail {
template <typename T> struct is_vec : std::false_type {};
template <typename T> constexpr bool is_half_v = std::is_same_v<std::remove_cv_t<T>, half>;
template <typename T> constexpr bool is_bfloat_v = std::is_same_v<std::remove_cv_t<T>, bfloat>;
// Metal's scalars: the arithmetic types plus half and bfloat.
template <typename T>
constexpr bool is_scalar_v = std::is_arithmetic_v<std::remove_cv_t<T>> || is_half_v<T> || is_bfloat_v<T>;
template <typename T>
constexpr bool is_float_scalar_v = std::is_floating_point_v<std::remove_cv_t<T>> || is_half_v<T> || is_bfloat_v<T>;

// bfloat with another scalar: bfloat with bfloat or an integer stays bfloat, with float it is float.
template <typename A, typename B>
constexpr bool bf_operands_v = (is_bfloat_v<A> || is_bfloat_v<B>) && is_scalar_v<A> && is_scalar_v<B>;
template <typename A, typename B>
using bf_result_t = std::conditional_t<std::is_floating_point_v<A> || std::is_floating_point_v<B>, float, bfloat>;
}  // namespace mpsgen_detail

#define MPSGEN_BF_ARITH(OP)                                                                      \
  template <typename A, typename B, std::enable_if_t<mpsgen_detail::bf_operands_v<A, B>, int> = 0> \
  constexpr mpsgen_detail::bf_result_t<A, B> operator OP(A a, B b) {                              \
    return mpsgen_detail::bf_result_t<A, B>(static_cast<float>(a) OP static_cast<float>(b));      \
  }
MPSGEN_BF_ARITH(+)
MPSGEN_BF_ARITH(-)
MPSGEN_BF_ARITH(*)
MPSGEN_BF_ARITH(/)
#undef MPSGEN_BF_ARITH
#define MPSGEN_BF_CMP(OP)                                                                         \
  template <typename A, typename B, std::enable_if_t<mpsgen_detail::bf_operands_v<A, B>, int> = 0> \
  constexpr bool operator OP(A a, B b) {                                                           \
    return static_cast<float>(a) OP static_cast<float>(b);                                         \
  }
MPSGEN_BF_CMP(==)
MPSGEN_BF_CMP(!=)
MPSGEN_BF_CMP(<)
MPSGEN_BF_CMP(<=)
MPSGEN_BF_CMP(>)
MPSGEN_BF_CMP(>=)
#undef MPSGEN_BF_CMP

// ---- vectors ---------------------------------------------------------------------------------------
template <typename T, int N> struct vec;

namespace mpsgen_detail {
template <typename T, int N> struct is_vec<vec<T, N>> : std::true_type {};
template <typename T> struct components { static constexpr int value = 1; };
template <typename T, int N> struct components<vec<T, N>> { static constexpr int value = N; };

template <typename T, int N> struct vstore;
template <typename T> struct vstore<T, 2> {
  T x, y;
  constexpr T& at(int i) { return i == 0 ? x : y; }
  constexpr const T& at(int i) const { return i == 0 ? x : y; }
};
// A 3-component vector has the size and alignment of a 4-component one, as in Metal
// (sizeof(float3) == 16): kernels pick overloads by sizeof (2.15's chunk_shuffle_down).
template <typename T> struct alignas(4 * sizeof(T)) vstore<T, 3> {
  T x, y, z;
  constexpr T& at(int i) { return i == 0 ? x : i == 1 ? y : z; }
  constexpr const T& at(int i) const { return i == 0 ? x : i == 1 ? y : z; }
};
template <typename T> struct vstore<T, 4> {
  T x, y, z, w;
  constexpr T& at(int i) { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  constexpr const T& at(int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};

template <typename T, int N, int M> struct swizzle;
}  // namespace mpsgen_detail

namespace mpsgen_detail {
// The components of scalars and vectors, in order, as one array (constexpr: vec's constructors
// initialise their members from it, as C++17 requires of constexpr constructors).
template <typename T, int N>
struct flat {
  T v[N];
  int n;
};
template <typename T, int N, typename S>
constexpr void flat_put(flat<T, N>& f, const S& s) {
  if constexpr (is_vec<S>::value) {
    for (int k = 0; k < components<S>::value; ++k) f.v[f.n++] = static_cast<T>(s.at(k));
  } else {
    f.v[f.n++] = static_cast<T>(s);
  }
}
template <typename T, int N, typename... A>
constexpr flat<T, N> flatten(const A&... a) {
  flat<T, N> f{{}, 0};
  (flat_put(f, a), ...);
  return f;
}
template <typename T, int N, typename S>
constexpr flat<T, N> fill(const S& s) {
  flat<T, N> f{{}, N};
  for (int i = 0; i < N; ++i) f.v[i] = static_cast<T>(s);
  return f;
}
template <typename T>
constexpr vstore<T, 2> store(const flat<T, 2>& f) { return {f.v[0], f.v[1]}; }
template <typename T>
constexpr vstore<T, 3> store(const flat<T, 3>& f) { return {f.v[0], f.v[1], f.v[2]}; }
template <typename T>
constexpr vstore<T, 4> store(const flat<T, 4>& f) { return {f.v[0], f.v[1], f.v[2], f.v[3]}; }
}  // namespace mpsgen_detail

// Swizzle methods: v.xy() reads (and, on an lvalue, writes) components 0 and 1.
#define MPSGEN_SWZ2(NAME, I, J)                                                                   \
  constexpr mpsgen_detail::swizzle<T, N, 2> NAME() {                                              \
    static_assert(I < N && J < N, "swizzle ." #NAME " reads past the vector's last component");   \
    return mpsgen_detail::swizzle<T, N, 2>(this, {I, J});                                         \
  }                                                                                               \
  constexpr vec<T, 2> NAME() const { return vec<T, 2>(this->at(I), this->at(J)); }
#define MPSGEN_SWZ3(NAME, I, J, K)                                                                \
  constexpr mpsgen_detail::swizzle<T, N, 3> NAME() {                                              \
    static_assert(I < N && J < N && K < N, "swizzle ." #NAME " reads past the vector's end");     \
    return mpsgen_detail::swizzle<T, N, 3>(this, {I, J, K});                                      \
  }                                                                                               \
  constexpr vec<T, 3> NAME() const { return vec<T, 3>(this->at(I), this->at(J), this->at(K)); }

template <typename T, int N>
struct vec : mpsgen_detail::vstore<T, N> {
  using element_type = T;
  vec() = default;
  // A scalar fills every component (`uint4 v = 0;`). From a bfloat into another element type the
  // conversion is explicit: bfloat is a class here, so an implicit one would make `f(bfloat)` with
  // overloads f(float) and f(float2) ambiguous, where Metal converts the scalar to float.
  template <typename S, std::enable_if_t<mpsgen_detail::is_scalar_v<S> &&
                                             (!mpsgen_detail::is_bfloat_v<S> || mpsgen_detail::is_bfloat_v<T>),
                                         int> = 0>
  constexpr vec(S s) : mpsgen_detail::vstore<T, N>(mpsgen_detail::store(mpsgen_detail::fill<T, N>(s))) {}
  template <typename S, std::enable_if_t<mpsgen_detail::is_bfloat_v<S> && !mpsgen_detail::is_bfloat_v<T>, int> = 0>
  constexpr explicit vec(S s) : mpsgen_detail::vstore<T, N>(mpsgen_detail::store(mpsgen_detail::fill<T, N>(s))) {}
  // Components from scalars and smaller vectors: float4(a, b, c, d), float4(float2, float2), ...
  template <typename A, typename B, typename... R,
            std::enable_if_t<(mpsgen_detail::components<A>::value + mpsgen_detail::components<B>::value +
                              (0 + ... + mpsgen_detail::components<R>::value)) == N,
                             int> = 0>
  constexpr vec(const A& a, const B& b, const R&... r)
      : mpsgen_detail::vstore<T, N>(mpsgen_detail::store(mpsgen_detail::flatten<T, N>(a, b, r...))) {}
  template <typename U, std::enable_if_t<!std::is_same_v<U, T>, int> = 0>
  constexpr explicit vec(const vec<U, N>& o)
      : mpsgen_detail::vstore<T, N>(mpsgen_detail::store(mpsgen_detail::flatten<T, N>(o))) {}
  constexpr T& operator[](int i) { return this->at(i); }
  constexpr const T& operator[](int i) const { return this->at(i); }

  MPSGEN_SWZ2(xx, 0, 0) MPSGEN_SWZ2(xy, 0, 1) MPSGEN_SWZ2(xz, 0, 2) MPSGEN_SWZ2(xw, 0, 3)
  MPSGEN_SWZ2(yx, 1, 0) MPSGEN_SWZ2(yy, 1, 1) MPSGEN_SWZ2(yz, 1, 2) MPSGEN_SWZ2(yw, 1, 3)
  MPSGEN_SWZ2(zx, 2, 0) MPSGEN_SWZ2(zy, 2, 1) MPSGEN_SWZ2(zz, 2, 2) MPSGEN_SWZ2(zw, 2, 3)
  MPSGEN_SWZ2(wx, 3, 0) MPSGEN_SWZ2(wy, 3, 1) MPSGEN_SWZ2(wz, 3, 2) MPSGEN_SWZ2(ww, 3, 3)
  MPSGEN_SWZ3(xyz, 0, 1, 2) MPSGEN_SWZ3(yzw, 1, 2, 3) MPSGEN_SWZ3(zyx, 2, 1, 0)

};
#undef MPSGEN_SWZ2
#undef MPSGEN_SWZ3

namespace mpsgen_detail {
template <typename T, int N, int M>
struct swizzle : vec<T, M> {
  vec<T, N>* source;
  int index[M];
  constexpr swizzle(vec<T, N>* s, std::array<int, M> idx) : source(s), index{} {
    for (int i = 0; i < M; ++i) {
      index[i] = idx[i];
      this->at(i) = s->at(idx[i]);
    }
  }
  constexpr swizzle& operator=(const vec<T, M>& v) {
    for (int i = 0; i < M; ++i) source->at(index[i]) = v.at(i);
    return *this;
  }
};
}  // namespace mpsgen_detail

#define MPSGEN_VEC_ARITH(OP)                                                                       \
  template <typename T, int N>                                                                     \
  constexpr vec<T, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {                        \
    vec<T, N> r;                                                                                   \
    for (int i = 0; i < N; ++i) r[i] = static_cast<T>(a[i] OP b[i]);                               \
    return r;                                                                                      \
  }                                                                                                \
  template <typename T, int N, typename S, std::enable_if_t<mpsgen_detail::is_scalar_v<S>, int> = 0> \
  constexpr vec<T, N> operator OP(const vec<T, N>& a, S s) {                                       \
    return a OP vec<T, N>(s);                                                                      \
  }                                                                                                \
  template <typename T, int N, typename S, std::enable_if_t<mpsgen_detail::is_scalar_v<S>, int> = 0> \
  constexpr vec<T, N> operator OP(S s, const vec<T, N>& b) {                                       \
    return vec<T, N>(s) OP b;                                                                      \
  }                                                                                                \
  template <typename T, int N, typename S>                                                         \
  constexpr vec<T, N>& operator OP##=(vec<T, N>& a, const S& b) {                                  \
    return a = a OP b;                                                                             \
  }
MPSGEN_VEC_ARITH(+)
MPSGEN_VEC_ARITH(-)
MPSGEN_VEC_ARITH(*)
MPSGEN_VEC_ARITH(/)
MPSGEN_VEC_ARITH(%)
MPSGEN_VEC_ARITH(&)
MPSGEN_VEC_ARITH(|)
MPSGEN_VEC_ARITH(^)
MPSGEN_VEC_ARITH(<<)
MPSGEN_VEC_ARITH(>>)
#undef MPSGEN_VEC_ARITH

#define MPSGEN_VEC_CMP(OP)                                                                         \
  template <typename T, int N>                                                                     \
  constexpr vec<bool, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {                     \
    vec<bool, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r[i] = a[i] OP b[i];                                               \
    return r;                                                                                      \
  }                                                                                                \
  template <typename T, int N, typename S, std::enable_if_t<mpsgen_detail::is_scalar_v<S>, int> = 0> \
  constexpr vec<bool, N> operator OP(const vec<T, N>& a, S s) {                                    \
    return a OP vec<T, N>(s);                                                                      \
  }                                                                                                \
  template <typename T, int N, typename S, std::enable_if_t<mpsgen_detail::is_scalar_v<S>, int> = 0> \
  constexpr vec<bool, N> operator OP(S s, const vec<T, N>& b) {                                    \
    return vec<T, N>(s) OP b;                                                                      \
  }
MPSGEN_VEC_CMP(==)
MPSGEN_VEC_CMP(!=)
MPSGEN_VEC_CMP(<)
MPSGEN_VEC_CMP(<=)
MPSGEN_VEC_CMP(>)
MPSGEN_VEC_CMP(>=)
MPSGEN_VEC_CMP(&&)
MPSGEN_VEC_CMP(||)
#undef MPSGEN_VEC_CMP

template <typename T, int N>
constexpr vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = static_cast<T>(-a[i]);
  return r;
}
template <typename T, int N>
constexpr vec<T, N> operator+(const vec<T, N>& a) {
  return a;
}
template <typename T, int N>
constexpr vec<T, N> operator~(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = static_cast<T>(~a[i]);
  return r;
}
template <typename T, int N>
constexpr vec<bool, N> operator!(const vec<T, N>& a) {
  vec<bool, N> r;
  for (int i = 0; i < N; ++i) r[i] = !a[i];
  return r;
}

#define MPSGEN_VEC_TYPES(T)  \
  using T##2 = vec<T, 2>; \
  using T##3 = vec<T, 3>; \
  using T##4 = vec<T, 4>;
MPSGEN_VEC_TYPES(bool)
MPSGEN_VEC_TYPES(char)
MPSGEN_VEC_TYPES(uchar)
MPSGEN_VEC_TYPES(short)
MPSGEN_VEC_TYPES(ushort)
MPSGEN_VEC_TYPES(int)
MPSGEN_VEC_TYPES(uint)
MPSGEN_VEC_TYPES(long)
MPSGEN_VEC_TYPES(ulong)
MPSGEN_VEC_TYPES(half)
MPSGEN_VEC_TYPES(float)
MPSGEN_VEC_TYPES(bfloat)
#undef MPSGEN_VEC_TYPES

// ---- constants ------------------------------------------------------------------------------------
#define MAXFLOAT 0x1.fffffep+127f
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX 0x1.fffffep+127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define HALF_MAX 65504.0f
#define HALF_MIN 0x1p-14f
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H half(M_E_F)
#define M_LN2_H half(M_LN2_F)
#define M_PI_H half(M_PI_F)
#define M_PI_2_H half(M_PI_2_F)
#define M_SQRT2_H half(M_SQRT2_F)

// Metal's `1.5h` literals are rewritten to `1.5_mpsgen_h` in the copy mpsgen compiles.
constexpr half operator""_mpsgen_h(long double v) { return static_cast<half>(static_cast<float>(v)); }
constexpr half operator""_mpsgen_h(unsigned long long v) { return static_cast<half>(static_cast<float>(v)); }

// as_type<T>(v): the same bits seen as another type of the same size; Metal has it everywhere.
template <typename U, typename T>
constexpr U as_type(const T v) {
  static_assert(sizeof(U) == sizeof(T), "as_type needs types of the same size");
  return __builtin_bit_cast(U, v);
}

namespace metal {

// the vector template as Metal names it (`metal::vec<T, 3>`: 2.15's c10/metal/common.h spells it so)
using ::vec;

// ---- type traits ----------------------------------------------------------------------------------
using std::conditional;
using std::conditional_t;
using std::decay_t;
using std::declval;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::integral_constant;
using std::is_const_v;
using std::is_convertible_v;
using std::is_pointer_v;
using std::is_same;
using std::is_same_v;
using std::is_void_v;
using std::remove_const_t;
using std::remove_cv_t;
using std::remove_reference_t;
using std::true_type;

template <typename T> struct vec_element { using type = T; };
template <typename T, int N> struct vec_element<vec<T, N>> { using type = T; };
template <typename T> using vec_element_t = typename vec_element<remove_cv_t<T>>::type;

template <typename T>
struct is_scalar : integral_constant<bool, mpsgen_detail::is_scalar_v<T>> {};
template <typename T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <typename T>
struct is_vector : integral_constant<bool, mpsgen_detail::is_vec<remove_cv_t<T>>::value> {};
template <typename T> constexpr bool is_vector_v = is_vector<T>::value;
template <typename T> struct vec_elements : integral_constant<int, mpsgen_detail::components<remove_cv_t<T>>::value> {};
template <typename T> constexpr int vec_elements_v = vec_elements<T>::value;
// As in Metal, the floating-point and integral traits hold for vectors of such elements too.
template <typename T>
struct is_floating_point : integral_constant<bool, mpsgen_detail::is_float_scalar_v<vec_element_t<T>>> {};
template <typename T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <typename T>
struct is_integral : integral_constant<bool, std::is_integral_v<vec_element_t<T>>> {};
template <typename T> constexpr bool is_integral_v = is_integral<T>::value;
template <typename T>
struct is_arithmetic : integral_constant<bool, is_floating_point_v<T> || is_integral_v<T>> {};
template <typename T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <typename T>
struct is_signed
    : integral_constant<bool, is_floating_point_v<T> || std::is_signed_v<vec_element_t<T>>> {};
template <typename T> constexpr bool is_signed_v = is_signed<T>::value;
template <typename T>
struct is_unsigned : integral_constant<bool, is_integral_v<T> && !is_signed_v<T>> {};
template <typename T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <typename T> using make_unsigned_t = std::make_unsigned_t<T>;
template <typename T> using make_signed_t = std::make_signed_t<T>;

using ::as_type;

template <typename T, size_t N>
using array = std::array<T, N>;

// ---- numeric_limits -------------------------------------------------------------------------------
template <typename T>
struct numeric_limits {
  static constexpr bool is_specialized = false;
};
template <typename T>
struct mpsgen_int_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = std::is_signed_v<T>;
  static constexpr bool is_integer = true;
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr int digits = sizeof(T) * 8 - (std::is_signed_v<T> ? 1 : 0);
  static constexpr T min() { return is_signed ? T(T(1) << (sizeof(T) * 8 - 1)) : T(0); }
  static constexpr T max() { return T(~min()); }
  static constexpr T lowest() { return min(); }
  static constexpr T epsilon() { return T(0); }
};
template <> struct numeric_limits<bool> : mpsgen_int_limits<bool> {
  static constexpr bool min() { return false; }
  static constexpr bool max() { return true; }
  static constexpr bool lowest() { return false; }
};
template <> struct numeric_limits<char> : mpsgen_int_limits<char> {};
template <> struct numeric_limits<uchar> : mpsgen_int_limits<uchar> {};
template <> struct numeric_limits<short> : mpsgen_int_limits<short> {};
template <> struct numeric_limits<ushort> : mpsgen_int_limits<ushort> {};
template <> struct numeric_limits<int> : mpsgen_int_limits<int> {};
template <> struct numeric_limits<uint> : mpsgen_int_limits<uint> {};
template <> struct numeric_limits<long> : mpsgen_int_limits<long> {};
template <> struct numeric_limits<ulong> : mpsgen_int_limits<ulong> {};
template <typename T, typename Bits, Bits kMin, Bits kMax, Bits kLowest, Bits kEps, Bits kInf, Bits kNan,
          Bits kDenorm, int kDigits>
struct mpsgen_float_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = kDigits;
  static constexpr T min() { return __builtin_bit_cast(T, kMin); }
  static constexpr T max() { return __builtin_bit_cast(T, kMax); }
  static constexpr T lowest() { return __builtin_bit_cast(T, kLowest); }
  static constexpr T epsilon() { return __builtin_bit_cast(T, kEps); }
  static constexpr T infinity() { return __builtin_bit_cast(T, kInf); }
  static constexpr T quiet_NaN() { return __builtin_bit_cast(T, kNan); }
  static constexpr T denorm_min() { return __builtin_bit_cast(T, kDenorm); }
};
template <>
struct numeric_limits<float> : mpsgen_float_limits<float, uint, 0x00800000u, 0x7f7fffffu, 0xff7fffffu,
                                                   0x34000000u, 0x7f800000u, 0x7fc00000u, 0x1u, 24> {};
template <>
struct numeric_limits<half> : mpsgen_float_limits<half, ushort, 0x0400, 0x7bff, 0xfbff, 0x1400, 0x7c00,
                                                  0x7e00, 0x1, 11> {};
template <>
struct numeric_limits<bfloat>
    : mpsgen_float_limits<bfloat, ushort, 0x0080, 0x7f7f, 0xff7f, 0x3c00, 0x7f80, 0x7fc0, 0x1, 8> {};
// Vectors: Metal's numeric_limits<float2> gives each value in every component (`.infinity().x`).
template <typename T, int N>
struct numeric_limits<vec<T, N>> {
  using scalar = numeric_limits<T>;
  static constexpr bool is_specialized = scalar::is_specialized;
  static constexpr bool is_signed = scalar::is_signed;
  static constexpr bool is_integer = scalar::is_integer;
  static constexpr bool has_infinity = scalar::has_infinity;
  static constexpr bool has_quiet_NaN = scalar::has_quiet_NaN;
  static constexpr int digits = scalar::digits;
  static constexpr vec<T, N> min() { return vec<T, N>(scalar::min()); }
  static constexpr vec<T, N> max() { return vec<T, N>(scalar::max()); }
  static constexpr vec<T, N> lowest() { return vec<T, N>(scalar::lowest()); }
  static constexpr vec<T, N> epsilon() { return vec<T, N>(scalar::epsilon()); }
  static constexpr vec<T, N> infinity() { return vec<T, N>(scalar::infinity()); }
  static constexpr vec<T, N> quiet_NaN() { return vec<T, N>(scalar::quiet_NaN()); }
  static constexpr vec<T, N> denorm_min() { return vec<T, N>(scalar::denorm_min()); }
};

// ---- math -----------------------------------------------------------------------------------------
// Each function comes as Metal declares it: one overload for float, one for half, and element-wise
// ones for their vectors. Calls with other argument types resolve (or fail to) as they would in Metal.
namespace mpsgen_math {
// sinpi/cospi/tanpi reduce x exactly before multiplying by pi (fmod by 2 is exact), as their Metal
// definitions require: sinpi(n) is a signed zero and cospi(n + 0.5) +0 for every integer n, where
// sin(M_PI_F * n) would be ~1e-7 * n.
inline float sinpi(float x) {
  if (!__builtin_isfinite(x)) return x - x;  // NaN
  const float r = __builtin_fmodf(x, 2.0f);  // exact, with the sign of x
  const float a = __builtin_fabsf(r);        // [0, 2)
  if (a == 0.0f || a == 1.0f) return __builtin_copysignf(0.0f, x);
  // sin(pi a) = sin(pi (1 - a)) on (0.5, 1], -sin(pi (a - 1)) on (1, 1.5], -sin(pi (2 - a)) on (1.5, 2);
  // each t is exact (Sterbenz)
  const float t = a <= 0.5f ? a : a <= 1.0f ? 1.0f - a : a <= 1.5f ? a - 1.0f : 2.0f - a;
  const float v = static_cast<float>(__builtin_sin(3.14159265358979323846 * static_cast<decltype(0.0)>(t)));
  const float signed_v = a > 1.0f ? -v : v;
  return r < 0.0f ? -signed_v : signed_v;
}
inline float cospi(float x) {
  if (!__builtin_isfinite(x)) return x - x;
  float a = __builtin_fabsf(__builtin_fmodf(x, 2.0f));  // cos is even: [0, 2)
  if (a > 1.0f) a = 2.0f - a;                            // exact: cos(pi a) = cos(pi (2 - a))
  if (a == 0.5f) return 0.0f;
  return static_cast<float>(__builtin_cos(3.14159265358979323846 * static_cast<decltype(0.0)>(a)));
}
inline float tanpi(float x) {
  if (!__builtin_isfinite(x)) return x - x;
  const float s = sinpi(x), c = cospi(x);
  return c == 0.0f ? __builtin_copysignf(__builtin_inff(), s) : s / c;
}
inline float exp10(float x) { return __builtin_powf(10.0f, x); }
inline float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
// fract: fmin(x - floor(x), 0x1.fffffep-1f), NaN staying NaN (fmin alone would give 0x1.fffffep-1f).
inline float fract(float x) { return x != x ? x : __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f); }
inline float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == x ? x * 0.0f : 0.0f; }
inline float saturate(float x) { return __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f); }
// powr is defined for x >= 0 only: a negative x gives NaN (pow gives a value for an integer y).
inline float powr(float x, float y) { return x < 0.0f ? __builtin_nanf("") : __builtin_powf(x, y); }
inline float step(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
inline float fclamp(float x, float lo, float hi) { return __builtin_fminf(__builtin_fmaxf(x, lo), hi); }
inline float mix(float x, float y, float a) { return x + (y - x) * a; }
inline float smoothstep(float e0, float e1, float x) {
  const float t = fclamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
}  // namespace mpsgen_math

// Scalar overloads compute in float and round to their type. half and bfloat overloads exist in
// metal:: only (MPSGEN_IF_HALF): precise:: and fast:: are float functions, so `precise::log(10)` and
// `precise::pow(2, x_bfloat)` resolve to float as in Metal.
#define MPSGEN_MAP1(NAME, EXPR)                                                      \
  inline float NAME(float x) { return EXPR; }                                        \
  MPSGEN_IF_HALF(inline bfloat NAME(bfloat b) {                                     \
    const float x = static_cast<float>(b);                                           \
    return static_cast<bfloat>(EXPR);                                                \
  })                                                                                 \
  MPSGEN_IF_HALF(inline half NAME(half h) {                                          \
    const float x = static_cast<float>(h);                                           \
    return static_cast<half>(EXPR);                                                  \
  })                                                                                 \
  template <typename E, int N, std::enable_if_t<mpsgen_detail::is_float_scalar_v<E>, int> = 0> \
  inline vec<E, N> NAME(const vec<E, N>& v) {                                        \
    vec<E, N> r;                                                                     \
    for (int i = 0; i < N; ++i) r[i] = static_cast<E>(NAME(v[i]));                   \
    return r;                                                                        \
  }
#define MPSGEN_MAP2(NAME, EXPR)                                                      \
  inline float NAME(float x, float y) { return EXPR; }                               \
  MPSGEN_IF_HALF(inline bfloat NAME(bfloat bx, bfloat by) {                         \
    const float x = static_cast<float>(bx), y = static_cast<float>(by);              \
    return static_cast<bfloat>(EXPR);                                                \
  })                                                                                 \
  MPSGEN_IF_HALF(inline half NAME(half hx, half hy) {                                \
    const float x = static_cast<float>(hx), y = static_cast<float>(hy);              \
    return static_cast<half>(EXPR);                                                  \
  })                                                                                 \
  template <typename E, int N, std::enable_if_t<mpsgen_detail::is_float_scalar_v<E>, int> = 0> \
  inline vec<E, N> NAME(const vec<E, N>& a, const vec<E, N>& b) {                    \
    vec<E, N> r;                                                                     \
    for (int i = 0; i < N; ++i) r[i] = static_cast<E>(NAME(a[i], b[i]));            \
    return r;                                                                        \
  }
#define MPSGEN_MAP3(NAME, EXPR)                                                      \
  inline float NAME(float x, float y, float z) { return EXPR; }                      \
  MPSGEN_IF_HALF(inline bfloat NAME(bfloat bx, bfloat by, bfloat bz) {              \
    const float x = static_cast<float>(bx), y = static_cast<float>(by), z = static_cast<float>(bz); \
    return static_cast<bfloat>(EXPR);                                                \
  })                                                                                 \
  MPSGEN_IF_HALF(inline half NAME(half hx, half hy, half hz) {                       \
    const float x = static_cast<float>(hx), y = static_cast<float>(hy), z = static_cast<float>(hz); \
    return static_cast<half>(EXPR);                                                  \
  })                                                                                 \
  template <typename E, int N, std::enable_if_t<mpsgen_detail::is_float_scalar_v<E>, int> = 0> \
  inline vec<E, N> NAME(const vec<E, N>& a, const vec<E, N>& b, const vec<E, N>& c) { \
    vec<E, N> r;                                                                     \
    for (int i = 0; i < N; ++i) r[i] = static_cast<E>(NAME(a[i], b[i], c[i]));      \
    return r;                                                                        \
  }
#define MPSGEN_PRED1(NAME, EXPR)                                                     \
  inline bool NAME(float x) { return EXPR; }                                         \
  inline bool NAME(half h) {                                                         \
    const float x = static_cast<float>(h);                                           \
    return EXPR;                                                                     \
  }                                                                                  \
  template <typename E, int N, std::enable_if_t<mpsgen_detail::is_float_scalar_v<E>, int> = 0> \
  inline vec<bool, N> NAME(const vec<E, N>& v) {                                     \
    vec<bool, N> r;                                                                  \
    for (int i = 0; i < N; ++i) r[i] = NAME(v[i]);                                   \
    return r;                                                                        \
  }

// Integer functions: the integer overloads of abs/min/max/clamp and the bit functions.
#define MPSGEN_INT_MATH(T)                                                              \
  inline T abs(T x) { return static_cast<T>(x < 0 ? -x : x); }                          \
  inline T absdiff(T x, T y) { return static_cast<T>(x > y ? x - y : y - x); }          \
  inline T max(T x, T y) { return x > y ? x : y; }                                      \
  inline T min(T x, T y) { return x < y ? x : y; }                                      \
  inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }                       \
  inline T popcount(T x) { return static_cast<T>(__builtin_popcountll(static_cast<unsigned long long>(static_cast<std::make_unsigned_t<T>>(x)))); } \
  inline T ctz(T x) {                                                                   \
    const auto u = static_cast<unsigned long long>(static_cast<std::make_unsigned_t<T>>(x)); \
    return static_cast<T>(u == 0 ? sizeof(T) * 8 : __builtin_ctzll(u));                 \
  }                                                                                     \
  inline T clz(T x) {                                                                   \
    const auto u = static_cast<unsigned long long>(static_cast<std::make_unsigned_t<T>>(x)); \
    return static_cast<T>(u == 0 ? sizeof(T) * 8 : __builtin_clzll(u) - (64 - sizeof(T) * 8)); \
  }                                                                                     \
  template <int N>                                                                      \
  inline vec<T, N> abs(const vec<T, N>& v) {                                            \
    vec<T, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r[i] = abs(v[i]);                                       \
    return r;                                                                           \
  }                                                                                     \
  template <int N>                                                                      \
  inline vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {                        \
    vec<T, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r[i] = max(a[i], b[i]);                                 \
    return r;                                                                           \
  }                                                                                     \
  template <int N>                                                                      \
  inline vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {                        \
    vec<T, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r[i] = min(a[i], b[i]);                                 \
    return r;                                                                           \
  }
#define MPSGEN_ALL_INT_MATH \
  MPSGEN_INT_MATH(char) MPSGEN_INT_MATH(uchar) MPSGEN_INT_MATH(short) MPSGEN_INT_MATH(ushort) \
  MPSGEN_INT_MATH(int) MPSGEN_INT_MATH(uint) MPSGEN_INT_MATH(long) MPSGEN_INT_MATH(ulong)

// The floating-point functions, declared in metal::, metal::precise:: and metal::fast::.
#define MPSGEN_FLOAT_MATH                                                            \
  MPSGEN_MAP1(abs, __builtin_fabsf(x))                                               \
  MPSGEN_MAP1(fabs, __builtin_fabsf(x))                                              \
  MPSGEN_MAP1(acos, __builtin_acosf(x))                                              \
  MPSGEN_MAP1(acosh, __builtin_acoshf(x))                                            \
  MPSGEN_MAP1(asin, __builtin_asinf(x))                                              \
  MPSGEN_MAP1(asinh, __builtin_asinhf(x))                                            \
  MPSGEN_MAP1(atan, __builtin_atanf(x))                                              \
  MPSGEN_MAP1(atanh, __builtin_atanhf(x))                                            \
  MPSGEN_MAP1(cbrt, __builtin_cbrtf(x))                                              \
  MPSGEN_MAP1(ceil, __builtin_ceilf(x))                                              \
  MPSGEN_MAP1(cos, __builtin_cosf(x))                                                \
  MPSGEN_MAP1(cosh, __builtin_coshf(x))                                              \
  MPSGEN_MAP1(cospi, mpsgen_math::cospi(x))                                          \
  MPSGEN_MAP1(exp, __builtin_expf(x))                                                \
  MPSGEN_MAP1(exp2, __builtin_exp2f(x))                                              \
  MPSGEN_MAP1(exp10, mpsgen_math::exp10(x))                                          \
  MPSGEN_MAP1(floor, __builtin_floorf(x))                                            \
  MPSGEN_MAP1(fract, mpsgen_math::fract(x))                                          \
  MPSGEN_MAP1(log, __builtin_logf(x))                                                \
  MPSGEN_MAP1(log2, __builtin_log2f(x))                                              \
  MPSGEN_MAP1(log10, __builtin_log10f(x))                                            \
  MPSGEN_MAP1(rint, __builtin_rintf(x))                                              \
  MPSGEN_MAP1(round, __builtin_roundf(x))                                            \
  MPSGEN_MAP1(rsqrt, mpsgen_math::rsqrt(x))                                          \
  MPSGEN_MAP1(saturate, mpsgen_math::saturate(x))                                    \
  MPSGEN_MAP1(sign, mpsgen_math::sign(x))                                            \
  MPSGEN_MAP1(sin, __builtin_sinf(x))                                                \
  MPSGEN_MAP1(sinh, __builtin_sinhf(x))                                              \
  MPSGEN_MAP1(sinpi, mpsgen_math::sinpi(x))                                          \
  MPSGEN_MAP1(sqrt, __builtin_sqrtf(x))                                              \
  MPSGEN_MAP1(tan, __builtin_tanf(x))                                                \
  MPSGEN_MAP1(tanh, __builtin_tanhf(x))                                              \
  MPSGEN_MAP1(tanpi, mpsgen_math::tanpi(x))                                          \
  MPSGEN_MAP1(trunc, __builtin_truncf(x))                                            \
  MPSGEN_MAP2(atan2, __builtin_atan2f(x, y))                                         \
  MPSGEN_MAP2(copysign, __builtin_copysignf(x, y))                                   \
  MPSGEN_MAP2(divide, x / y)                                                         \
  MPSGEN_MAP2(fdim, __builtin_fdimf(x, y))                                           \
  MPSGEN_MAP2(fmax, __builtin_fmaxf(x, y))                                           \
  MPSGEN_MAP2(fmin, __builtin_fminf(x, y))                                           \
  MPSGEN_MAP2(fmod, __builtin_fmodf(x, y))                                           \
  MPSGEN_MAP2(max, __builtin_fmaxf(x, y))                                            \
  MPSGEN_MAP2(min, __builtin_fminf(x, y))                                            \
  MPSGEN_MAP2(nextafter, __builtin_nextafterf(x, y))                                 \
  MPSGEN_MAP2(pow, __builtin_powf(x, y))                                             \
  MPSGEN_MAP2(powr, mpsgen_math::powr(x, y))                                         \
  MPSGEN_MAP2(step, mpsgen_math::step(x, y))                                         \
  MPSGEN_MAP3(clamp, mpsgen_math::fclamp(x, y, z))                                   \
  MPSGEN_MAP3(fma, __builtin_fmaf(x, y, z))                                          \
  MPSGEN_MAP3(mix, mpsgen_math::mix(x, y, z))                                        \
  MPSGEN_MAP3(smoothstep, mpsgen_math::smoothstep(x, y, z))                          \
  MPSGEN_PRED1(isfinite, __builtin_isfinite(x))                                      \
  MPSGEN_PRED1(isinf, __builtin_isinf(x))                                            \
  MPSGEN_PRED1(isnan, __builtin_isnan(x))                                            \
  MPSGEN_PRED1(isnormal, __builtin_isnormal(x))                                      \
  MPSGEN_PRED1(signbit, __builtin_signbit(x))                                        \
  /* Integers are never NaN or infinite (kernels test this under a runtime `if`). */  \
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>            \
  inline bool isnan(I) { return false; }                                             \
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>            \
  inline bool isinf(I) { return false; }                                             \
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>            \
  inline bool isfinite(I) { return true; }                                           \
  inline float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }              \
  inline half ldexp(half x, int k) { return static_cast<half>(__builtin_ldexpf(static_cast<float>(x), k)); } \
  inline float frexp(float x, thread int& e) { return __builtin_frexpf(x, &e); }     \
  inline half frexp(half x, thread int& e) { return static_cast<half>(__builtin_frexpf(static_cast<float>(x), &e)); } \
  inline float modf(float x, thread float& i) { return __builtin_modff(x, &i); }     \
  inline float sincos(float x, thread float& c) {                                    \
    c = __builtin_cosf(x);                                                           \
    return __builtin_sinf(x);                                                        \
  }                                                                                  \
  inline half sincos(half x, thread half& c) {                                       \
    c = static_cast<half>(__builtin_cosf(static_cast<float>(x)));                    \
    return static_cast<half>(__builtin_sinf(static_cast<float>(x)));                 \
  }                                                                                  \
  inline bool isunordered(float x, float y) { return x != x || y != y; }             \
  inline bool isunordered(half x, half y) { return x != x || y != y; }               \
  inline bool isordered(float x, float y) { return !isunordered(x, y); }             \
  inline bool isordered(half x, half y) { return !isunordered(x, y); }

#define MPSGEN_IF_HALF(...) __VA_ARGS__
MPSGEN_FLOAT_MATH
MPSGEN_ALL_INT_MATH
#undef MPSGEN_IF_HALF
#define MPSGEN_IF_HALF(...)
namespace precise {
MPSGEN_FLOAT_MATH
}  // namespace precise
namespace fast {
MPSGEN_FLOAT_MATH
}  // namespace fast
#undef MPSGEN_IF_HALF
#undef MPSGEN_ALL_INT_MATH
#undef MPSGEN_INT_MATH

#undef MPSGEN_FLOAT_MATH
#undef MPSGEN_MAP1
#undef MPSGEN_MAP2
#undef MPSGEN_MAP3
#undef MPSGEN_PRED1

inline uint mulhi(uint x, uint y) { return static_cast<uint>((static_cast<ulong>(x) * y) >> 32); }
inline int mulhi(int x, int y) { return static_cast<int>((static_cast<long>(x) * y) >> 32); }

// select(a, b, c): b where c holds, else a.
template <typename T, std::enable_if_t<mpsgen_detail::is_scalar_v<T>, int> = 0>
constexpr T select(T a, T b, bool c) {
  return c ? b : a;
}
template <typename T, int N>
constexpr vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
  return r;
}
template <int N>
constexpr bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (!v[i]) return false;
  return true;
}
template <int N>
constexpr bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (v[i]) return true;
  return false;
}
constexpr bool all(bool v) { return v; }
constexpr bool any(bool v) { return v; }

template <typename E, int N>
constexpr E dot(const vec<E, N>& a, const vec<E, N>& b) {
  E r = E(0);
  for (int i = 0; i < N; ++i) r = static_cast<E>(r + a[i] * b[i]);
  return r;
}
template <int N>
inline float length(const vec<float, N>& v) { return __builtin_sqrtf(dot(v, v)); }
template <int N>
inline half length(const vec<half, N>& v) { return static_cast<half>(__builtin_sqrtf(static_cast<float>(dot(v, v)))); }
template <typename E, int N>
inline vec<E, N> normalize(const vec<E, N>& v) {
  return v / length(v);
}

// ---- synchronisation, SIMD groups and atomics (one thread: each lane sees its own value) ----------
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8, mem_object_data = 16 };
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
inline void threadgroup_barrier(mem_flags) {}
inline void simdgroup_barrier(mem_flags) {}

using vote_t = ulong;
struct simd_vote {
  vote_t bits;
  constexpr explicit simd_vote(vote_t v = 0) : bits(v) {}
  constexpr explicit operator vote_t() const { return bits; }
  constexpr bool all() const { return bits == 1; }
  constexpr bool any() const { return bits != 0; }
};
inline simd_vote simd_ballot(bool b) { return simd_vote(b ? 1 : 0); }
inline bool simd_any(bool b) { return b; }
inline bool simd_all(bool b) { return b; }
inline bool simd_is_first() { return true; }
template <typename T> inline T simd_sum(T x) { return x; }
template <typename T> inline T simd_product(T x) { return x; }
template <typename T> inline T simd_max(T x) { return x; }
template <typename T> inline T simd_min(T x) { return x; }
template <typename T> inline T simd_and(T x) { return x; }
template <typename T> inline T simd_or(T x) { return x; }
template <typename T> inline T simd_xor(T x) { return x; }
template <typename T> inline T simd_prefix_inclusive_sum(T x) { return x; }
template <typename T> inline T simd_prefix_exclusive_sum(T) { return T(0); }
template <typename T> inline T simd_prefix_inclusive_product(T x) { return x; }
template <typename T> inline T simd_prefix_exclusive_product(T) { return T(1); }
template <typename T> inline T simd_broadcast(T x, ushort) { return x; }
template <typename T> inline T simd_broadcast_first(T x) { return x; }
template <typename T> inline T simd_shuffle(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_down(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_up(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_xor(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_rotate_down(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_rotate_up(T x, ushort) { return x; }
template <typename T> inline T simd_shuffle_and_fill_down(T x, T, ushort) { return x; }
template <typename T> inline T simd_shuffle_and_fill_up(T x, T, ushort) { return x; }
template <typename T> inline T quad_sum(T x) { return x; }
template <typename T> inline T quad_broadcast(T x, ushort) { return x; }
template <typename T> inline T quad_shuffle_down(T x, ushort) { return x; }

enum memory_order { memory_order_relaxed, memory_order_seq_cst };
template <typename T>
struct atomic {
  T value;
};
using atomic_int = atomic<int>;
using atomic_uint = atomic<uint>;
using atomic_bool = atomic<bool>;
using atomic_float = atomic<float>;
using atomic_ulong = atomic<ulong>;
using atomic_long = atomic<long>;
template <typename T, typename U>
inline void atomic_store_explicit(volatile device atomic<T>* obj, U desired, memory_order) {
  obj->value = static_cast<T>(desired);
}
template <typename T>
inline T atomic_load_explicit(const volatile device atomic<T>* obj, memory_order) {
  return obj->value;
}
template <typename T, typename U>
inline T atomic_exchange_explicit(volatile device atomic<T>* obj, U desired, memory_order) {
  const T old = obj->value;
  obj->value = static_cast<T>(desired);
  return old;
}
template <typename T, typename U>
inline bool atomic_compare_exchange_weak_explicit(volatile device atomic<T>* obj, thread T* expected, U desired,
                                                  memory_order, memory_order) {
  if (obj->value == *expected) {
    obj->value = static_cast<T>(desired);
    return true;
  }
  *expected = obj->value;
  return false;
}
#define MPSGEN_ATOMIC_FETCH(NAME, EXPR)                                                    \
  template <typename T, typename U>                                                        \
  inline T atomic_fetch_##NAME##_explicit(volatile device atomic<T>* obj, U v, memory_order) { \
    const T old = obj->value;                                                              \
    const T arg = static_cast<T>(v);                                                       \
    obj->value = static_cast<T>(EXPR);                                                     \
    return old;                                                                            \
  }
MPSGEN_ATOMIC_FETCH(add, old + arg)
MPSGEN_ATOMIC_FETCH(sub, old - arg)
MPSGEN_ATOMIC_FETCH(and, old & arg)
MPSGEN_ATOMIC_FETCH(or, old | arg)
MPSGEN_ATOMIC_FETCH(xor, old ^ arg)
MPSGEN_ATOMIC_FETCH(max, old > arg ? old : arg)
MPSGEN_ATOMIC_FETCH(min, old < arg ? old : arg)
#undef MPSGEN_ATOMIC_FETCH

}  // namespace metal

// Metal code may also name the precise/fast namespaces from the global scope.
namespace precise = metal::precise;
namespace fast = metal::fast;

// Metal has no double: any later use of the type is an error. (A host-side test driver that converts
// through double defines MPSGEN_METAL_ALLOW_DOUBLE and compiles with -Werror=double-promotion.)
#ifndef MPSGEN_METAL_ALLOW_DOUBLE
#pragma GCC poison double
#endif
