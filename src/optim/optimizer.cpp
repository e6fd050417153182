// SGD (momentum, Nesterov, weight decay), the learning-rate schedule and
// gradient clipping (optim/optimizer.hpp).
#include "hpctrain/optim/optimizer.hpp"

#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
class Sgd final : public Optimizer {
 public:
  Sgd(const OptimConfig& cfg, Tensor params, Tensor grads, Allocator& alloc)
      : cfg_(cfg), w_(std::move(params)), g_(std::move(grads)), m_(Tensor::zeros(w_.shape(), alloc)) {}
  void step(float lr) override {
    sgd_update(w_, g_, m_, lr, static_cast<float>(cfg_.momentum), static_cast<float>(cfg_.weight_decay), cfg_.nesterov);
  }
  Tensor& state() override { return m_; }

 private:
  OptimConfig cfg_;
  Tensor w_, g_, m_;
};
}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, Tensor params, Tensor grads, Allocator& alloc) {
  if (cfg.name != OptimizerName::sgd)
    throw bad_input("[optim] name = adam/adamw is not implemented in this build yet (use sgd)");
  if (cfg.schedule == LrSchedule::step)
    throw bad_input("[optim] schedule = step is not implemented in this build yet (use constant or cosine)");
  return std::make_unique<Sgd>(cfg, std::move(params), std::move(grads), alloc);
}

double learning_rate(const OptimConfig& cfg, std::int64_t step, std::int64_t total) {
  if (cfg.warmup_steps > 0 && step < cfg.warmup_steps)
    return cfg.lr * static_cast<double>(step + 1) / static_cast<double>(cfg.warmup_steps);
  if (cfg.schedule == LrSchedule::cosine) {
    const double span = static_cast<double>(std::max<std::int64_t>(1, total - cfg.warmup_steps));
    const double t = std::min(1.0, static_cast<double>(step - cfg.warmup_steps) / span);
    return cfg.lr * 0.5 * (1 + std::cos(M_PI * t));
  }
  return cfg.lr;
}

double clip_by_global_norm(Tensor& grads, double max_norm) {
  const double norm = std::sqrt(sum_of_squares(grads));
  if (max_norm > 0 && norm > max_norm) scale(grads, static_cast<float>(max_norm / norm));
  return norm;
}

}  // namespace hpctrain
