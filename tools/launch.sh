#!/usr/bin/env bash
# tools/launch.sh [mpirun options] TRAINER DECK [trainer options]: mpirun, with every way of
# stopping it keeping the work (docs/checkpoints.md, "Stopping a run").
#
# Open MPI's mpirun treats SIGINT (Ctrl-C) and SIGTERM as "abort": it sends SIGTERM to the ranks
# and SIGKILL one second later (MCA odls_base_sigkill_timeout = 1), which kills them in the middle
# of writing a checkpoint; it forwards SIGUSR1 as it is. This script runs mpirun in a session of
# its own (the terminal's Ctrl-C reaches this script only), turns SIGINT and SIGTERM into SIGUSR1
# for mpirun (the ranks write a checkpoint and exit 10, which is this script's exit code; a
# second Ctrl-C a second or more later stops them at once). A SIGTERM that reaches mpirun by
# another way (a scheduler signalling every process of the job) still kills the ranks a second
# later: job scripts that launch with mpirun raise that delay (OMPI_MCA_odls_base_sigkill_timeout,
# docs/checkpoints.md; mpirun then also waits twice that long after the ranks exit 10).
#   tools/launch.sh -np 4 build/trainer inputs/mnist_mlp.ini
#   HPCTRAIN_MPIRUN=/opt/openmpi/bin/mpirun tools/launch.sh -np 64 --hostfile hosts build/trainer deck.ini
set -u
mpirun=${HPCTRAIN_MPIRUN:-mpirun}
extra=()
[ "$(id -u)" -eq 0 ] && extra+=(--allow-run-as-root)
pid=
stop() {  # the signal's name
  echo "hpctrain launch: $1: asking the ranks to write a checkpoint and stop (again to stop at once)" >&2
  [ -n "$pid" ] && kill -USR1 "$pid" 2>/dev/null
}
trap 'stop SIGINT' INT
trap 'stop SIGTERM' TERM
setsid "$mpirun" "${extra[@]}" "$@" </dev/null &
pid=$!
# `wait` returns early when a trapped signal arrives: wait until mpirun has ended, then once more
# for its exit code (bash keeps it).
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done
wait "$pid"
