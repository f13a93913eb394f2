// harness.h: test-side helpers for the functor programs tests/test_catalog.py generates.
// Makes inputs of each Metal type from doubles, calls a functor, and prints one line per call:
//   <op> <group> <in type> <out type> <index> <a.re> <a.im> [<b.re> <b.im> ...] <r.re> <r.im>
// Inputs are printed after conversion to their type, so the Python reference sees what the body saw.
#pragma once

#include <cstdio>
#include <type_traits>
#include <utility>

// The bodies see mpsgen's Metal prelude (mpsgen/metalhost/include) and the miniature checkout's
// c10/metal/utils.h, as a kernel file would. This driver converts through double, which the prelude
// otherwise poisons; the bodies stay double-free through -Werror=double-promotion.
#define MPSGEN_METAL_ALLOW_DOUBLE 1
#include <metal_stdlib>
#include <c10/metal/utils.h>

template <typename T> const char* type_name();
template <> const char* type_name<float>() { return "float"; }
template <> const char* type_name<half>() { return "half"; }
template <> const char* type_name<bfloat>() { return "bfloat"; }
template <> const char* type_name<long>() { return "long"; }
template <> const char* type_name<int>() { return "int"; }
template <> const char* type_name<short>() { return "short"; }
template <> const char* type_name<uchar>() { return "uchar"; }
template <> const char* type_name<char>() { return "char"; }
template <> const char* type_name<bool>() { return "bool"; }
template <> const char* type_name<float2>() { return "float2"; }
template <> const char* type_name<half2>() { return "half2"; }

template <typename T>
T make(double re, double im) {
  (void)im;
  if constexpr (std::is_same_v<T, bool>) {
    return re != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<long>(re));
  } else if constexpr (std::is_same_v<T, float2>) {
    return float2(static_cast<float>(re), static_cast<float>(im));
  } else if constexpr (std::is_same_v<T, half2>) {
    return half2(static_cast<half>(static_cast<float>(re)), static_cast<half>(static_cast<float>(im)));
  } else {
    return static_cast<T>(static_cast<float>(re));
  }
}

template <typename T>
void emit(const T v) {
  if constexpr (std::is_integral_v<T>) {
    std::printf(" %lld 0", static_cast<long long>(v));
  } else if constexpr (std::is_same_v<T, float2> || std::is_same_v<T, half2>) {
    std::printf(" %.17g %.17g", static_cast<double>(static_cast<float>(v.x)),
                static_cast<double>(static_cast<float>(v.y)));
  } else {
    std::printf(" %.17g 0", static_cast<double>(static_cast<float>(v)));
  }
}

template <typename T, typename F>
void run1(const char* op, const char* group, const double* re, const double* im, int n) {
  for (int i = 0; i < n; ++i) {
    const T a = make<T>(re[i], im[i]);
    const auto r = F{}(a);
    std::printf("value %s %s %s %s %d", op, group, type_name<T>(), type_name<std::decay_t<decltype(r)>>(), i);
    emit(a);
    emit(r);
    std::printf("\n");
  }
}

template <typename T, typename F>
void run2(const char* op, const char* group, const double* re0, const double* im0, const double* re1,
          const double* im1, int n) {
  for (int i = 0; i < n; ++i) {
    const T a = make<T>(re0[i], im0[i]);
    const T b = make<T>(re1[i], im1[i]);
    const auto r = F{}(a, b);
    std::printf("value %s %s %s %s %d", op, group, type_name<T>(), type_name<std::decay_t<decltype(r)>>(), i);
    emit(a);
    emit(b);
    emit(r);
    std::printf("\n");
  }
}

// The type a ternary op's Scalar comes in: the input type's op-math type, as the host passes it
// (at::toOpMathType): float for half and bfloat, float2 for half2, any other type itself.
template <typename T> struct scalar_arg { using type = T; };
template <> struct scalar_arg<half> { using type = float; };
template <> struct scalar_arg<bfloat> { using type = float; };
template <> struct scalar_arg<half2> { using type = float2; };

// A ternary functor taking the stub's Scalar (addcmul): three operands of type T and the Scalar,
// of T's op-math type (scalar_arg).
template <typename T, typename F>
void run4(const char* op, const char* group, const double* re0, const double* im0, const double* re1,
          const double* im1, const double* re2, const double* im2, const double* re3, const double* im3, int n) {
  for (int i = 0; i < n; ++i) {
    const T a = make<T>(re0[i], im0[i]);
    const T b = make<T>(re1[i], im1[i]);
    const T c = make<T>(re2[i], im2[i]);
    const auto value = make<typename scalar_arg<T>::type>(re3[i], im3[i]);
    const auto r = F{}(a, b, c, value);
    std::printf("value %s %s %s %s %d", op, group, type_name<T>(), type_name<std::decay_t<decltype(r)>>(), i);
    emit(a);
    emit(b);
    emit(c);
    emit(value);
    emit(r);
    std::printf("\n");
  }
}

// Whether F can be called with `arity` operands of type T, and what it returns then.
template <typename F, typename T, int arity>
void probe(const char* op) {
  if constexpr (arity == 1 && std::is_invocable_v<F, T>) {
    std::printf("probe %s %s %s\n", op, type_name<T>(), type_name<std::decay_t<std::invoke_result_t<F, T>>>());
  } else if constexpr (arity == 2 && std::is_invocable_v<F, T, T>) {
    std::printf("probe %s %s %s\n", op, type_name<T>(), type_name<std::decay_t<std::invoke_result_t<F, T, T>>>());
  } else if constexpr (arity == 4 && std::is_invocable_v<F, T, T, T, typename scalar_arg<T>::type>) {
    // three operands and the Scalar, in T's op-math type (as run4 passes it)
    std::printf("probe %s %s %s\n", op, type_name<T>(),
                type_name<std::decay_t<std::invoke_result_t<F, T, T, T, typename scalar_arg<T>::type>>>());
  } else {
    std::printf("probe %s %s none\n", op, type_name<T>());
  }
}
