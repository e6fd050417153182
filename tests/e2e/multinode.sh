#!/usr/bin/env bash
# multinode.sh TRAINER SOURCE_DIR: training across two "hosts" over a real network on one
# machine. Two network namespaces, each with its own hostname (a UTS namespace) and a veth
# link to a bridge; Open MPI starts its daemons in them through a launch agent that enters the
# namespace in place of ssh, and is forced onto TCP over those links (btl tcp,self; the TCP
# interfaces limited to the test subnet). The run checkpoints to a shared directory; the ranks
# report two different hosts; the links' byte counters grow by at least the gradient traffic;
# the final parameters equal a single-host run with the same number of ranks; with two ranks per
# host the gradient sums go hierarchically (shared memory per host, then between the hosts) and
# still equal a single-host run. Everything it
# created is removed at the end. Needs root (skips with exit 77 otherwise).
set -u
trainer=$1
src=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
netns_start "$src"
net=$NETNS_NET tmp=$NETNS_TMP
bytes() { netns_hosts_tx_bytes; }
args=(inputs/mnist_mlp.ini --set train.steps=20 --set log.log_every=10 --set checkpoint.every_epochs=0
      --set checkpoint.resume=none)
before=$(bytes)
out=$(mpirun -np 2 --host "$net.1:1,$net.2:1" "${NETNS_MPI[@]}" --mca btl tcp,self \
  "$trainer" "${args[@]}" --set "run.out_dir=$tmp/two-hosts" 2>&1)
rc=$?
after=$(bytes)
echo "$out" | grep -E "^done|error" | head -3
check "2 ranks on 2 namespaced hosts over TCP: exit 0" test $rc -eq 0
check "without [log] verbose the path of the gradient sums is not printed" test -z "$(grep "gradient sums of" <<<"$out")"
hosts=$(mpirun -np 2 --host "$net.1:1,$net.2:1" "${NETNS_MPI[@]}" --mca btl tcp,self \
  "$trainer" inputs/mnist_mlp.ini --dry-run 2>&1 |
  awk '/^rank +host/{on=1; getline; next} on && /^ +[0-9]/{print $2} on && !/^ +[0-9]/{on=0}' | sort -u | tr '\n' ' ')
check "the ranks see two hosts: $hosts" test "$hosts" = "node1 node2 "
traffic=$(( (after - before) / 1048576 ))
check "the veth links carried the traffic: $traffic MiB (>= 100: 20 allreduces of 7.4 MB)" test "$traffic" -ge 100
check "the checkpoint went to the shared directory" test -f "$tmp/two-hosts/checkpoints/ckpt-00000020.h5"
mpirun -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set "run.out_dir=$tmp/one-host" >/dev/null 2>&1
check "a single-host run with 2 ranks: exit 0" test $? -eq 0
same_params() {  # run_a run_b: the step-20 checkpoints' weights within 1e-6
  /usr/bin/python3 - "$tmp/$1/checkpoints/ckpt-00000020.h5" "$tmp/$2/checkpoints/ckpt-00000020.h5" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
worst = max(float(np.max(np.abs(a["model/" + n][()] - b["model/" + n][()])))
            for n in ("dense.0.weight", "dense.1.weight", "dense.2.weight"))
print("max |difference| %.3g" % worst)
sys.exit(0 if worst <= 1e-6 else 1)
EOF
}
check "two hosts and one host end with the same parameters" same_params two-hosts one-host

# Two ranks per host: the gradient sums go hierarchically ([parallel] host_allreduce = auto:
# node-shared memory on each host, one MPI_Allreduce between the hosts' first ranks over TCP).
out=$(mpirun -np 4 --host "$net.1:2,$net.2:2" "${NETNS_MPI[@]}" --mca btl tcp,self,vader \
  "$trainer" "${args[@]}" --set "run.out_dir=$tmp/two-hosts-4" --set log.verbose=true 2>&1)
check "4 ranks, 2 per host: exit 0" test $? -eq 0
check "... the sums go through each host's shared memory, then between the hosts ([log] verbose says so)" \
  grep -q "node-shared memory on each of 2 nodes, then MPI_Allreduce among their first ranks" <<<"$out"
mpirun -np 4 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set "run.out_dir=$tmp/one-host-4" >/dev/null 2>&1
check "a single-host run with 4 ranks: exit 0" test $? -eq 0
check "4 ranks on two hosts (hierarchical) and on one host end with the same parameters" same_params two-hosts-4 one-host-4
finish
