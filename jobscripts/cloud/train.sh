#!/bin/bash
# A rented multi-GPU machine (or any single host): one rank per GPU (nvidia-smi), or
# HPCTRAIN_RANKS of them on a CPU-only machine, in a fixed run directory, so that running the
# same command again after a restart (a spot instance coming back) resumes from the newest
# checkpoint. A stop signal (SIGTERM from a shutdown, or SIGUSR1) makes the ranks write a
# checkpoint and exit with code 10; the script then exits 10 too, unless HPCTRAIN_RETRY is set,
# in which case it starts again at once (useful when a watchdog, not a shutdown, stopped it).
#
#   jobscripts/cloud/train.sh inputs/mnist_cnn.ini [trainer options ...]
#   # after a reboot, e.g. from cron "@reboot" or a systemd unit: the same command
#
#   HPCTRAIN_TRAINER  the trainer (default: build/trainer beside this script's repository, else `trainer` on PATH)
#   HPCTRAIN_OUT_DIR  run directory (default: runs/cloud-<INI name>)
#   HPCTRAIN_RANKS    ranks when no GPU is found (default: the number of cores)
#   HPCTRAIN_MPIRUN   the launcher (default: mpirun)
set -u
[ $# -ge 1 ] || { echo "usage: $0 INPUT.ini [trainer options ...]" >&2; exit 2; }
ini=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
trainer=${HPCTRAIN_TRAINER:-}
if [ -z "$trainer" ]; then  # a source tree's build, else an installed trainer on PATH
  if [ -x $root/build/trainer ]; then trainer=$root/build/trainer; else trainer=$(command -v trainer || echo $root/build/trainer); fi
fi
out_dir=${HPCTRAIN_OUT_DIR:-runs/cloud-$(basename "$ini" .ini)}
gpus=0
command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$gpus" -gt 0 ]; then
  ranks=$gpus device=cuda
else
  ranks=${HPCTRAIN_RANKS:-$(nproc)} device=cpu
fi
extra=()
[ "$(id -u)" -eq 0 ] && extra+=(--allow-run-as-root)
echo "hpctrain cloud: $ranks rank(s) on $device, out_dir $out_dir"
# mpirun answers a SIGTERM by killing the ranks a second later, mid-checkpoint, unless this delay
# is longer than a step plus a checkpoint write (docs/checkpoints.md, "Stopping a run"; mpirun
# then waits twice as long after the ranks exit 10).
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-${HPCTRAIN_STOP_GRACE_S:-10}}
launcher_pid=
trap 'echo "hpctrain cloud: SIGUSR1: asking the ranks to checkpoint"; [ -n "$launcher_pid" ] && kill -USR1 "$launcher_pid"' USR1
trap 'echo "hpctrain cloud: SIGTERM: the ranks checkpoint and stop"' TERM
while :; do
  ${HPCTRAIN_MPIRUN:-mpirun} "${extra[@]}" -np "$ranks" --bind-to none "$trainer" "$ini" "$@" \
    --set "run.device=$device" --set "run.out_dir=$out_dir" --set checkpoint.resume=auto &
  launcher_pid=$!
  while kill -0 "$launcher_pid" 2>/dev/null; do wait "$launcher_pid"; done
  wait "$launcher_pid"
  rc=$?
  echo "hpctrain cloud: trainer exit code $rc"
  [ $rc -eq 10 ] && [ -n "${HPCTRAIN_RETRY:-}" ] && continue
  [ $rc -eq 4 ] && echo "hpctrain cloud: exit code 4: a checkpoint could not be written (disk full or write error; see the line above): not requeued. Free space in the checkpoint directory or fix it, then resubmit: the run resumes from the newest complete checkpoint"
  [ $rc -eq 5 ] && echo "hpctrain cloud: exit code 5: the data-parallel replicas diverged (see the line above: a rank's memory or device may be faulty): not requeued. Resubmit without that node: the run resumes from the newest checkpoint, which was checked before it was written"
  exit $rc
done
