#!/usr/bin/env bash
# slurm.sh TRAINER SOURCE_DIR: a live one-node Slurm cluster on this machine runs
# jobscripts/slurm/train.sbatch.
# - installs slurm-wlm and munge when missing (skips, exit 77, only where they cannot be
#   installed); starts munged, slurmctld and slurmd by hand (no systemd) with a
#   configuration in a temporary directory; stops only the daemons it started;
# - `sbatch --wait` of the MNIST MLP example (2 tasks, srun --mpi=pmix) exits 0 and trains;
# - the same with HPCTRAIN_LAUNCHER=mpirun;
# - preemption (mpirun launcher): SIGUSR1 sent to a running job's batch shell (what --signal=B:USR1@60 sends)
#   makes the ranks write a checkpoint and exit 10; the script requeues the job; the second
#   run (SLURM_RESTART_COUNT=1) resumes from that checkpoint and completes.
set -u
trainer=$1
src=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# (mpirun's grace after a SIGTERM, which it also waits out after every exit 10: not what this tests)
export HPCTRAIN_STOP_GRACE_S=1

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      slurm-wlm munge >/dev/null; } || { echo "SKIP: slurm-wlm and munge cannot be installed here"; exit 77; }
fi
[ "$(id -u)" -eq 0 ] || { echo "SKIP: starting slurmd needs root"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tmp=$(mktemp -d /tmp/hpct-slurm.XXXXXX)
chmod 755 "$tmp"
started=()
cleanup() {  # only what this test started: the daemons reading our configuration, our munged
  pkill -f "slurmctld -f $tmp/slurm.conf" 2>/dev/null
  pkill -f "slurmd -f $tmp/slurm.conf" 2>/dev/null
  for pidfile in "${started[@]}"; do [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null; done
  sleep 1
  rm -rf "$tmp"
}
trap cleanup EXIT

# munge: reuse a working munged, else start one as user munge.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -f /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null;
    chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  install -d -o munge -g munge -m 755 /run/munge /var/lib/munge /var/log/munge
  install -d -o munge -g munge "$tmp/munge"  # munged writes its pid file as user munge
  runuser -u munge -- munged --pid-file="$tmp/munge/munged.pid" 2>"$tmp/munged.err" || { cat "$tmp/munged.err"; exit 1; }
  for _ in $(seq 50); do [ -s "$tmp/munge/munged.pid" ] && break; sleep 0.1; done
  started+=("$tmp/munge/munged.pid")
fi

host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=hpct
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobRequeue=1
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=30
NodeName=$host CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$tmp/slurm.conf"
slurmd -f "$tmp/slurm.conf"
ready=0
for _ in $(seq 60); do
  sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix)' && { ready=1; break; }
  sleep 0.5
done
check "slurmctld and slurmd up: the node is idle" test $ready -eq 1
[ $ready -eq 1 ] || { tail -5 "$tmp/slurmctld.log" "$tmp/slurmd.log"; finish; }

job=jobscripts/slurm/train.sbatch
common=(--set "data.path=$src/inputs/data/mnist-small" --set log.log_every=10)

# ---- A job that runs to the end ----
for launcher in srun mpirun; do
  out=$tmp/$launcher.out
  HPCTRAIN_LAUNCHER=$launcher HPCTRAIN_TRAINER=$trainer HPCTRAIN_OUT_DIR=$tmp/run-$launcher \
    sbatch --wait --ntasks-per-node=2 --output="$out" --chdir="$src" "$job" inputs/mnist_mlp.ini \
    --set train.steps=20 "${common[@]}" >/dev/null
  rc=$?
  check "sbatch --wait ($launcher): exit 0" test $rc -eq 0
  check "sbatch --wait ($launcher): 2 ranks trained 20 steps" grep -q "^done: 20 steps" "$out"
  check "sbatch --wait ($launcher): final checkpoint" test -f "$tmp/run-$launcher/checkpoints/ckpt-00000020.h5"
  grep -E "^hpctrain job|^done" "$out" | head -3
done

# ---- Preemption: signal -> checkpoint -> exit 10 -> requeue -> resume ----
out=$tmp/preempt.out
# Launched with mpirun: a requeued job reuses its job and step ids on the same node at once here,
# and Slurm's PMIx plugin (srun --mpi=pmix) leaves the first run's step socket behind, so the
# second srun launch fails on this one-node test cluster (the requeue hold of a real cluster, or
# another node, avoids that; docs/clusters.md "Slurm").
jobid=$(HPCTRAIN_LAUNCHER=mpirun HPCTRAIN_TRAINER=$trainer HPCTRAIN_OUT_DIR=$tmp/run-preempt sbatch --parsable --ntasks-per-node=2 \
  --output="$out" --chdir="$src" "$job" inputs/mnist_mlp.ini --set train.steps=300 "${common[@]}")
for _ in $(seq 600); do grep -q '^epoch ' "$out" 2>/dev/null && break; sleep 0.1; done
scancel --signal=USR1 --batch "$jobid"
# The requeued job is held about 2 minutes before it may start; once the first run is gone from
# the node, let it start now (repeated: the update only takes while the job is pending). Done
# when the second run has reported its exit code (at most 300 s: in two full-suite runs the
# requeued job had not started within the former 150 s).
# Not in the second the node went idle: slurmd revokes a killed job's credential with a time in
# whole seconds and refuses a relaunch whose credential is from that same second ("Job N already
# killed, do not launch batch job" in slurmd's log; seen once in CI, 2026-12-02, after which the
# job never ran again). Two seconds after the node is first seen idle, the new credential is
# always newer. A job left held by such a refusal ("launch failed requeued held") is released.
idle_since=0
for _ in $(seq 600); do
  [ "$(grep -c 'trainer exit code' "$out" 2>/dev/null)" -ge 2 ] && break
  state=$(squeue -h -j "$jobid" -o '%T %r' 2>/dev/null)
  node=$(sinfo -h -n "$host" -o %t 2>/dev/null)
  echo "$(date +%T.%N | cut -c1-12) job: ${state:-gone} node: $node" >>"$tmp/states"
  if [ "${state%% *}" = PENDING ] && [ "$node" = idle ]; then
    [ "$idle_since" -gt 0 ] || idle_since=$(date +%s)
    if [ $(( $(date +%s) - idle_since )) -ge 2 ]; then
      scontrol update JobId="$jobid" StartTime=now >/dev/null 2>&1
      scontrol release "$jobid" >/dev/null 2>&1
    fi
  else
    idle_since=0
  fi
  sleep 0.5
done
grep -E "^hpctrain job|^stopped|^resumed|^done|error" "$out"
check "the signal reached the ranks through the batch shell: checkpoint and exit 10" \
  grep -q "^stopped by SIGUSR1 after step" "$out"
check "the job script requeued the job" grep -q "requeueing $jobid" "$out"
check "the requeued run (restart 1) resumed from the checkpoint" grep -q "^resumed from .*ckpt-" "$out"
check "the requeued run completed the 300 steps" test -f "$tmp/run-preempt/checkpoints/ckpt-00000300.h5"
check "restart count 1 seen by the job" grep -q "restart 1, out_dir" "$out"
[ "$fail" -eq 0 ] || { grep -iE "error|fail" "$tmp/slurmd.log" | tail -8; tail -8 "$out";
  echo "the requeued job's states, as polled (repeats dropped):"; uniq -f1 "$tmp/states" | tail -12; }
finish
