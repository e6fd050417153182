// Optimizers over the flat parameter and gradient buffers, and the learning
// rate schedule (linear warm-up, then constant, step or cosine decay).
#pragma once

#include <cstdint>
#include <memory>

#include "hpctrain/config/config.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(float lr) = 0;  // uses and keeps the gradients (the caller zeroes them)
  virtual Tensor& state() = 0;      // momentum etc., flat, same size as the parameters
};

// SGD (momentum, Nesterov, weight decay), Adam (L2 decay) or AdamW (decoupled decay).
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, Tensor params, Tensor grads, Allocator& alloc);

// Learning rate for optimizer step `step` (0-based) of `total`.
double learning_rate(const OptimConfig& cfg, std::int64_t step, std::int64_t total);

// Scales the gradients so their global L2 norm is at most `max_norm`; returns the norm before.
double clip_by_global_norm(Tensor& grads, double max_norm);

}  // namespace hpctrain
