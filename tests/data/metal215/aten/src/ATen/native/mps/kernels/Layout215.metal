#include <ATen/native/mps/kernels/Order.h>
#include <c10/metal/offsets.h>
#include <metal_stdlib>
using namespace metal;
using namespace c10::metal;

struct scale_functor {
  template <typename T>
  inline T operator()(const T x, constant OrderParams& p) {
    return static_cast<T>(ratio(float(x), p.scale));
  }
};

kernel void scale_dense(
    device float* out [[buffer(0)]],
    constant void* in [[buffer(1)]],
    device const void* again [[buffer(2)]],
    constant OrderParams& params [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  scale_functor f;
  const float a = read_at<float>(in, i * sizeof(float));
  const float b = read_at<float>(again, i * sizeof(float));
  typename pointee<device float*>::type c = a + b;
  out[i] = f(c, params) + width_class(float3(a)) + width_class(a) + limits3::lanes;
}
