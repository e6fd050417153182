#!/usr/bin/env bash
# watchdog_trainer.sh MPIRUN TRAINER SOURCE_DIR: the trainer's own world-wide agreements are watched.
# Rank 1 stops before the per-step flag exchange of step 3 (HPCTRAIN_TEST_STALL, as a hung rank
# would); the job must end with exit 3 within the watchdog timeout plus a few seconds, with one
# report naming the allreduce on communicator 'world' and rank 1 as the one that did not arrive.
# That run has a 2 s start-up limit (--startup-timeout) and lasts longer: the start-up guard must
# have stopped once the watchdog ran. A configuration file that rank 0 cannot read (a FIFO nobody
# writes, as a file system that does not answer) is caught by the start-up guard: exit 3 within
# the limit plus a few seconds, with a line naming where the rank waits.
set -u
mpirun=$1 trainer=$2 src=$3
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
out=$(HPCTRAIN_TEST_STALL=1:3 timeout 90 "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" \
  inputs/mnist_mlp.ini --set run.out_dir="$tmp/run" --set parallel.watchdog_s=3 --set log.log_every=1 \
  --startup-timeout 2 2>&1)
rc=$?
took=$(($(date +%s) - start))
echo "$out" | grep -v "^epoch" | tail -n 6
check "a rank stuck before the flag exchange ends the job with exit 3 (got $rc after $took s)" test $rc -eq 3
check "... within the timeout plus 15 s" test $took -lt 20
check "... with one report" test "$(grep -c 'collective timeout:' <<<"$out")" -eq 1
check "... naming the allreduce on 'world'" grep -q "allreduce #[0-9]* (collective #[0-9]*) on communicator 'world'" <<<"$out"
check "... and rank 1 as missing" grep -q "ranks that did not arrive: rank 1" <<<"$out"
check "... and no start-up timeout (the guard stopped when the watchdog began)" \
  test "$(grep -c 'start-up timeout' <<<"$out")" -eq 0

mkfifo "$tmp/deck.ini"
start=$(date +%s)
out=$(timeout 60 "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "$tmp/deck.ini" --startup-timeout 2 2>&1)
rc=$?
took=$(($(date +%s) - start))
echo "$out" | grep "start-up" | head -n 2
check "a configuration file rank 0 cannot read: exit 3 (got $rc) within the start-up limit plus 10 s ($took s)" \
  test $rc -eq 3 -a $took -lt 12
check "... a rank says it is still reading the configuration (the first to abort may end the other)" \
  test "$(grep -c "rank [01] on .*start-up timeout: still reading the configuration (rank 0 reads $tmp/deck.ini.* exit code 3\.$" <<<"$out")" -ge 1
finish
