// mpsgen's test data: CPU kernels whose scalar lambdas read values their dispatch scope computes
// from the stub's scalars, in the shapes ATen's cpu/*.cpp write them (a direct-initialised copy of
// a double, a Scalar converted once, a bound derived from it, a branch on the scalar choosing
// between two lambdas, a dtype branch beside them). Written for mpsgen's tests; not PyTorch's code.
#include <ATen/native/BinaryOps.h>
#include <ATen/native/UnaryOps.h>

#include <cmath>

#include <ATen/Dispatch.h>
#include <ATen/native/cpu/Loops.h>

namespace at::native {

namespace {

// `const scalar_t d(delta);` reads as a declaration of a function to a parser
void huber_kernel(TensorIterator& iter, double delta) {
  AT_DISPATCH_FLOATING_TYPES_AND2(kBFloat16, kHalf, iter.dtype(), "huber_cpu", [&]() {
    const scalar_t d(delta);
    cpu_kernel(iter, [&d](scalar_t x, scalar_t y) -> scalar_t {
      auto gap = std::abs(x - y);
      return gap < d ? static_cast<scalar_t>(0.5) * gap * gap : d * (gap - static_cast<scalar_t>(0.5) * d);
    });
  });
}

// a bfloat16 branch of its own computing in float; the float32 lambda is the one translated
void smooth_l1_kernel(TensorIteratorBase& iter, double beta) {
  if (iter.dtype() == kBFloat16) {
    const float b_f(static_cast<float>(beta));
    cpu_kernel(iter, [&b_f](BFloat16 x, BFloat16 y) -> BFloat16 {
      float gap = std::abs(float(x) - float(y));
      return gap < b_f ? 0.5f * gap * gap / b_f : gap - 0.5f * b_f;
    });
  } else {
    AT_DISPATCH_FLOATING_TYPES_AND(kHalf, iter.dtype(), "smooth_l1_cpu", [&]() {
      const scalar_t b(beta);
      cpu_kernel(iter, [&b](scalar_t x, scalar_t y) -> scalar_t {
        auto gap = std::abs(x - y);
        return gap < b ? static_cast<scalar_t>(0.5) * gap * gap / b : gap - static_cast<scalar_t>(0.5) * b;
      });
    });
  }
}

// the Scalar converted once, then a branch on it: below zero no clamping, else bounds from it
void logit_backward_kernel(TensorIteratorBase& iter, const Scalar& eps_scalar) {
  AT_DISPATCH_FLOATING_TYPES_AND2(kBFloat16, kHalf, iter.dtype(), "logit_backward_cpu", [&]() {
    const scalar_t e = eps_scalar.to<scalar_t>();
    if (e < scalar_t(0)) {
      cpu_kernel(iter, [](scalar_t g, scalar_t v) {
        if (v < scalar_t(0) || v > scalar_t(1)) {
          return std::numeric_limits<scalar_t>::quiet_NaN();
        }
        return (v == scalar_t(0) || v == scalar_t(1)) ? g * std::numeric_limits<scalar_t>::infinity()
                                                      : g / (v * (scalar_t(1) - v));
      });
    } else {
      const scalar_t low = e;
      const scalar_t high = scalar_t(1) - e;
      cpu_kernel(iter, [low, high](scalar_t g, scalar_t v) {
        return (v < low || v > high) ? scalar_t(0)
            : ((v == scalar_t(0) || v == scalar_t(1)) ? g * std::numeric_limits<scalar_t>::infinity()
                                                      : g / (v * (scalar_t(1) - v)));
      });
    }
  });
}

// a first branch on the iterator with no lambda (a library path), then the branch on the scalar
void logit_kernel(TensorIteratorBase& iter, const Scalar& eps_scalar) {
  AT_DISPATCH_FLOATING_TYPES_AND2(kBFloat16, kHalf, iter.common_dtype(), "logit_cpu", [&]() {
    const scalar_t e = eps_scalar.to<scalar_t>();
    if (iter.numel() == 0) {
      return;
    } else if (e < scalar_t(0)) {
      cpu_kernel(iter, [](scalar_t v) {
        return v == scalar_t(1) ? std::numeric_limits<scalar_t>::infinity() : std::log(v / (scalar_t(1) - v));
      });
    } else {
      const scalar_t low = e;
      const scalar_t high = scalar_t(1) - e;
      cpu_kernel(iter, [low, high](scalar_t v) {
        v = v < low ? low : (v > high ? high : v);
        return v == scalar_t(1) ? std::numeric_limits<scalar_t>::infinity() : std::log(v / (scalar_t(1) - v));
      });
    }
  });
}

// the kernel's own double read in the lambda as it is; an all-types list, though a gradient is
// asked for floating dtypes only
void huber_backward_kernel(TensorIterator& iter, const Scalar& norm, double delta) {
  AT_DISPATCH_ALL_TYPES_AND2(kBFloat16, kHalf, iter.dtype(0), "huber_backward_cpu", [&] {
    auto scale = norm.to<scalar_t>();
    cpu_kernel(iter, [=](scalar_t x, scalar_t y, scalar_t g) -> scalar_t {
      const auto d = x - y;
      if (d <= -delta) {
        return -scale * g * delta;
      } else if (d >= delta) {
        return scale * g * delta;
      }
      return scale * d * g;
    });
  });
}

} // namespace

REGISTER_DISPATCH(huber_backward_stub, &huber_backward_kernel);
REGISTER_DISPATCH(huber_stub, &huber_kernel);
REGISTER_DISPATCH(smooth_l1_stub, &smooth_l1_kernel);
REGISTER_DISPATCH(logit_backward_stub, &logit_backward_kernel);
REGISTER_DISPATCH(logit_stub, &logit_kernel);

} // namespace at::native
