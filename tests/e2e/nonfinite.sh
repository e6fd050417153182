#!/usr/bin/env bash
# nonfinite.sh MPIRUN TRAINER SOURCE_DIR: [train] on_nonfinite, max_skipped, spike_factor and
# spike_window (docs/training.md), with injected values (docs/testing.md): HPCTRAIN_TEST_NAN
# makes one rank's loss and gradient NaN at a step, HPCTRAIN_TEST_SPIKE multiplies one rank's loss
# at a step by 1000 for the spike rule. The MNIST MLP on 2 ranks.
# - skip: a NaN on rank 1 at step 3 drops step 3 on both ranks (one log line), the run completes
#   with every replica check passing (check_replicas_every = 1); after 3 steps its parameters are
#   bit for bit those of an unfaulted 2-step run (the dropped step updated nothing).
# - stop (the default): the same NaN ends the run at the log interval, exit 1, one line.
# - stop with the spike rule on (checked every step): stopped at step 3 itself.
# - max_skipped = 2 and NaNs from step 3 on: stopped after 2 in a row, exit 1, one line.
# - spike_factor = 5 over a 2-step window: the spiking step 5 is dropped, the run completes.
# - the same run cut after step 4 and resumed: the checkpoint holds the window, so step 5 is
#   dropped again and the parameters are the uninterrupted run's bit for bit (a resume that lost
#   the window would wait 2 steps and keep the spike).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3

run() {  # OUT STEPS args... (the log: $tmp/${LOG:-OUT}.log)
  local out=$1 steps=$2
  shift 2
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set train.steps="$steps" \
    --set run.out_dir="$tmp/$out" --set train.eval_every=0 --set log.log_every=1 --set checkpoint.every_steps="$steps" \
    "$@" >"$tmp/${LOG:-$out}.log" 2>&1
}
one_error() { test "$(grep -c 'hpctrain: error' "$tmp/$1.log")" -eq 1; }

HPCTRAIN_TEST_NAN=1:3 run skip 3 --set train.on_nonfinite=skip --set run.check_replicas_every=1
rc=$?
check "skip: exit 0, step 3 dropped on every rank, logged once" \
  test $rc -eq 0 -a "$(grep -c 'step 3: loss nan or a gradient not finite: step skipped on every rank' "$tmp/skip.log")" -eq 1
check "... the replicas stayed identical (3 checks passed), the count reported" \
  grep -q "replica checks: 3 passed" "$tmp/skip.log"
check "... skipped steps: 1 non-finite" grep -q "skipped steps: 1 non-finite, 0 loss spikes" "$tmp/skip.log"
run two 2
same_model() {  # DIR DIR: the newest checkpoints' parameters are equal bit for bit
  $py - "$1" "$2" <<'PY'
import glob, sys
import h5py, numpy as np
def model(d):
    f = h5py.File(sorted(glob.glob(d + "/checkpoints/ckpt-*.h5"))[-1], "r")
    out = {}
    f["model"].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = model(sys.argv[1]), model(sys.argv[2])
sys.exit(0 if a.keys() == b.keys() and a and all(np.array_equal(a[k], b[k]) for k in a) else 1)
PY
}
check "... its parameters after 3 steps are an unfaulted 2-step run's, bit for bit" same_model "$tmp/skip" "$tmp/two"

HPCTRAIN_TEST_NAN=1:3 run stop 6
rc=$?
check "stop (default): exit 1 at the log interval of step 3, one line" \
  test $rc -eq 1 -a -n "$(grep 'the training loss is not finite (nan) at step 3' "$tmp/stop.log")"
check "... one error line" one_error stop
HPCTRAIN_TEST_NAN=1:3 run stopnow 6 --set train.spike_factor=5
rc=$?
check "stop with the spike rule on: exit 1 at step 3 itself, one line" \
  test $rc -eq 1 -a -n "$(grep 'step 3: loss nan or a gradient not finite: stopped (\[train\] on_nonfinite = stop' "$tmp/stopnow.log")"

HPCTRAIN_TEST_NAN=1:3 HPCTRAIN_TEST_NAN_STEPS=5 run many 8 --set train.on_nonfinite=skip --set train.max_skipped=2
rc=$?
check "max_skipped = 2, NaNs from step 3 on: exit 1 after 2 in a row (step 4), one line" \
  test $rc -eq 1 -a -n "$(grep 'step 4: 2 steps skipped in a row (\[train\] max_skipped): stopped' "$tmp/many.log")"
check "... one error line" one_error many

HPCTRAIN_TEST_SPIKE=0:5 run spike 6 --set train.spike_factor=5 --set train.spike_window=2
rc=$?
check "a loss spike at step 5 (factor 5, window 2): dropped, exit 0" \
  test $rc -eq 0 -a -n "$(grep 'step 5: loss .* > 5 x .*, the mean of the last 2 steps (a spike): step skipped' "$tmp/spike.log")"
check "... only that step" test "$(grep -c 'step skipped' "$tmp/spike.log")" -eq 1

spiky=(--set train.spike_factor=5 --set train.spike_window=2)
HPCTRAIN_TEST_SPIKE=0:5 run cut 4 "${spiky[@]}"
HPCTRAIN_TEST_SPIKE=0:5 LOG=resumed run cut 6 "${spiky[@]}" --set checkpoint.resume=auto --resume-changed
rc=$?
check "cut after step 4 and resumed: the restored window drops the spike at step 5 again, exit 0" \
  test $rc -eq 0 -a -n "$(grep 'resumed from .*ckpt-00000004.h5: step 4' "$tmp/resumed.log")" \
  -a -n "$(grep 'step 5: loss .* > 5 x .*, the mean of the last 2 steps (a spike): step skipped' "$tmp/resumed.log")"
check "... its parameters are the uninterrupted run's, bit for bit" same_model "$tmp/cut" "$tmp/spike"
finish
