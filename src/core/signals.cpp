// Preemption signal handlers (core/signals.hpp). Async-signal-safe: the
// handler stores into lock-free atomics, and on a second signal (1 s or more
// after the first) writes a fixed message with write(2) and calls _exit.
#include "hpctrain/core/signals.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>

namespace hpctrain {

namespace {
std::atomic<int> g_pending{0};  // NOLINT: a signal handler can reach nothing else
struct sigaction g_old_term, g_old_usr1, g_old_int;
bool g_installed = false;

std::atomic<long long> g_first_ms{0};  // when the first signal came (CLOCK_MONOTONIC, milliseconds)

long long now_ms() {  // (clock_gettime is async-signal-safe)
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

// A second signal within kEchoMs of the first is the same request arriving twice (Ctrl-C reaches
// the ranks directly and again as mpirun's SIGTERM); a later one means "now".
constexpr long long kEchoMs = 1000;

void on_signal(int sig) {
  int expected = 0;
  if (g_pending.compare_exchange_strong(expected, sig)) {
    g_first_ms = now_ms();
    return;
  }
  if (now_ms() - g_first_ms.load() < kEchoMs) return;
  static const char msg[] = "hpctrain: second signal: exiting now without a checkpoint\n";
  const ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(128 + sig);
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
  sigaction(SIGINT, &sa, &g_old_int);
  g_pending = 0;
  g_installed = true;
}

void restore_preemption_signals() {
  if (!g_installed) return;
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  g_installed = false;
}

int pending_preemption_signal() { return g_pending.load(); }

void simulate_preemption_signal(int signal) { on_signal(signal); }

}  // namespace hpctrain
