// SGD (momentum, Nesterov, weight decay), Adam and AdamW, the learning-rate schedule and
// gradient clipping (optim/optimizer.hpp).
#include "hpctrain/optim/optimizer.hpp"

#include <algorithm>

#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain {

std::vector<DecayRun> decay_runs(const std::vector<std::pair<std::int64_t, Shape>>& params, std::int64_t total,
                                 bool decay_1d) {
  std::vector<DecayRun> runs;
  for (const auto& [offset, shape] : params) {
    const bool decay = decay_1d || shape.size() >= 2;
    if (!runs.empty() && runs.back().decay == decay && runs.back().end == offset)
      runs.back().end += numel(shape);
    else
      runs.push_back({{offset, offset + numel(shape)}, decay});
  }
  std::int64_t covered = 0;
  for (const auto& r : runs) covered += r.size();
  HPCT_CHECK(covered == total, "decay runs cover " + std::to_string(covered) + " of " + std::to_string(total));
  return runs;
}

std::vector<DecayRun> own_runs(const std::vector<DecayRun>& runs, const Ranges& owned, std::int64_t& state_elems) {
  std::vector<DecayRun> out;
  state_elems = 0;
  for (const Range& o : owned)
    for (const DecayRun& r : runs) {
      const std::int64_t b = std::max(o.begin, r.begin), e = std::min(o.end, r.end);
      if (b >= e) continue;
      out.push_back({{b, e}, r.decay, state_elems});
      state_elems += e - b;
    }
  return out;
}

void expand_state(const Optimizer& opt, const float* compact, float* full, std::int64_t n) {
  const std::int64_t s = opt.state_elems();
  for (std::size_t k = 0; k < opt.state_names().size(); ++k)
    for (const DecayRun& r : opt.runs())
      std::copy_n(compact + static_cast<std::int64_t>(k) * s + r.state_at(), r.size(),
                  full + static_cast<std::int64_t>(k) * n + r.begin);
}

void compact_state(const Optimizer& opt, const float* full, std::int64_t n, float* compact) {
  const std::int64_t s = opt.state_elems();
  for (std::size_t k = 0; k < opt.state_names().size(); ++k)
    for (const DecayRun& r : opt.runs())
      std::copy_n(full + static_cast<std::int64_t>(k) * n + r.begin, r.size(),
                  compact + static_cast<std::int64_t>(k) * s + r.state_at());
}

namespace {
// Views of run r of a flat buffer, and of its part of a state block.
Tensor part(const Tensor& t, const DecayRun& r) { return t.view(r.begin, {r.size()}); }
Tensor state_part(const Tensor& t, const DecayRun& r) { return t.view(r.state_at(), {r.size()}); }
// Run r's part of a buffer laid out like the parameters, or of a packed one (ZeRO-2's gradients,
// ZeRO-3's parameters and gradients), laid out like the state.
Tensor part_of(const Tensor& t, const DecayRun& r, bool packed) { return packed ? state_part(t, r) : part(t, r); }

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state, std::vector<DecayRun> runs, Packed packed)
      : cfg_(cfg),
        w_(std::move(params)),
        g_(std::move(grads)),
        m_(std::move(state)),
        runs_(std::move(runs)),
        packed_(packed) {}
  void update(Tensor& scalars) override {
    for (const DecayRun& r : runs_) {
      Tensor w = part_of(w_, r, packed_.params), m = state_part(m_, r);
      sgd_update(w, part_of(g_, r, packed_.grads), m, scalars, static_cast<float>(cfg_.momentum),
                 r.decay ? static_cast<float>(cfg_.weight_decay) : 0.f, cfg_.nesterov);
    }
  }
  Tensor& state() override { return m_; }
  std::int64_t state_elems() const override { return m_.numel(); }
  const std::vector<DecayRun>& runs() const override { return runs_; }
  std::vector<std::string> state_names() const override { return {"momentum"}; }
  const char* name() const override { return "sgd"; }

 private:
  OptimConfig cfg_;
  Tensor w_, g_, m_;
  std::vector<DecayRun> runs_;
  Packed packed_;
};
class Adam final : public Optimizer {
 public:
  Adam(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state, std::vector<DecayRun> runs,
       std::int64_t state_elems, Packed packed)
      : packed_(packed),
        cfg_(cfg),
        w_(std::move(params)),
        g_(std::move(grads)),
        state_(std::move(state)),
        m_(state_.view(0, {state_elems})),
        v_(state_.view(state_elems, {state_elems})),
        runs_(std::move(runs)) {}
  void begin_step(Tensor& scalars, std::int64_t t) override {
    Tensor count = step_scalars::slot(scalars, step_scalars::adam_step);
    fill(count, static_cast<float>(t));  // a write into device memory, not a read back
  }
  void update(Tensor& scalars) override {
    for (const DecayRun& r : runs_) {
      Tensor w = part_of(w_, r, packed_.params), m = state_part(m_, r), v = state_part(v_, r);
      adam_update(w, part_of(g_, r, packed_.grads), m, v, scalars, static_cast<float>(cfg_.beta1),
                  static_cast<float>(cfg_.beta2), static_cast<float>(cfg_.eps),
                  r.decay ? static_cast<float>(cfg_.weight_decay) : 0.f, cfg_.name == OptimizerName::adamw);
    }
  }
  Tensor& state() override { return state_; }
  std::int64_t state_elems() const override { return m_.numel(); }
  const std::vector<DecayRun>& runs() const override { return runs_; }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  const char* name() const override { return cfg_.name == OptimizerName::adamw ? "adamw" : "adam"; }

 private:
  Packed packed_;
  OptimConfig cfg_;
  Tensor w_, g_, state_, m_, v_;  // state_ holds the first and second moments
  std::vector<DecayRun> runs_;
};
}  // namespace

int state_blocks(const OptimConfig& cfg) { return cfg.name == OptimizerName::sgd ? 1 : 2; }

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state,
                                          std::vector<DecayRun> runs, std::int64_t state_elems, Packed packed) {
  HPCT_CHECK(cfg.name != OptimizerName::muon, "make_optimizer: Muon is made by make_muon (its matrices)");
  if (state_elems < 0) {  // the state laid out like the parameters; no runs given: every parameter, decayed
    state_elems = params.numel();
    if (runs.empty()) runs.push_back({{0, params.numel()}, true});
  }  // (else exactly the runs given, possibly none: a pipeline stage whose layers are all frozen)
  for (const DecayRun& r : runs)
    HPCT_CHECK(
        r.state_at() >= 0 && r.state_at() + r.size() <= state_elems && (packed.params || r.end <= params.numel()),
        "optimizer run outside its buffers");
  HPCT_CHECK((!packed.grads || grads.numel() >= state_elems) && (!packed.params || params.numel() >= state_elems),
             "packed gradients or parameters smaller than the state they update");
  HPCT_CHECK(state.numel() == state_blocks(cfg) * state_elems,
             "optimizer state of " + std::to_string(state.numel()) + " elements for " +
                 std::to_string(state_blocks(cfg)) + " blocks of " + std::to_string(state_elems));
  if (cfg.name == OptimizerName::sgd)
    return std::make_unique<Sgd>(cfg, std::move(params), std::move(grads), std::move(state), std::move(runs), packed);
  return std::make_unique<Adam>(cfg, std::move(params), std::move(grads), std::move(state), std::move(runs),
                                state_elems, packed);
}

double learning_rate(const OptimConfig& cfg, std::int64_t step, std::int64_t total) {
  if (cfg.warmup_steps > 0 && step < cfg.warmup_steps)
    return cfg.lr * static_cast<double>(step + 1) / static_cast<double>(cfg.warmup_steps);
  if (cfg.schedule == LrSchedule::step)
    return cfg.lr * std::pow(cfg.gamma, static_cast<double>((step - cfg.warmup_steps) / cfg.step_every));
  if (cfg.schedule == LrSchedule::wsd) {  // stable at lr, then linear to min_lr at the last step
    const std::int64_t decay = std::max<std::int64_t>(1, std::llround(cfg.decay_fraction * static_cast<double>(total)));
    const std::int64_t from = std::max<std::int64_t>(cfg.warmup_steps, total - decay);  // (warm-up first)
    if (step < from) return cfg.lr;
    const double t = std::min(
        1.0, static_cast<double>(step - from + 1) / static_cast<double>(std::max<std::int64_t>(1, total - from)));
    return cfg.lr - (cfg.lr - cfg.min_lr) * t;
  }
  if (cfg.schedule == LrSchedule::cosine) {
    const double span = static_cast<double>(std::max<std::int64_t>(1, total - cfg.warmup_steps));
    const double t = std::min(1.0, static_cast<double>(step - cfg.warmup_steps) / span);
    return cfg.min_lr + (cfg.lr - cfg.min_lr) * 0.5 * (1 + std::cos(M_PI * t));
  }
  return cfg.lr;
}

double clip_by_global_norm(Tensor& grads, double max_norm, double squared_norm) {
  const double norm = std::sqrt(squared_norm >= 0 ? squared_norm : sum_of_squares(grads));
  if (max_norm > 0 && norm > max_norm) scale(grads, static_cast<float>(max_norm / norm));
  return norm;
}

}  // namespace hpctrain
