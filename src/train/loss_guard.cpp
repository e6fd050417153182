// Which steps to drop (train/loss_guard.hpp), and the trainer's per-step check that asks it.
#include "hpctrain/train/loss_guard.hpp"

#include <cmath>
#include <cstdio>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

LossGuard::Verdict LossGuard::judge(double loss, bool nonfinite_gradient) {
  std::vector<double>& w = r_.window;
  if (factor_ <= 0) w.clear();  // (no rule: nothing to keep)
  if (w.size() > window_) w.erase(w.begin(), w.end() - static_cast<std::ptrdiff_t>(window_));
  Verdict v = Verdict::keep;
  if (!std::isfinite(loss) || nonfinite_gradient)
    v = Verdict::nonfinite;
  else if (factor_ > 0 && w.size() == window_ && loss > factor_ * window_mean())
    v = Verdict::spike;
  if (v != Verdict::keep) {
    ++r_.in_a_row;
    ++(v == Verdict::spike ? r_.spikes : r_.nonfinite);
    return v;
  }
  r_.in_a_row = 0;
  if (factor_ > 0) {
    if (w.size() == window_) w.erase(w.begin());
    w.push_back(loss);
  }
  return v;
}

// Summed afresh in order, every step: the same bits whether the window was just restored or not.
double LossGuard::window_mean() const {
  const std::vector<double>& w = r_.window;
  double sum = 0;
  for (double x : w) sum += x;
  return w.empty() ? 0 : sum / static_cast<double>(w.size());
}

// ---- the trainer's side ---------------------------------------------------------------------

void Trainer::begin_guarded_step() {
  if (guard_) guard_base_ = peek_interval_sums();  // (where this step's loss sums start)
}

bool Trainer::inject_nan() {
  const std::int64_t step = state_.step + 1;
  const Faults& f = cfg_.faults;
  if (f.nan.rank != rt_.mesh().world_rank() || step < f.nan.step || step >= f.nan.step + f.nan_steps) return false;
  IntervalSums s = peek_interval_sums();  // (as a real NaN would be: in the loss sums and the gradient)
  s.loss = std::nan("");
  set_interval_sums(s);
  Tensor first = model_->gradients().view(0, {1});
  fill(first, std::nanf(""));
  return true;
}

bool Trainer::keep_step(double squares, bool have_squares) {
  const std::int64_t step = state_.step + 1;
  const Faults& f = cfg_.faults;
  const int rank = rt_.mesh().world_rank();
  if (!have_squares) squares = owned_sum_of_squares();
  const IntervalSums now = peek_interval_sums();
  double v[3] = {now.loss - guard_base_.loss, now.samples - guard_base_.samples, std::isfinite(squares) ? 0.0 : 1.0};
  if (f.spike.rank == rank && f.spike.step == step) v[0] *= 1000;
  rt_.world().allreduce(v, v, 3, DType::f64, ReduceOp::sum);  // (every stage and replica: the same verdict)
  const double loss = v[1] > 0 ? v[0] / v[1] : 0;
  const double mean = guard_->window_mean();
  const LossGuard::Verdict verdict = guard_->judge(loss, v[2] > 0);
  if (verdict == LossGuard::Verdict::keep) return true;
  const bool spike = verdict == LossGuard::Verdict::spike;
  char what[200];
  if (spike)
    std::snprintf(what, sizeof what, "loss %.4g > %g x %.4g, the mean of the last %ld steps (a spike)", loss,
                  cfg_.train.spike_factor, mean, cfg_.train.spike_window);
  else
    std::snprintf(what, sizeof what, "loss %.4g%s not finite", loss, v[2] > 0 ? " or a gradient" : "");
  if (!spike && cfg_.train.on_nonfinite == OnNonfinite::stop)
    throw Error(ExitCode::internal, Scope::every_rank,
                "step " + std::to_string(step) + ": " + what +
                    ": stopped ([train] on_nonfinite = stop; skip drops such steps; or lower [optim] lr, set "
                    "clip_norm)");
  set_interval_sums(guard_base_);  // (the step's loss leaves the log's averages)
  char line[320];
  std::snprintf(line, sizeof line,
                "step %lld: %s: step skipped on every rank (%lld in a row; %lld non-finite, %lld "
                "spikes so far)",
                static_cast<long long>(step), what, static_cast<long long>(guard_->in_a_row()),
                static_cast<long long>(guard_->nonfinite()), static_cast<long long>(guard_->spikes()));
  log0(line);
  if (guard_->in_a_row() >= cfg_.train.max_skipped)
    throw Error(ExitCode::internal, Scope::every_rank,
                "step " + std::to_string(step) + ": " + std::to_string(guard_->in_a_row()) +
                    " steps skipped in a row ([train] max_skipped): stopped; the last: " + what +
                    " (lower [optim] lr, set clip_norm, or resume from an earlier checkpoint)");
  return false;
}

}  // namespace hpctrain
