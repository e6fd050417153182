// [train] on_nonfinite = skip and spike_factor (docs/training.md): which steps to drop. Every rank
// judges the same numbers (the step's loss over every replica, and whether any rank's gradient
// is not finite), so every rank drops the same steps and the replicas stay identical. What it
// keeps is the TrainState's GuardRecord: checkpointed, so a resumed run goes on judging alike.
#pragma once

#include <cstdint>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/train_state.hpp"

namespace hpctrain {

class LossGuard {
 public:
  enum class Verdict { keep, nonfinite, spike };
  // `record` (outliving the guard) holds what it keeps: a resume that restores it restores the guard.
  LossGuard(const TrainConfig& t, GuardRecord& record)
      : factor_(t.spike_factor), window_(static_cast<std::size_t>(t.spike_window)), r_(record) {}
  // The step's mean loss and whether a gradient is not finite: keep it, or why not. A kept step's
  // loss joins the window (spike_factor > 0; a window restored from a longer spike_window keeps
  // its newest); a dropped one counts (in a row, and in all by reason).
  Verdict judge(double loss, bool nonfinite_gradient);
  double window_mean() const;  // of the kept steps' losses in the window (0 when empty)
  std::int64_t in_a_row() const { return r_.in_a_row; }
  std::int64_t nonfinite() const { return r_.nonfinite; }
  std::int64_t spikes() const { return r_.spikes; }

 private:
  double factor_;
  std::size_t window_;
  GuardRecord& r_;
};

}  // namespace hpctrain
