#!/usr/bin/env bash
# network_faults.sh TRAINER SOURCE_DIR: network faults on the two namespaced hosts of
# tools/netns_hosts.sh (docs/running.md, "Network faults"), the job started by
# jobscripts/slurm/train.sbatch with the mpirun launcher (Open MPI finds the hosts and the launch
# agent in the environment, netns_hosts_env):
# - a link taken down mid-allreduce: every rank on both hosts ends by its own watchdog within
#   watchdog_s + 15 s; each host's report file (<out_dir>/reports/<host>.txt) holds one line
#   naming the collective and the unreachable rank; the job script ends the mpirun that waits for
#   the lost host and exits 3; the newest checkpoint is complete and a resubmission resumes from it;
# - a slow and lossy link (tc tbf rate limit and iptables' statistic match dropping packets on
#   both hosts; this kernel has no tc netem): training completes with the same parameters, bit
#   for bit, as over the clean link, and the slowdown is printed;
# - a node failure: every process on host 2 (its daemon and its two ranks) killed at once: the
#   job ends, the newest checkpoint is complete and a resubmission resumes from it.
# Needs root (skips with exit 77 otherwise). NETWORK_FAULTS_KEEP=DIR keeps the jobs' logs there.
set -u
trainer=$1
src=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
netns_start "$src" '[ -n "${NETWORK_FAULTS_KEEP:-}" ] && cp "$NETNS_TMP"/*.log "$NETWORK_FAULTS_KEEP"/'
tmp=$NETNS_TMP
export HPCTRAIN_LAUNCHER=mpirun HPCTRAIN_TRAINER=$trainer HPCTRAIN_ABORT_GRACE_S=2 HPCTRAIN_STOP_GRACE_S=1
small=(inputs/mnist_mlp.ini --set "model.layers=flatten dense(256) relu dense(10)" --set log.log_every=100
       --set checkpoint.every_epochs=0 --set checkpoint.every_steps=20)
job() {  # OUT_DIR ARGS...: the Slurm job script, outside Slurm, with the mpirun launcher
  local dir=$1
  shift
  HPCTRAIN_OUT_DIR=$dir bash jobscripts/slurm/train.sbatch "${small[@]}" "$@"
}
trainers_on() {  # HOST: trainer processes in that host's namespace
  ip netns pids "hpn$1-$NETNS_ID" 2>/dev/null | xargs -r ps -o comm= -p 2>/dev/null | grep -c '^trainer'
}
start_job() {  # NAME STEP ARGS...: the job in the background (job_pid), until its step-STEP checkpoint
  local name=$1 step=$2 i
  shift 2
  job "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 &
  job_pid=$!
  for ((i = 0; i < 600; i++)); do [ -e "$tmp/$name/checkpoints/ckpt-$(printf %08d "$step").h5" ] && return; sleep 0.1; done
  echo "(no step-$step checkpoint: $(tail -3 "$tmp/$name.log"))"
}
resumed_step() {  # LOG: the step the run resumed from
  sed -n 's/.*resumed from .*ckpt-0*\([0-9]*\)\.h5: step.*/\1/p' "$1" | head -1
}

# ---- A link taken down mid-allreduce ----
netns_hosts_env 1
steps=(--set train.steps=300 --set parallel.watchdog_s=3)
start_job link 40 "${steps[@]}"
t0=$SECONDS
netns_hosts_link 2 down
gone=""
while kill -0 $job_pid 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do
  [ -z "$gone" ] && [ "$(trainers_on 1)" = 0 ] && [ "$(trainers_on 2)" = 0 ] && gone=$((SECONDS - t0))
  sleep 0.5
done
kill -0 $job_pid 2>/dev/null && kill -9 $job_pid
wait $job_pid
rc=$? dt=$((SECONDS - t0))
[ -z "$gone" ] && [ "$(trainers_on 1)" = 0 ] && [ "$(trainers_on 2)" = 0 ] && gone=$dt
check "link down: every rank on both hosts ended within watchdog_s + 15 s (${gone:-never} s)" test -n "$gone" -a "${gone:-99}" -le 18
check "... the job script ended the waiting mpirun and exited 3 ($rc) after $dt s" \
  test $rc -eq 3 -a -n "$(grep "a watchdog reported .* ending it" "$tmp/link.log")"
for h in 1 2; do
  other=$((2 - h))
  # (the collective that timed out, or, when the rank was in none (a checkpoint's MPI-IO), the lost heartbeat)
  check "... node$h's report: one line naming rank $other unreachable and the collective: $(cut -d: -f4- "$tmp/link/reports/node$h.txt" 2>/dev/null | cut -c1-60)" \
    test "$(grep -c -e "rank $((h - 1)) on node$h: collective timeout: [a-z_]* #[0-9].* ranks that did not arrive: rank $other (no answer from its watchdog)" \
      -e "rank $((h - 1)) on node$h: lost contact: no heartbeat from rank $other's watchdog .* this rank is in " "$tmp/link/reports/node$h.txt" 2>/dev/null)" = 1 \
    -a "$(wc -l <"$tmp/link/reports/node$h.txt")" = 1
done
cat "$tmp"/link/reports/*.txt >"$tmp/reports.log" 2>/dev/null
latest=$(cat "$tmp/link/checkpoints/latest" 2>/dev/null)
netns_hosts_kill 2  # the daemon mpirun lost (a real node's is ended by the scheduler)
netns_hosts_link 2 up
# Resubmitted at once, with a 20 s start-up limit and a 20 s watchdog (a 3 s one can be overrun by
# a checkpoint barrier on a machine as loaded as CI's, which is not what this tests). Should a
# first connection between the hosts still fail (netns_hosts_link flushes the addresses the hosts
# failed to resolve while the link was down; before it did, this failed 5 runs in 5 on 2026-12-06),
# Open MPI's daemons stop the launch ("routed" error, exit 1), or a rank's first connection to the
# other host ("failed to TCP connect to a peer MPI process") leaves Open MPI 4.1 waiting for ever in
# the first collective, which the start-up guard ends with exit 3. Such a resubmission must end
# (bounded, with one of those lines); the next resumes.
resubmit() {  # LOG
  job "$tmp/link" --set train.steps=300 --set parallel.watchdog_s=20 --startup-timeout 20 >"$1" 2>&1
}
resumed_ok() {
  test "ckpt-$(printf %08d "$(resumed_step "$tmp/link2.log")").h5" = "$latest" -a -f "$tmp/link/checkpoints/ckpt-00000300.h5"
}
resubmit "$tmp/link2.log"
rc=$?
again=""
if [ $rc -ne 0 ] || ! resumed_ok; then
  mv "$tmp/link2.log" "$tmp/link2-first.log"
  echo "(the first resubmission failed, exit $rc; its last lines:)"
  grep -v "^epoch\|^checkpoint" "$tmp/link2-first.log" | tail -12 | sed 's/^/    /'
  check "... a first resubmission that fails ends, by the start-up guard (exit 3) or Open MPI's launch ($rc)" \
    test $rc -ne 0 -a -n "$(grep -e "start-up timeout: still" -e "collective timeout:" -e "routed" \
      -e "ORTE" "$tmp/link2-first.log")"
  resubmit "$tmp/link2.log"
  rc=$? again=" (at the second try)"
fi
check "... the resubmission resumes from the newest checkpoint ($latest) and completes$again" test $rc -eq 0 -a -n "$(resumed_ok && echo y)"
[ $rc -eq 0 ] && resumed_ok || { echo "(exit $rc, resumed from step $(resumed_step "$tmp/link2.log"); its last lines:)"; grep -v "^epoch\|^checkpoint" "$tmp/link2.log" | tail -12 | sed 's/^/    /'; }
[ -n "${NETWORK_FAULTS_ONLY_LINK:-}" ] && finish

# ---- A slow and lossy link ----
check "iptables is here (tools/setup.sh installs it)" bash -c "command -v iptables >/dev/null"
lossy=(--set train.steps=40 --set checkpoint.every_steps=40)
t0=$(date +%s.%N)
job "$tmp/clean" "${lossy[@]}" >"$tmp/clean.log" 2>&1
check "clean link: 40 steps, exit 0" test $? -eq 0
t1=$(date +%s.%N)
for h in 1 2; do
  netns_hosts_exec $h tc qdisc add dev "hpp$h-$NETNS_ID" root tbf rate 200mbit burst 32kb latency 20ms
  netns_hosts_exec $h iptables -A OUTPUT -o "hpp$h-$NETNS_ID" -m statistic --mode random --probability 0.01 -j DROP
done
job "$tmp/lossy" "${lossy[@]}" >"$tmp/lossy.log" 2>&1
rc=$?
t2=$(date +%s.%N)
dropped=0
for h in 1 2; do
  d=$(netns_hosts_exec $h iptables -L OUTPUT -v -x -n 2>/dev/null | awk '/DROP/{print $1}')
  dropped=$((dropped + ${d:-0}))
done
slow=$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN{printf "%.2f s against %.2f s: %.1fx", c - b, b - a, (c - b) / (b - a)}')
check "200 Mbit/s and 1% of packets dropped ($dropped dropped): 40 steps, exit 0, $slow" test $rc -eq 0 -a "$dropped" -gt 0
check "... the same parameters as over the clean link, bit for bit" /usr/bin/python3 - "$tmp" <<'EOF'
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1] + "/clean/checkpoints/ckpt-00000040.h5", "r")["model"]
b = h5py.File(sys.argv[1] + "/lossy/checkpoints/ckpt-00000040.h5", "r")["model"]
names = [n for n in a if n.startswith("dense")]
sys.exit(0 if names and all(np.array_equal(a[n][()], b[n][()]) for n in names) else 1)
EOF
for h in 1 2; do
  netns_hosts_exec $h tc qdisc del dev "hpp$h-$NETNS_ID" root
  netns_hosts_exec $h iptables -F OUTPUT
done

# ---- A node failure: every process of host 2 killed at once ----
netns_hosts_env 2
steps=(--set train.steps=40)
start_job node 20 "${steps[@]}"
t0=$SECONDS
netns_hosts_kill 2
while kill -0 $job_pid 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do sleep 0.5; done
kill -0 $job_pid 2>/dev/null && kill -9 $job_pid
wait $job_pid
rc=$? dt=$((SECONDS - t0))
check "host 2's daemon and ranks killed: the job ends, non-zero ($rc), in $dt s, no rank left on host 1" \
  test $rc -ne 0 -a $dt -le 20 -a "$(trainers_on 1)" = 0
latest=$(cat "$tmp/node/checkpoints/latest" 2>/dev/null)
job "$tmp/node" "${steps[@]}" >"$tmp/node2.log" 2>&1
rc=$?
check "... the resubmission resumes from the newest checkpoint ($latest) and completes" \
  test $rc -eq 0 -a "ckpt-$(printf %08d "$(resumed_step "$tmp/node2.log")").h5" = "$latest" \
  -a -f "$tmp/node/checkpoints/ckpt-00000040.h5"
finish
