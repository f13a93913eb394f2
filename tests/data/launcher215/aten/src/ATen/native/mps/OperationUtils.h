// The library's launchers defined as templates (mpsgen test data, 2.15-shaped).
#pragma once

#include <ATen/native/mps/MetalShaderLibrary.h>
#include <fmt/format.h>

namespace at::native::mps {

template <typename T>
void MetalShaderLibrary::exec_binary_kernel_with_params(TensorIteratorBase& iter,
                                                        const std::string& name,
                                                        T params,
                                                        const std::string& params_type_name) {
  if (iter.numel() == 0) {
    return;
  }
  Tensor input = iter.input(0);
  Tensor out = iter.output();
  const auto kernel_name = fmt::format("{}_{}_{}_{}_{}",
                                       name,
                                       iter.is_contiguous() ? "dense" : "strided",
                                       scalarToMetalTypeString(out),
                                       scalarToMetalTypeString(input),
                                       params_type_name);
  MPSStream* mpsStream = getCurrentMPSStream();
  dispatch_sync_with_rethrow(mpsStream->queue(), ^() {
    @autoreleasepool {
      auto computeEncoder = mpsStream->commandEncoder();
      auto binaryPSO = getPipelineStateForFunc(kernel_name);
      [computeEncoder setComputePipelineState:binaryPSO];
      bind_iter_tensors(computeEncoder, iter);
      detail::mtl_setArg(computeEncoder, params, 3);
      mtl_dispatch1DJob(computeEncoder, binaryPSO, iter.numel());
    }
  });
}

// Whether a dtype takes the float kernels.
inline bool takesFloatKernels(ScalarType dtype) {
  return dtype == kFloat || dtype == kHalf || dtype == kBFloat16;
}

} // namespace at::native::mps
