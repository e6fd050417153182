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
//
// A report goes to stderr and, when a report file is given, is appended to it
// as one line with the time, rank and host: a rank whose host lost the network
// cannot send its stderr to mpirun, so each host keeps its own file (the
// trainer's is <out_dir>/reports/<host>.txt). Across a network partition each
// side reports once, and a host's file gets one line however many of its ranks
// report (the first; the others say it on stderr only).
//
// Heartbeats: every watchdog sends a beat to its two neighbours on a ring of the
// world ranks every timeout/4 (0.5 to 5 s). A neighbour silent for the timeout
// plus twice the grace period is lost (its host down or cut off): the rank that
// notices reports it with its own state and aborts, whatever its main thread is
// doing (a checkpoint's MPI-IO, which no communicator log sees). A watchdog that
// ends sends a last message, so a rank that finishes early is not missed, and
// waits (up to 2 s) for its neighbours' before freeing its communicator.
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

// This host's report file, <out_dir>/reports/<host>.txt (the job scripts watch the folder), and
// its size (-1 when absent), taken when a watcher starts.
std::string host_report_file(const std::string& out_dir);
long long report_file_size(const std::string& path);

// How the watchdog and the start-up guard end the job: `line` on stderr and, when `report_file` is
// given, appended to it as "<UTC time> rank R on HOST: <line>" unless the file grew since
// `size_at_start` (another rank of this host reported first); then MPI_Abort with exit code 3.
[[noreturn]] void report_timeout_and_abort(const std::string& line, const std::string& report_file,
                                           long long size_at_start);

// The report of a lost neighbour (tested without MPI): `silent_s` is how long the
// neighbour has been quiet, `doing` what this rank is doing (Watchdog::activity).
std::string describe_lost_contact(int neighbour, double silent_s, double beat_s, const std::string& doing);

// Pure diagnosis from every member's state (tested without MPI). `me` is the
// rank whose operation `stuck` timed out. Returns the report line, and sets
// `reporter` to the world rank that should print it.
std::string diagnose_timeout(const std::string& comm_name, const InFlightOp& stuck, double timeout_s, int me,
                             const std::vector<RankState>& states, int* reporter);

class Watchdog {
 public:
  // Collective over `world`. timeout_s <= 0 disables the checks (the thread
  // still answers other ranks' questions). report_file: where a report is
  // appended besides stderr (its folder is made then); empty: stderr only.
  Watchdog(MPI_Comm world, double timeout_s, std::string report_file = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void attach(const CollectiveLog* log);
  void detach(const CollectiveLog* log);
  double timeout() const { return timeout_s_; }

 private:
  void loop();
  void answer_queries();
  void send_to_neighbours(const char* payload);          // one byte, which must outlive the send
  void receive_beats(double now);                        // notes every neighbour's beat that came
  int silent_neighbour(double now, double limit) const;  // index in neighbours_, or -1
  // At the end: the last beat to the neighbours, then theirs awaited (up to 2 s). False when one
  // did not come: its messages may still arrive, and the communicator must not be freed.
  bool part_from_neighbours();
  RankState state_of(const std::string& comm_name) const;
  std::string activity() const;  // "in allreduce #3 (collective #5) on 'dp' for 2.0 s", or "in no collective"
  // Asks the members where they are, reports (one rank) and aborts the job.
  [[noreturn]] void handle_timeout(const std::string& name, const std::vector<int>& members, const InFlightOp& stuck);
  [[noreturn]] void report_and_abort(const std::string& line) {
    report_timeout_and_abort(line, report_file_, report_size_at_start_);
  }

  MpiComm comm_;
  int rank_ = 0;
  double timeout_s_ = 0;
  double grace_s_ = 2.0;
  double beat_s_ = 1.0, next_beat_ = 0;
  std::vector<int> neighbours_;     // the ring's, without this rank
  std::vector<double> last_heard_;  // per neighbour: its last beat (CollectiveLog::clock)
  std::vector<bool> finished_;      // per neighbour: its watchdog said it ends
  std::string report_file_;
  long long report_size_at_start_ = -1;  // its size when this watchdog began (-1: absent)
  mutable std::mutex mu_;
  std::vector<const CollectiveLog*> logs_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hpctrain
