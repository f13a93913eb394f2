#pragma once
#include <c10/metal/common.h>
#include <metal_stdlib>

#define OFFSETS_CONST static constant constexpr const

namespace c10 {
namespace metal {

// Reads a T at a byte offset, from either buffer kind.
template <typename T>
inline T read_at(constant void* base, long offset) {
  return *reinterpret_cast<constant T*>(static_cast<constant char*>(base) + offset);
}

template <typename T>
inline T read_at(device const void* base, long offset) {
  return *reinterpret_cast<device const T*>(
      static_cast<device const char*>(base) + offset);
}

template <typename T>
struct pointee {};
template <typename T>
struct pointee<device T*> {
  using type = T;
};
template <typename T>
struct pointee<thread T*> {
  using type = T;
};
template <typename T>
struct pointee<constant T*> {
  using type = T;
};

struct limits3 {
  OFFSETS_CONST int lanes = 3;
};

inline float ratio(float a, float b) {
  return ::metal::fast::divide(a, b);
}

// Chosen by the size of T: 16 bytes for a float3 as for a float4.
template <typename T, ::metal::enable_if_t<sizeof(T) == 16, bool> = true>
inline int width_class(T) {
  return 16;
}
template <typename T, ::metal::enable_if_t<sizeof(T) == 4, bool> = true>
inline int width_class(T) {
  return 4;
}

} // namespace metal
} // namespace c10
