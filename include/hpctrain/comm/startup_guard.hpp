// The start-up guard. The collective watchdog (comm/watchdog.hpp) runs once the
// Runtime is built; the ranks' collectives before that (reading the
// configuration on rank 0 and handing it out, the node split, the device
// choice, the process mesh, the watchdog's own communicator) are watched by
// this timer instead. A rank still in them after the start-up limit (trainer
// --startup-timeout; a host that cannot be reached, a rank that never started,
// a configuration file on a file system that does not answer) says where it
// is, on stderr and, once [run] out_dir is known, in the host's report file
// the watchdog also writes, and ends the job with exit code 3. Without it such
// a job waits until the scheduler's time limit.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace hpctrain {

// The report line (tested without MPI): `phase` is what the rank was doing.
std::string describe_startup_timeout(double timeout_s, const std::string& phase);

class StartupGuard {
 public:
  explicit StartupGuard(double timeout_s);  // <= 0: no limit (no thread)
  ~StartupGuard();                          // finish()
  StartupGuard(const StartupGuard&) = delete;
  StartupGuard& operator=(const StartupGuard&) = delete;

  void phase(const std::string& what);             // what this rank does from now on
  void report_to(const std::string& report_file);  // also append the report there
  void finish();                                   // start-up is over (the watchdog runs): the timer stops

 private:
  void wait_for_finish();
  [[noreturn]] void report_and_abort();

  double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::string phase_ = "starting";
  std::string report_file_;
  long long report_size_at_start_ = -1;
  std::thread thread_;
};

}  // namespace hpctrain
