#pragma once
#include <c10/metal/common.h>
#include <metal_stdlib>

inline float hit_distance(float origin) {
  ::metal::raytracing::ray r;
  r.origin = float3(origin);
  return r.max_distance;
}
