#!/usr/bin/env bash
# tools/bench/multinode_plan.sh [--steps N] [--shard-optimizer]
# The scaling planner (tools/scaling_plan.py) against measured multi-node runs: two "hosts" on
# this machine (network namespaces joined by veth links and a bridge, Open MPI over TCP:
# tools/netns_hosts.sh, as the multinode test does). Measures a 1-rank run of the MNIST MLP at
# per-rank batch 128 (the planner's input), the allreduce between the two hosts
# (allreduce-bench, 2 ranks, one per host: the network's latency and bandwidth), then runs the
# MLP at global batch 256 on 2 ranks (one per host) and on 4 ranks (two per host: the sums go
# through each host's shared memory, then between the hosts) and prints the planner's prediction
# against each (PASS/FAIL within its tolerance). On a machine with fewer than 4 cores the 4-rank
# run is oversubscribed: its figures say so. Needs root, iproute2 and util-linux.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
steps=400 shard=()
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift ;;
    --shard-optimizer) shard=(--shard-optimizer) ;;
    *) echo "usage: $0 [--steps N] [--shard-optimizer]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "multinode_plan: network namespaces need root" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$root/tools/netns_hosts.sh"
trap netns_hosts_down EXIT
netns_hosts_up
build=${HPCTRAIN_BUILD_DIR:-$root/build}  # the build to measure
T=$build/trainer
tmp=$NETNS_TMP
run=("$root/inputs/mnist_mlp.ini" --set "data.path=$root/inputs/data/mnist-small" --set checkpoint.resume=none
     --set checkpoint.every_epochs=0 --set train.eval_every=100000 --set "train.steps=$steps")
[ ${#shard[@]} -gt 0 ] && run+=(--set parallel.shard=optimizer)
hosts() { echo "$NETNS_NET.1:$1,$NETNS_NET.2:$1"; }
echo "multinode_plan: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, MNIST MLP, $steps steps per run"
mpirun -q -np 1 --bind-to none "$T" "${run[@]}" --set train.global_batch=128 --set "run.out_dir=$tmp/one" >/dev/null
mpirun -q -np 2 --host "$(hosts 1)" "${NETNS_MPI[@]}" --mca btl tcp,self "$build/allreduce-bench" >"$tmp/net.txt"
echo "the link between the hosts (allreduce-bench, 2 ranks, one per host, over TCP):"
grep -E '^ +[0-9]' "$tmp/net.txt" | awk '{printf "  %10d B %10.1f us %8.2f GB/s\n", $1, $3, $4}'
mpirun -q -np 2 --host "$(hosts 1)" "${NETNS_MPI[@]}" --mca btl tcp,self "$T" "${run[@]}" \
  --set "run.out_dir=$tmp/two" >/dev/null
mpirun -q -np 4 --host "$(hosts 2)" "${NETNS_MPI[@]}" --mca btl tcp,self,vader "$T" "${run[@]}" \
  --set "run.out_dir=$tmp/four" >/dev/null
plan() {  # ranks ranks_per_node summary
  /usr/bin/python3 "$root/tools/scaling_plan.py" --summary "$tmp/one/summary.json" --ranks "$1" \
    --ranks-per-node "$2" --global-batch 256 --link shm --network "$tmp/net.txt" "${shard[@]}" --check "$3"
}
echo
echo "== 2 ranks, one per host"
plan 2 1 "$tmp/two/summary.json" || true
echo
echo "== 4 ranks, two per host$([ "$(nproc)" -lt 4 ] && echo " (oversubscribed: $(nproc) cores)")"
plan 4 2 "$tmp/four/summary.json" || true
