// [train] on_nonfinite = skip and spike_factor (docs/training.md): which steps to drop. Every rank
// judges the same numbers (the step's loss over every replica, and whether any rank's gradient
// is not finite), so every rank drops the same steps and the replicas stay identical.
#pragma once

#include <cstdint>
#include <deque>

#include "hpctrain/config/config.hpp"

namespace hpctrain {

class LossGuard {
 public:
  enum class Verdict { keep, nonfinite, spike };
  explicit LossGuard(const TrainConfig& t) : factor_(t.spike_factor), window_(t.spike_window) {}
  // The step's mean loss and whether a gradient is not finite: keep it, or why not. A kept step's
  // loss joins the window; a dropped one counts (in a row, and in all by reason).
  Verdict judge(double loss, bool nonfinite_gradient);
  double window_mean() const;  // of the kept steps' losses in the window (0 when empty)
  std::int64_t in_a_row() const { return in_a_row_; }
  std::int64_t nonfinite() const { return nonfinite_; }
  std::int64_t spikes() const { return spikes_; }

 private:
  double factor_;
  std::size_t window_;
  std::deque<double> losses_;
  double sum_ = 0;
  std::int64_t in_a_row_ = 0, nonfinite_ = 0, spikes_ = 0;
};

}  // namespace hpctrain
