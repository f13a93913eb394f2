#pragma once
// Shared between host code and Metal shaders; the branch is chosen before any Metal header.

#ifdef __METAL__
#include <metal_array>
#define MPSGEN_FIXTURE_CONSTEXPR constant constexpr
#else
#include <c10/util/host_only_complex.h>
#include <array>
#define MPSGEN_FIXTURE_CONSTEXPR constexpr
#endif

namespace c10 {
namespace metal {
MPSGEN_FIXTURE_CONSTEXPR unsigned fixture_lanes = 4;

#ifdef __METAL__
template <typename T>
using vec3 = ::metal::vec<T, 3>;
template <typename T>
using complex = ::metal::vec<T, 2>;
#else
template <typename T>
struct vec3 {
  T x, y, z;
};
#endif
} // namespace metal
} // namespace c10
