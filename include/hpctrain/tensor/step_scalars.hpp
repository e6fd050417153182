// The per-step scalars of training, kept in one small tensor on the compute
// device (from the model's allocator) rather than pulled to the host every
// step: the loss operations add their sums into it, the optimizers read the
// learning rate (and Adam its step count) from it, and the host reads it only
// when it logs, evaluates or checkpoints. A GPU step captured once and
// replayed (CUDA graphs) can then run without a host round trip.
#pragma once

#include <cstdint>
#include <vector>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::step_scalars {

enum Slot : std::int64_t {
  loss_sum = 0,       // sum of per-sample losses since the last reset
  correct = 1,        // samples whose largest logit is the label (classification)
  samples = 2,        // samples the two sums cover
  learning_rate = 3,  // the rate of the next optimizer step
  adam_step = 4,      // Adam's update count, from 1 (bias correction)
  count = 5
};

// A zeroed scalars tensor on `alloc`'s device.
Tensor make(Allocator& alloc);
// One slot as a [1] view (for fill() and the operations).
Tensor slot(const Tensor& scalars, Slot s);
// Host copy of every slot (the only place the host reads them).
std::vector<float> to_host(const Tensor& scalars);

}  // namespace hpctrain::step_scalars
