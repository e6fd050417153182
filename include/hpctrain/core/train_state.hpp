// Where a training run stands: the only thing the training loop changes between steps and,
// besides tensors, the only thing a checkpoint stores about the run's progress. The fields are
// listed once more, with their names in the checkpoint file, in io/checkpoint_file.hpp's
// visit_fields(); a test fails when a field here is missing there (docs/contributing.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hpctrain {

// Dynamic loss scaling for [precision] dtype = fp16: the loss gradient is multiplied by `scale`;
// an overflow anywhere skips the update on every rank and halves the scale (not below 1);
// `window` good steps in a row double it. Fixed at 1 in the other precisions.
struct LossScaler {
  double scale = 1;
  std::int64_t good_steps = 0;     // steps since the scale last changed
  std::int64_t skipped_steps = 0;  // updates skipped for overflow so far

  void overflow() {
    ++skipped_steps;
    scale = std::max(1.0, scale / 2);
    good_steps = 0;
  }
  void good_step(std::int64_t window) {
    if (++good_steps >= window) {
      scale *= 2;
      good_steps = 0;
    }
  }
};

// [train] on_nonfinite = skip and spike_factor's record (train/loss_guard.hpp): the spike rule's
// window and the dropped steps, so that a resumed run judges its steps as the uninterrupted run.
struct GuardRecord {
  std::vector<double> window;  // the mean losses of the last kept steps, oldest first (spike_factor > 0)
  std::int64_t in_a_row = 0;   // steps dropped in a row
  std::int64_t nonfinite = 0;  // steps dropped so far for a non-finite loss or gradient ...
  std::int64_t spikes = 0;     // ... and for a loss spike
};

struct TrainState {
  std::int64_t step = 0;             // optimizer steps done (skipped fp16 steps included)
  std::int64_t epoch = 0;            // where the sampler goes on: epoch (0-based) ...
  std::int64_t epoch_step = 0;       // ... and global batch within it
  std::int64_t samples = 0;          // global samples consumed
  double train_seconds = 0;          // training wall time over all runs so far (set when a checkpoint is written)
  double last_loss = 0;              // the mean training loss of the last log interval
  std::int64_t optimizer_steps = 0;  // updates applied (Adam's bias-correction count)
  LossScaler scaler;
  GuardRecord guard;
};

}  // namespace hpctrain
