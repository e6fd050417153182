#!/usr/bin/env bash
# run_lock.sh MPIRUN TRAINER SOURCE_DIR: one run per output directory (io/run_lock.hpp), with
# real processes: a second run on a running run's directory is refused at once (exit 2, one
# line naming the holder) while --dry-run and --eval-only still work, and the first run finishes
# untouched and releases the lock; a run killed with kill -9 leaves a lock that the next run
# takes over with a warning (and resumes); on a file system without flock a requeued Slurm job
# takes over its own earlier run's lock at once, while another job is refused. A damaged or
# dangling `latest` is one warning and the newest complete checkpoint.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
run() {  # out_dir extra-args...
  local out=$1
  shift
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$out" \
    --set checkpoint.every_steps=10 --set checkpoint.every_epochs=0 "$@" 2>&1
}
wait_for() {  # file: up to 60 s
  for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}

# Two runs on one directory.
run "$tmp/a" --set train.steps=150 --set checkpoint.resume=none >"$tmp/a.log" &
first=$!
wait_for "$tmp/a/checkpoints/ckpt-00000010.h5"
check "the first run holds the lock" test -e "$tmp/a/.hpctrain.lock"
out=$(run "$tmp/a" --set train.steps=150)
rc=$?
check "a second run on the same out_dir: exit 2 ($rc)" test $rc -eq 2
check "... one line naming the holder" test "$(grep -c "out_dir $tmp/a is in use by a run on .*, pid [0-9]*, since " <<<"$out")" -eq 1
grep "is in use" <<<"$out"
check "--dry-run needs no lock" grep -q "^Checkpoints: " <(run "$tmp/a" --dry-run)
check "--eval-only needs no lock" grep -q "^eval-only: " <(run "$tmp/a" --eval-only)
wait $first
check "the first run finishes: exit 0" test $? -eq 0
check "... all its steps, its checkpoints its own" grep -q "^done: 150 steps" "$tmp/a.log"
check "... and releases the lock" test ! -e "$tmp/a/.hpctrain.lock"

# kill -9: the lock stays behind, the next run takes it over and resumes.
run "$tmp/b" --set train.steps=400 --set checkpoint.resume=none >"$tmp/b.log" &
wait_for "$tmp/b/checkpoints/ckpt-00000020.h5"
pkill -9 -f "run.out_dir=$tmp/b"
wait
check "after kill -9 the lock file is still there" test -e "$tmp/b/.hpctrain.lock"
out=$(run "$tmp/b" --set train.steps=40 --resume-changed)
rc=$?
check "the next run: exit 0 ($rc)" test $rc -eq 0
check "... warns that it took over a dead run's lock" grep -q "warning.*took over the lock of a run that ended without releasing it" <<<"$out"
check "... once (not once per lock)" test "$(grep -c "took over the lock" <<<"$out")" -eq 1
check "... and resumed" grep -q "^resumed from " <<<"$out"

# A damaged `latest` (binary bytes) is handled as a dangling one: a warning naming it and the
# fallback, the newest complete checkpoint by step (issue 19 item 3).
printf '\001\377ck' >"$tmp/b/checkpoints/latest"
out=$(run "$tmp/b" --set train.steps=50 --resume-changed)
check "a damaged latest: a warning naming it and the fallback" \
  grep -q "warning.*checkpoints/latest does not hold a checkpoint name; using the newest complete checkpoint by step, .*ckpt-00000040.h5" <<<"$out"
printf 'ckpt-00000099.h5\n' >"$tmp/b/checkpoints/latest"
out=$(run "$tmp/b" --set train.steps=60 --resume-changed)
check "a dangling latest: the same" grep -q "warning.*latest names ckpt-00000099.h5, which does not exist; using the newest" <<<"$out"

# No flock on the file system: the record decides; a requeued Slurm job takes its own lock over.
mkdir -p "$tmp/c"
record() { printf 'host=othernode\npid=4242\njob=Slurm job 77\nsince=2026-12-01T10:04Z\n' >"$tmp/c/.hpctrain.lock"; }
record
out=$(HPCTRAIN_TEST_NO_FLOCK=1 SLURM_JOB_ID=78 run "$tmp/c" --set train.steps=10 --set checkpoint.resume=none)
check "without flock, another job's fresh lock: exit 2 naming it" \
  test $? -eq 2 -a -n "$(grep 'in use by a run on othernode, pid 4242, Slurm job 77' <<<"$out")"
out=$(HPCTRAIN_TEST_NO_FLOCK=1 SLURM_JOB_ID=77 run "$tmp/c" --set train.steps=10 --set checkpoint.resume=none)
check "... the same Slurm job (requeued): taken over at once, exit 0" \
  test $? -eq 0 -a -n "$(grep "took over the lock of this job's earlier run" <<<"$out")"
finish
