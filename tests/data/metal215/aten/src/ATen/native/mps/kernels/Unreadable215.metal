#include <ATen/native/mps/kernels/Order.h>
#include <ATen/native/mps/kernels/Raytrace.h>
#include <metal_stdlib>
using namespace metal;

kernel void trace(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = hit_distance(float(i));
}
