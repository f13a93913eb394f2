// mpsgen test data: legacy MPSGraph code in the shapes upstream's operations/*.mm use (our own code).
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
namespace mps {

struct PairCachedGraph : public MPSCachedGraph {
  PairCachedGraph(MPSGraph* graph) : MPSCachedGraph(graph) {}
  MPSGraphTensor *lhs = nil, *rhs = nil, *result = nil;
};

typedef MPSGraphTensor* (^PairBlock)(PairCachedGraph*, MPSGraphTensor*, MPSGraphTensor*);
#define PairFn(graph, lhs, rhs) MPSGraphTensor*(mps::PairCachedGraph * graph, MPSGraphTensor * lhs, MPSGraphTensor * rhs)

static void pairOpTensor(const Tensor& self, const Tensor& other, const Tensor& output, std::string name, PairBlock block);
static void single_op(const Tensor& self, const Tensor& output, std::string name, MPSGraphTensor* (^block)(MPSGraph*, MPSGraphTensor*));

// Rounds towards zero; integers are their own truncation, old systems have no truncate.
MPSGraphTensor* toward_zero(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
  bool isFloatInput = ([inputTensor dataType] & MPSDataTypeFloatBit) != 0;
  if (!isFloatInput) {
    return inputTensor;
  }
  if (!is_macos_13_or_newer()) {
    return [mpsGraph floorWithTensor:inputTensor name:nil];
  } else {
    return [mpsGraph truncateWithTensor:inputTensor name:nil];
  }
}

} // namespace mps

// Truth-valued pair ops: both operands are read as bool, the selector is pasted
// from the op's word ("{" in a comment is not code).
#define CREATE_PAIR_TRUTH_OP(func_out, func_stub, other_type)                                  \
  Tensor& func_out(const Tensor& self, const other_type& other, Tensor& output) {              \
    mps::pairOp##other_type(self, other, output, #func_stub, ^PairFn(cachedGraph, lhs, rhs) {  \
      MPSGraph* mpsGraph = cachedGraph->graph();                                               \
      return [mpsGraph func_stub##                                                             \
          WithPrimaryTensor:mps::castMPSTensor(mpsGraph, lhs, ScalarType::Bool)                \
            secondaryTensor:mps::castMPSTensor(mpsGraph, rhs, ScalarType::Bool)                \
                       name:nil];                                                              \
    });                                                                                        \
    return output;                                                                             \
  }

CREATE_PAIR_TRUTH_OP(logical_and_out_mps, logicalAND, Tensor);

TORCH_IMPL_FUNC(sign_out_mps)(const Tensor& self, const Tensor& output) {
  mps::single_op(self, output, "sign_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    // no sign for int64: clamped instead
    if ([inputTensor dataType] == MPSDataTypeInt64) {
      return [mpsGraph clampWithTensor:inputTensor
                        minValueTensor:[mpsGraph constantWithScalar:-1 dataType:MPSDataTypeInt64]
                        maxValueTensor:[mpsGraph constantWithScalar:1 dataType:MPSDataTypeInt64]
                                  name:nil];
    }
    return [mpsGraph signWithTensor:inputTensor name:nil];
  });
}

Tensor& logit_out_mps(const Tensor& self, std::optional<double> eps, Tensor& result) {
  mps::single_op(self, result, "logit_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    MPSGraphTensor* one = [mpsGraph constantWithScalar:1.0 shape:@[ @1 ] dataType:inputTensor.dataType];
    MPSGraphTensor* z = inputTensor;
    if (eps.has_value()) {
      MPSGraphTensor* low = [mpsGraph constantWithScalar:eps.value() shape:@[ @1 ] dataType:inputTensor.dataType];
      z = [mpsGraph clampWithTensor:inputTensor minValueTensor:low maxValueTensor:one name:nil];
    }
    return [mpsGraph logarithmWithTensor:[mpsGraph divisionWithPrimaryTensor:z
                                                             secondaryTensor:[mpsGraph subtractionWithPrimaryTensor:one secondaryTensor:z name:nil]
                                                                        name:nil]
                                    name:nil];
  });
  return result;
}

TORCH_IMPL_FUNC(glu_out_mps)(const Tensor& self, const int64_t dim, const Tensor& output) {
  using namespace mps;
  @autoreleasepool {
    std::string key = "glu_out_mps" + getTensorsStringKey({self}) + ":" + std::to_string(dim);
    auto cachedGraph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>(key, [&](auto mpsGraph, auto newCachedGraph) {
      MPSGraphTensor* inputTensor = mpsGraphRankedPlaceHolder(mpsGraph, getMPSDataType(self), getMPSShape(self));
      NSArray<MPSGraphTensor*>* halves = [mpsGraph splitTensor:inputTensor numSplits:2 axis:dim name:nil];
      MPSGraphTensor* outputTensorsArray = halves;
      newCachedGraph->inputTensor_ = inputTensor;
      newCachedGraph->outputTensor_ = [mpsGraph multiplicationWithPrimaryTensor:outputTensorsArray[0]
                                                                secondaryTensor:[mpsGraph sigmoidWithTensor:outputTensorsArray[1] name:nil]
                                                                           name:nil];
    });
    runMPSGraph(getCurrentMPSStream(), cachedGraph->graph(), dictionaryFromPlaceholders(Placeholder(cachedGraph->inputTensor_, self)),
                Placeholder(cachedGraph->outputTensor_, output));
  }
}

TORCH_IMPL_FUNC(expm1_out_mps)(const Tensor& self, const Tensor& output) {
  auto block = [&](MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) -> MPSGraphTensor* {
    auto one = [mpsGraph constantWithScalar:1.0 dataType:inputTensor.dataType];
    return [mpsGraph subtractionWithPrimaryTensor:[mpsGraph exponentWithTensor:inputTensor name:nil] secondaryTensor:one name:nil];
  };
  mps::single_op(self, output, "expm1_out_mps", block);
}

TORCH_IMPL_FUNC(trunc_out_mps)(const Tensor& self, const Tensor& output) {
  mps::single_op(self, output, "trunc_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    return mps::toward_zero(mpsGraph, inputTensor);
  });
}

} // namespace at::native
