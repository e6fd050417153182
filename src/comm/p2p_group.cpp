// Deferred, grouped point-to-point operations (comm/p2p_group.hpp).
#include "hpctrain/comm/p2p_group.hpp"

namespace hpctrain {

void P2pGroup::add(std::function<void()> issue, std::function<void()> after) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.push_back({std::move(issue), std::move(after)});
}

void P2pGroup::flush() {
  std::vector<Entry> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queued_);
  }
  if (batch.empty()) return;
  calls_.group_start();
  try {
    for (auto& e : batch) e.issue();
  } catch (...) {
    calls_.group_end();  // the group is closed even when a call failed (the error goes on)
    throw;
  }
  calls_.group_end();
  for (auto& e : batch)
    if (e.after) e.after();
}

std::size_t P2pGroup::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_.size();
}

}  // namespace hpctrain
