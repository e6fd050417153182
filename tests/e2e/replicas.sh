#!/usr/bin/env bash
# replicas.sh MPIRUN TRAINER SOURCE_DIR: [run] check_replicas_every (docs/checkpoints.md), the
# data-parallel replicas' parameters compared by hash. One bit of one rank's first parameter is
# flipped after a step's update (HPCTRAIN_TEST_FLIP_BIT=RANK:STEP, docs/testing.md):
# - 2 ranks, checks every 2 steps, checkpoints every 2, flipped at step 3: caught at step 4, exit
#   5, one line naming world rank 1 and the tensor; step 4's checkpoint not written (step 2's is
#   the newest); resubmitted without the fault, the run resumes from step 2 and completes.
# - 2 stages x 2 replicas, checks every 100 steps, checkpoints every 2, flipped on world rank 3
#   at step 3: caught before step 4's checkpoint write, naming rank 3 (stage 1's replicas).
# - shard = gradients on 3 ranks, flipped on rank 2 at a checked step: rank 2 named against 0, 1.
# - No fault: every check passes (the log counts them).
# - shard = full: refused with one line (nothing replicated to compare).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)

run() {  # NP OUT args...
  local np=$1 out=$2
  shift 2
  "$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set train.steps=8 \
    --set run.out_dir="$tmp/$out" --set train.eval_every=0 "$@" >"$tmp/$out.log" 2>&1
}
diverged() {  # LOG: exit 5 and exactly one error line
  test "$1" -eq 5 -a "$(grep -c 'hpctrain: error' "$tmp/$2.log")" -eq 1
}

HPCTRAIN_TEST_FLIP_BIT=1:3 run 2 flip --set run.check_replicas_every=2 --set checkpoint.every_steps=2
rc=$?
check "a flipped bit on rank 1 after step 3: exit 5, one line" diverged $rc flip
check "... found at step 4, naming world rank 1 and the tensor" \
  grep -q "replicas diverged (found at step 4): world rank(s) 1 disagree with rank(s) 0 .* on 1 of 6 tensors (dense.0.weight)" \
  "$tmp/flip.log"
check "... step 4's checkpoint not written: step 2's is the newest" \
  test -f "$tmp/flip/checkpoints/ckpt-00000002.h5" -a ! -e "$tmp/flip/checkpoints/ckpt-00000004.h5"
run 2 flip --set run.check_replicas_every=2 --set checkpoint.every_steps=2
rc=$?
check "resubmitted without the fault: resumes from step 2 and completes" \
  test $rc -eq 0 -a -n "$(grep 'resumed from .*ckpt-00000002.h5: step 2' "$tmp/flip.log")"

HPCTRAIN_TEST_FLIP_BIT=3:3 run 4 stages --set run.check_replicas_every=100 --set checkpoint.every_steps=2 \
  --set parallel.pipeline_parallel=2
rc=$?
check "2 stages x 2 replicas, rank 3 flipped: exit 5, one line" diverged $rc stages
check "... found before step 4's checkpoint write, naming world rank 3" \
  grep -q "found before the checkpoint write of step 4): world rank(s) 3 disagree with rank(s) 1" "$tmp/stages.log"

HPCTRAIN_TEST_FLIP_BIT=2:4 run 3 sharded --set run.check_replicas_every=2 --set parallel.shard=gradients \
  --set train.global_batch=255
rc=$?
check "shard = gradients, rank 2 flipped at a checked step: exit 5, rank 2 against ranks 0, 1" \
  test $rc -eq 5 -a -n "$(grep 'world rank(s) 2 disagree with rank(s) 0, 1 on' "$tmp/sharded.log")"

run 2 clean --set run.check_replicas_every=2
rc=$?
check "no fault: exit 0, the 4 checks passed" \
  test $rc -eq 0 -a -n "$(grep 'replica checks: 4 passed' "$tmp/clean.log")"

run 2 full --set run.check_replicas_every=2 --set parallel.shard=full
rc=$?
check "shard = full: refused, exit 2, one line" \
  test $rc -eq 2 -a -n "$(grep 'shard = full keeps each parameter on one rank' "$tmp/full.log")"
finish
