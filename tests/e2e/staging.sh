#!/usr/bin/env bash
# staging.sh MPIRUN TRAINER SOURCE_DIR: [data] stage_dir (node-local staging, data/staging.hpp).
# - One host, 2 ranks: the run stages the dataset (its log and summary.json say so), trains from
#   the copy to the same bits as a run reading the shared copy, and removes the copy at the end.
# - A complete copy already there (its manifest matches) is used without copying anything.
# - A stage_dir without room (a 256 KiB tmpfs): exit 2, one line, nothing left there.
# - Two namespaced hosts over TCP (tools/netns_hosts.sh; root): each host stages into its own
#   directory (%h), files passed between the hosts by MPI; the run ends with the one-host bits.
# The tmpfs and the hosts need root: without it those parts are skipped (said so).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args=(inputs/mnist_mlp.ini --set train.steps=10 --set log.log_every=5 --set checkpoint.every_epochs=0
  --set train.eval_every=0)
same() {  # run_a run_b: the step-10 checkpoints' model datasets byte for byte
  $py - "$tmp/$1/checkpoints/ckpt-00000010.h5" "$tmp/$2/checkpoints/ckpt-00000010.h5" <<'PY'
import sys, h5py
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = [n for n in a["model"]]
sys.exit(0 if names and all(a["model"][n][()].tobytes() == b["model"][n][()].tobytes() for n in names) else 1)
PY
}
host=$(hostname)
"$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set run.out_dir="$tmp/plain" >"$tmp/plain.log" 2>&1
"$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set run.out_dir="$tmp/staged" \
  --set data.stage_dir="$tmp/local-%h" >"$tmp/staged.log" 2>&1
check "a staged run: exit 0 ($?), the log says what was staged where" \
  grep -q "staged 4 files (.*) from inputs/data/mnist-small to $tmp/local-$host/mnist-small on every node" "$tmp/staged.log"
check "... its summary.json reports the staging time apart" \
  $py -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['staging_s'] > 0 else 1)" "$tmp/staged/summary.json"
check "... the same bits as reading the shared copy" same plain staged
check "... and the copy is removed at the end" test ! -e "$tmp/local-$host/mnist-small"

# A complete copy from before (a requeued job's, kept by a SIGKILL): its manifest matches.
mkdir -p "$tmp/kept" && cp -r inputs/data/mnist-small "$tmp/kept/"
(cd inputs/data/mnist-small && find . -type f -printf '%s %P\n' | LC_ALL=C sort -k2) >"$tmp/kept/mnist-small/.hpctrain-staged"
"$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set run.out_dir="$tmp/reused" \
  --set data.stage_dir="$tmp/kept" >"$tmp/reused.log" 2>&1
check "a complete copy already there: nothing copied, the same bits" \
  test -n "$(grep 'staged 4 files.*(0 MiB copied' "$tmp/reused.log")" -a -z "$(grep '^staging:' "$tmp/reused.log")"
same plain reused || check "... the same bits" false

if [ "$(id -u)" -eq 0 ] && mkdir -p "$tmp/small" && mount -t tmpfs -o size=256k tmpfs "$tmp/small" 2>/dev/null; then
  msg=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set run.out_dir="$tmp/full" \
    --set data.stage_dir="$tmp/small" 2>&1)
  rc=$?
  check "a stage_dir without room: exit 2 ($rc), one line" \
    test $rc -eq 2 -a "$(grep -c 'does not fit in' <<<"$msg")" -eq 1
  check "... nothing left there" test -z "$(ls -A "$tmp/small")"
  umount "$tmp/small"
else
  echo "skip the full stage_dir (a tmpfs needs root)"
fi

if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && command -v unshare >/dev/null; then
  source tools/netns_hosts.sh
  trap 'netns_hosts_down; rm -rf "$tmp"' EXIT
  if netns_hosts_up; then
    net=$NETNS_NET
    "$mpirun" -np 2 --host "$net.1:1,$net.2:1" "${NETNS_MPI[@]}" --mca btl tcp,self "$trainer" "${args[@]}" \
      --set run.out_dir="$tmp/hosts" --set data.stage_dir="$tmp/local-%h" >"$tmp/hosts.log" 2>&1
    check "two hosts: exit 0 ($?), each host staged into its own directory" \
      grep -q "staging: 4 of 4 files, .* on 2 node(s)" "$tmp/hosts.log"
    "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${args[@]}" --set run.out_dir="$tmp/one" >/dev/null 2>&1
    check "... the same bits as one host reading the shared copy" same one hosts
    check "... both copies removed" test ! -e "$tmp/local-node1/mnist-small" -a ! -e "$tmp/local-node2/mnist-small"
  else
    check "the two namespaced hosts come up" false
  fi
else
  echo "skip the two hosts (network namespaces need root)"
fi
finish
