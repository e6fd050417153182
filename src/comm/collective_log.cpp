// Implementation of the per-communicator operation log (comm/collective_log.hpp).
#include "hpctrain/comm/collective_log.hpp"

#include <algorithm>
#include <chrono>

namespace hpctrain {

CollectiveLog::CollectiveLog(std::string name, std::vector<int> world_ranks)
    : name_(std::move(name)), world_ranks_(std::move(world_ranks)) {}

double CollectiveLog::clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t CollectiveLog::enter(const std::string& op, bool collective, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  OpTraffic& kind = traffic_[op];
  kind.bytes += bytes;
  InFlightOp rec;
  rec.id = next_id_++;
  rec.collective = collective ? ++collectives_ : 0;
  rec.op = op;
  rec.op_number = ++kind.calls;
  rec.started = clock();
  in_flight_.push_back(rec);
  return rec.id;
}

void CollectiveLog::leave(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(
      std::remove_if(in_flight_.begin(), in_flight_.end(), [&](const InFlightOp& r) { return r.id == id; }),
      in_flight_.end());
}

std::map<std::string, OpTraffic> CollectiveLog::traffic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return traffic_;
}

LogSnapshot CollectiveLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {collectives_, in_flight_, clock()};
}

void CollectiveLog::set_poller(std::function<void()> poll) {
  std::lock_guard<std::mutex> lock(mu_);
  poller_ = std::move(poll);
}

void CollectiveLog::poll() const {
  std::function<void()> p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = poller_;
  }
  if (p) p();
}

}  // namespace hpctrain
