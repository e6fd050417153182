// When the training loop logs, evaluates and checkpoints: a pure function of the step, the
// epoch position and two facts only the loop knows (a preemption signal, the minutes since the
// last checkpoint), so the rules are unit-tested without training (tests/unit/test_schedule.cpp).
#pragma once

#include <cstdint>

#include "hpctrain/config/config.hpp"

namespace hpctrain {

// What is due after a step.
struct Due {
  bool log = false;         // a progress line and a metrics row
  bool eval = false;        // an evaluation on the val (else test) split, logged with the row
  bool checkpoint = false;  // a checkpoint
};

// Where the loop stands after a step, as the schedule sees it.
struct StepEnd {
  std::int64_t step = 0;     // 0-based index of the step just done
  std::int64_t epoch = 0;    // its epoch (0-based)
  bool epoch_end = false;    // it was the last step of its epoch
  bool stop_signal = false;  // a rank got SIGTERM/SIGUSR1 (agreed over the ranks)
  bool minutes_due = false;  // [checkpoint] every_minutes have passed since the last checkpoint (agreed)
};

class Schedule {
 public:
  // `total`: the run's last step count; `can_eval`: the dataset has a val or test split.
  Schedule(const Config& cfg, std::int64_t total, bool can_eval);

  // Logging: every log_every steps, at the last step and with every evaluation. Evaluation:
  // every eval_every steps (0: at each epoch's end) and at the last step. Checkpoints: every
  // every_steps steps, every every_epochs epochs (at the epoch's end), after every_minutes, on a
  // preemption signal and at the last step.
  Due after(const StepEnd& s) const;
  std::int64_t total() const { return total_; }

 private:
  TrainConfig train_;
  LogConfig log_;
  CheckpointConfig checkpoint_;
  std::int64_t total_;
  bool can_eval_;
};

}  // namespace hpctrain
