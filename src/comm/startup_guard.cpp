// Implementation of the start-up guard (comm/startup_guard.hpp).
#include "hpctrain/comm/startup_guard.hpp"

#include <chrono>
#include <cstdio>

#include "hpctrain/comm/watchdog.hpp"

namespace hpctrain {

std::string describe_startup_timeout(double timeout_s, const std::string& phase) {
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.0f s", timeout_s);
  return std::string("start-up timeout: still ") + phase + " after " + limit +
         "; the ranks wait for one another there (a host that cannot be reached, a rank that did not start, a "
         "configuration file on a file system that does not answer) and the collective watchdog does not run yet "
         "(trainer --startup-timeout sets this limit). Aborting the job with exit code 3.";
}

StartupGuard::StartupGuard(double timeout_s) : timeout_s_(timeout_s) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { wait_for_finish(); });
}

StartupGuard::~StartupGuard() { finish(); }

void StartupGuard::phase(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = what;
}

void StartupGuard::report_to(const std::string& report_file) {
  const long long size = report_file_size(report_file);
  std::lock_guard<std::mutex> lock(mu_);
  report_file_ = report_file;
  report_size_at_start_ = size;
}

void StartupGuard::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StartupGuard::wait_for_finish() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_until(lock, deadline, [this] { return finished_; })) return;
  lock.unlock();
  report_and_abort();
}

void StartupGuard::report_and_abort() {
  std::unique_lock<std::mutex> lock(mu_);
  const std::string line = describe_startup_timeout(timeout_s_, phase_), file = report_file_;
  const long long size = report_size_at_start_;
  lock.unlock();
  report_timeout_and_abort(line, file, size);
}

}  // namespace hpctrain
