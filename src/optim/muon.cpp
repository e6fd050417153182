// Muon for the hidden weight matrices, AdamW for the rest (optim/optimizer.hpp make_muon).
#include <algorithm>
#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain {

void muon_split(const std::vector<ParamTensor>& tensors, bool decay_1d, std::vector<MuonMatrix>& matrices,
                std::vector<DecayRun>& adam_runs) {
  for (const ParamTensor& t : tensors) {
    const bool table = t.layer_type == "embedding" || t.layer_type == "position_embedding" || t.layer_type == "lm_head";
    if (t.shape.size() != 2 || table) {
      adam_runs.push_back({{t.offset, t.offset + numel(t.shape)}, decay_1d || t.shape.size() >= 2});
      continue;
    }
    const std::int64_t rows = t.shape[0], cols = t.shape[1];
    const bool qkv = t.name.size() >= 10 && t.name.compare(t.name.size() - 10, 10, "qkv.weight") == 0;
    if (qkv && rows > cols && (rows - cols) % 2 == 0) {  // q [C, C], then k and v [(rows - C) / 2, C]
      const std::int64_t kv = (rows - cols) / 2;
      matrices.push_back({t.offset, cols, cols});
      matrices.push_back({t.offset + cols * cols, kv, cols});
      matrices.push_back({t.offset + (cols + kv) * cols, kv, cols});
    } else {
      matrices.push_back({t.offset, rows, cols});
    }
  }
}

namespace {
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;  // modded-nanogpt's quintic

class Muon final : public Optimizer {
 public:
  Muon(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state, std::vector<DecayRun> adam_runs,
       std::vector<MuonMatrix> matrices)
      : cfg_(cfg), w_(std::move(params)), g_(std::move(grads)), state_(state), matrices_(std::move(matrices)) {
    OptimConfig adamw = cfg;
    adamw.name = OptimizerName::adamw;
    runs_ = adam_runs;
    adam_ = make_optimizer(adamw, w_, g_, std::move(state), std::move(adam_runs), w_.numel());
    std::int64_t big = 0, square = 0;
    for (const MuonMatrix& m : matrices_) {
      runs_.push_back({{m.offset, m.offset + m.rows * m.cols}, false});
      big = std::max(big, m.rows * m.cols);
      square = std::max(square, std::min(m.rows, m.cols) * std::min(m.rows, m.cols));
    }
    std::sort(runs_.begin(), runs_.end(), [](const DecayRun& a, const DecayRun& b) { return a.begin < b.begin; });
    for (Tensor* t : {&x_, &y_}) *t = Tensor::zeros({std::max<std::int64_t>(big, 1)}, alloc_);
    for (Tensor* t : {&a_, &b_}) *t = Tensor::zeros({std::max<std::int64_t>(square, 1)}, alloc_);
  }
  void begin_step(Tensor& scalars, std::int64_t t) override {
    adam_->begin_step(scalars, t);
    const std::vector<float> lr = to_host(step_scalars::slot(scalars, step_scalars::learning_rate));
    lr_ = cfg_.muon_lr * static_cast<double>(lr.at(0)) / cfg_.lr;  // the schedule's factor, as for lr
  }
  void update(Tensor& scalars) override {
    adam_->update(scalars);
    for (const MuonMatrix& m : matrices_) update_matrix(m);
  }
  Tensor& state() override { return state_; }
  std::int64_t state_elems() const override { return w_.numel(); }
  const std::vector<DecayRun>& runs() const override { return runs_; }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  const char* name() const override { return "muon"; }

 private:
  void update_matrix(const MuonMatrix& mm) {
    const std::int64_t r = mm.rows, c = mm.cols, s = std::min(r, c);
    Tensor w = w_.view(mm.offset, {r, c}), g = g_.view(mm.offset, {r, c}), buf = state_.view(mm.offset, {r, c});
    Tensor x = x_.view(0, {r, c}), y = y_.view(0, {r, c}), a = a_.view(0, {s, s}), b = b_.view(0, {s, s});
    const auto mu = static_cast<float>(cfg_.muon_momentum);
    scale(buf, mu);  // b = mu b + g
    add(buf, g, buf);
    copy(buf, x);  // u = g + mu b (Nesterov)
    scale(x, mu);
    add(x, g, x);
    scale(x, static_cast<float>(1.0 / (std::sqrt(sum_of_squares(x)) + 1e-7)));
    const bool wide = r <= c;  // A on the short side: X X^T [r, r], or X^T X [c, c] (X B on the right)
    for (long k = 0; k < cfg_.ns_steps; ++k) {
      gemm(!wide, wide, 1.f, x, x, 0.f, a);  // A
      copy(a, b);                            // B = b A + c A A
      scale(b, kB);
      gemm(false, false, kC, a, a, 1.f, b);
      copy(x, y);  // X' = a X + B X (wide) or a X + X B (tall)
      scale(y, kA);
      if (wide)
        gemm(false, false, 1.f, b, x, 1.f, y);
      else
        gemm(false, false, 1.f, x, b, 1.f, y);
      std::swap(x, y);
    }
    scale(x, static_cast<float>(-lr_ * std::sqrt(std::max(1.0, static_cast<double>(r) / static_cast<double>(c)))));
    add(w, x, w);
  }

  OptimConfig cfg_;
  Tensor w_, g_, state_;
  std::vector<MuonMatrix> matrices_;
  std::vector<DecayRun> runs_;  // Adam's and the matrices', by offset (checkpoints: expand_state)
  std::unique_ptr<Optimizer> adam_;
  Allocator alloc_{w_.device()};
  Tensor x_, y_, a_, b_;  // Newton-Schulz's iterate and its next value, A and B
  double lr_ = 0;
};
}  // namespace

std::unique_ptr<Optimizer> make_muon(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state,
                                     std::vector<DecayRun> adam_runs, std::vector<MuonMatrix> matrices) {
  HPCT_CHECK(state.numel() == 2 * params.numel(), "muon: state of " + std::to_string(state.numel()) + " elements");
  return std::make_unique<Muon>(cfg, std::move(params), std::move(grads), std::move(state), std::move(adam_runs),
                                std::move(matrices));
}

}  // namespace hpctrain
