#line 1 "<mpsgen try kernels>"
// mpsgen try: softplus_functor over buffers, one thread per element.
// The functor's params struct comes in buffer(2): on MPS, a tensor holding its bytes.

kernel void mpsgen_try_float(
    device ::c10::metal::result_of<softplus_functor, float, SoftplusParams_float>* out [[buffer(0)]],
    constant float* in0 [[buffer(1)]],
    constant SoftplusParams_float& alpha [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  softplus_functor f;
  out[i] = f(in0[i], alpha);
}

kernel void mpsgen_try_half(
    device ::c10::metal::result_of<softplus_functor, half, SoftplusParams_half>* out [[buffer(0)]],
    constant half* in0 [[buffer(1)]],
    constant SoftplusParams_half& alpha [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  softplus_functor f;
  out[i] = f(in0[i], alpha);
}

kernel void mpsgen_try_bfloat(
    device ::c10::metal::result_of<softplus_functor, bfloat, SoftplusParams_bfloat>* out [[buffer(0)]],
    constant bfloat* in0 [[buffer(1)]],
    constant SoftplusParams_bfloat& alpha [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  softplus_functor f;
  out[i] = f(in0[i], alpha);
}
