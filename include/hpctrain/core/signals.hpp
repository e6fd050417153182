// Preemption signals: SIGTERM and SIGUSR1 (what Slurm's --signal and a cloud
// spot instance's shutdown send) and SIGINT (Ctrl-C) are noted, not acted on, so
// the training loop can agree with the other ranks on a step, write a checkpoint
// and exit with code 10. A second signal while the first is pending, 1 s or more after
// it, ends the process at once (exit 128 + signal number), for a user who does
// not want to wait; within 1 s it is the same request again (Ctrl-C at a
// terminal reaches the ranks and mpirun, which forwards it as SIGTERM).
#pragma once

namespace hpctrain {

// Installs the handlers (idempotent). The previous handlers are restored by
// restore_preemption_signals().
void install_preemption_signals();
void restore_preemption_signals();

// The first preemption signal received since install (0 when none).
int pending_preemption_signal();

// Tests: behave as if `signal` had arrived (goes through the same path).
void simulate_preemption_signal(int signal);

}  // namespace hpctrain
