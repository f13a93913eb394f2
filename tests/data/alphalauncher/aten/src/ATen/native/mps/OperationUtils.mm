// mpsgen test fixture: the library's launcher definitions, in the shape the real file has them.
#include <ATen/native/mps/MetalShaderLibrary.h>
#include <ATen/native/mps/OperationUtils.h>
#include <fmt/format.h>

namespace at::native::mps {

void MetalShaderLibrary::exec_binary_kernel(TensorIteratorBase& iter, const std::string& name) {
  if (iter.numel() == 0) {
    return;
  }
  MPSStream* mpsStream = getCurrentMPSStream();
  const auto kernel_name = fmt::format("{}_dense_{}_{}", name, scalarToMetalTypeString(iter.output()),
                                       scalarToMetalTypeString(iter.input(0)));
  dispatch_sync_with_rethrow(mpsStream->queue(), ^() {
    @autoreleasepool {
      auto computeEncoder = mpsStream->commandEncoder();
      auto pso = getPipelineStateForFunc(kernel_name);
      getMPSProfiler().beginProfileKernel(pso, kernel_name, {iter.input(0), iter.input(1)}, mpsStream);
      [computeEncoder setComputePipelineState:pso];
      bind_iter_tensors(computeEncoder, iter);
      mtl_dispatch1DJob(computeEncoder, pso, iter.numel());
      getMPSProfiler().endProfileKernel(pso, mpsStream);
    }
  });
}

void MetalShaderLibrary::exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name) {
  // "{" in a string and a comment with } must not end the function
  if (iter.numel() == 0) {
    return;
  }
  MPSStream* mpsStream = getCurrentMPSStream();
  const auto kernel_name = fmt::format("{}_{}_{}_{}", name, iter.is_contiguous() ? "dense" : "strided",
                                       scalarToMetalTypeString(iter.output()), scalarToMetalTypeString(iter.input(0)));
  dispatch_sync_with_rethrow(mpsStream->queue(), ^() {
    @autoreleasepool {
      auto computeEncoder = mpsStream->commandEncoder();
      auto pso = getPipelineStateForFunc(kernel_name);
      getMPSProfiler().beginProfileKernel(pso, kernel_name, {iter.input(0), iter.input(1), iter.input(2)}, mpsStream);
      [computeEncoder setComputePipelineState:pso];
      bind_iter_tensors(computeEncoder, iter);
      mtl_dispatch1DJob(computeEncoder, pso, iter.numel());
      getMPSProfiler().endProfileKernel(pso, mpsStream);
    }
  });
}

MetalShaderLibrary& MetalShaderLibrary::getBundledLibrary() {
  static MetalShaderLibrary l("");
  return l;
}

} // namespace at::native::mps
