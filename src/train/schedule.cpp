// The log/eval/checkpoint schedule (train/schedule.hpp).
#include "hpctrain/train/schedule.hpp"

namespace hpctrain {

Schedule::Schedule(const Config& cfg, std::int64_t total, bool can_eval)
    : train_(cfg.train), log_(cfg.log), checkpoint_(cfg.checkpoint), total_(total), can_eval_(can_eval) {}

Due Schedule::after(const StepEnd& s) const {
  const std::int64_t done = s.step + 1;
  const bool last = done == total_;
  Due d;
  d.eval = can_eval_ && ((train_.eval_every > 0 && done % train_.eval_every == 0) ||
                         (train_.eval_every == 0 && s.epoch_end) || last);
  d.log = done % log_.log_every == 0 || last || d.eval;
  const auto& c = checkpoint_;
  d.checkpoint = last || s.stop_signal || s.minutes_due || (c.every_steps > 0 && done % c.every_steps == 0) ||
                 (c.every_epochs > 0 && s.epoch_end && (s.epoch + 1) % c.every_epochs == 0);
  return d;
}

}  // namespace hpctrain
