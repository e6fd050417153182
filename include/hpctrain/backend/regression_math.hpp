// The regression losses' per-element value and derivative (backend regression_loss), shared by
// the CPU and CUDA backends so both compute the same function.
#pragma once

#include <cmath>

#include "hpctrain/backend/ops.hpp"  // RegressionLoss
#include "hpctrain/core/host_device.hpp"

namespace hpctrain::backend {

// The loss of one element whose error is d = pred - target.
HPCT_HOST_DEVICE inline double regression_value(RegressionLoss kind, double delta, double d) {
  const double a = fabs(d);
  switch (kind) {
    case RegressionLoss::mae: return a;
    case RegressionLoss::huber: return a <= delta ? 0.5 * d * d : delta * (a - 0.5 * delta);
    default: return d * d;
  }
}

// Its derivative with respect to pred (mae at d = 0: 0, as PyTorch's sign()).
HPCT_HOST_DEVICE inline float regression_grad(RegressionLoss kind, float delta, float d) {
  switch (kind) {
    case RegressionLoss::mae: return d > 0.f ? 1.f : d < 0.f ? -1.f : 0.f;
    case RegressionLoss::huber: return d > delta ? delta : d < -delta ? -delta : d;
    default: return 2.f * d;
  }
}

}  // namespace hpctrain::backend
