// Index kernels still on MPSGraph (mpsgen test fixture, written for it).
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {

Tensor& take_out_mps(const Tensor& self, const Tensor& index, Tensor& out) {
  using namespace mps;
  @autoreleasepool {
    MPSGraph* graph = make_mps_graph();
    MPSGraphTensor* flat = [graph reshapeTensor:mpsGraphRankedPlaceHolder(graph, self) withShape:@[ @-1 ] name:nil];
    [graph gatherWithUpdatesTensor:flat indicesTensor:mpsGraphRankedPlaceHolder(graph, index) axis:0 batchDimensions:0 name:nil];
  }
  return out;
}

} // namespace at::native
