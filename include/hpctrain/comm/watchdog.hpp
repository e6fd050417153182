// The collective watchdog: a thread per rank that watches every attached
// communicator's log. When an operation has been in flight longer than the
// timeout, it asks the other members' watchdogs (over a private duplicate of
// MPI_COMM_WORLD) where they are, names the collective, its number and the
// ranks that did not arrive, and ends the job with MPI_Abort(exit code 3).
//
// Only one rank reports: among the ranks stuck in a collective on that
// communicator, the largest group stuck in the same one (ties: the group with
// the lowest rank) reports through its lowest rank. Another stuck rank reports
// itself only if the job is still alive a grace period later.
#pragma once

#include <mpi.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hpctrain/comm/collective_log.hpp"
#include "hpctrain/comm/mpi_handles.hpp"

namespace hpctrain {

// One rank's answer about one communicator, as the watchdog exchanges it.
struct RankState {
  int world_rank = -1;
  bool answered = false;
  std::uint64_t collectives_entered = 0;
  bool in_collective = false;
  InFlightOp oldest;      // oldest in-flight collective on the communicator, if any
  double oldest_age = 0;  // seconds
  std::string elsewhere;  // "barrier #2 on 'dp[0]' for 3.1 s" when stuck on another communicator
};

std::string encode_state(const RankState& s);
RankState decode_state(const std::string& text, int world_rank);

// Pure diagnosis from every member's state (tested without MPI). `me` is the
// rank whose operation `stuck` timed out. Returns the report line, and sets
// `reporter` to the world rank that should print it.
std::string diagnose_timeout(const std::string& comm_name, const InFlightOp& stuck, double timeout_s, int me,
                             const std::vector<RankState>& states, int* reporter);

class Watchdog {
 public:
  // Collective over `world`. timeout_s <= 0 disables the checks (the thread
  // still answers other ranks' questions).
  Watchdog(MPI_Comm world, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void attach(const CollectiveLog* log);
  void detach(const CollectiveLog* log);
  double timeout() const { return timeout_s_; }

 private:
  void loop();
  void answer_queries();
  RankState state_of(const std::string& comm_name) const;
  // Asks the members where they are, reports (one rank) and aborts the job.
  [[noreturn]] void handle_timeout(const std::string& name, const std::vector<int>& members, const InFlightOp& stuck);
  [[noreturn]] void report_and_abort(const std::string& line);

  MpiComm comm_;
  int rank_ = 0;
  double timeout_s_ = 0;
  double grace_s_ = 2.0;
  mutable std::mutex mu_;
  std::vector<const CollectiveLog*> logs_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hpctrain
