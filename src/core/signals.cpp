// Preemption signal handlers (core/signals.hpp). Async-signal-safe: the
// handler stores into a lock-free atomic, and on a second signal writes a
// fixed message with write(2) and calls _exit.
#include "hpctrain/core/signals.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace hpctrain {

namespace {
std::atomic<int> g_pending{0};  // NOLINT: a signal handler can reach nothing else
struct sigaction g_old_term, g_old_usr1;
bool g_installed = false;

void on_signal(int sig) {
  int expected = 0;
  if (!g_pending.compare_exchange_strong(expected, sig)) {
    static const char msg[] = "hpctrain: second signal: exiting now without a checkpoint\n";
    const ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(128 + sig);
  }
}
}  // namespace

void install_preemption_signals() {
  if (g_installed) return;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGUSR1, &sa, &g_old_usr1);
  g_pending = 0;
  g_installed = true;
}

void restore_preemption_signals() {
  if (!g_installed) return;
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
  g_installed = false;
}

int pending_preemption_signal() { return g_pending.load(); }

void simulate_preemption_signal(int signal) { on_signal(signal); }

}  // namespace hpctrain
