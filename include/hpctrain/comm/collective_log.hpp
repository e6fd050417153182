// The record of one communicator's operations that the watchdog reads: how
// many collectives each rank has entered, which operations are in flight and
// since when. Numbers count from 1: "allreduce #5" is the fifth allreduce
// issued on that communicator, "collective #9" the ninth collective of any kind.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hpctrain {

struct InFlightOp {
  std::uint64_t id = 0;          // unique per log
  std::uint64_t collective = 0;  // collective number (0 for point-to-point)
  std::string op;                // "allreduce", "barrier", "send", ...
  std::uint64_t op_number = 0;   // number among ops of this name
  double started = 0;            // seconds on the log's steady clock
};

struct LogSnapshot {
  std::uint64_t collectives_entered = 0;
  std::vector<InFlightOp> in_flight;  // oldest first
  double now = 0;
};

// What one operation kind moved so far: its calls and their buffers' bytes (the whole buffer: an
// allreduce's, an all-gather's output, a reduce-scatter's input, a message's).
struct OpTraffic {
  std::uint64_t calls = 0, bytes = 0;
};

class CollectiveLog {
 public:
  CollectiveLog(std::string name, std::vector<int> world_ranks);
  const std::string& name() const { return name_; }
  const std::vector<int>& world_ranks() const { return world_ranks_; }

  // Called when an operation is issued (in issue order); returns its id.
  std::uint64_t enter(const std::string& op, bool collective, std::uint64_t bytes = 0);
  std::map<std::string, OpTraffic> traffic() const;  // per operation kind, since the start
  void leave(std::uint64_t id);
  LogSnapshot snapshot() const;

  // Optional hook the watchdog calls before reading, so implementations whose
  // completion is observed by polling (NCCL events) can call leave().
  void set_poller(std::function<void()> poll);
  void poll() const;

  static double clock();  // steady seconds

 private:
  std::string name_;
  std::vector<int> world_ranks_;
  mutable std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::uint64_t collectives_ = 0;
  std::map<std::string, OpTraffic> traffic_;  // per operation kind (its calls number its operations)
  std::vector<InFlightOp> in_flight_;
  std::function<void()> poller_;
};

}  // namespace hpctrain
