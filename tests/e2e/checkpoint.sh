#!/usr/bin/env bash
# checkpoint.sh MPIRUN TRAINER SOURCE_DIR: checkpoints of the MNIST MLP example
# on the shipped subset.
# - layout: readable by h5ls and h5py without our code, every dataset
#   Fletcher32-checksummed, root attributes, keep K, `latest`, no partial files;
# - exact resume: a run stopped by a (test-injected) SIGUSR1 on one rank exits
#   10 after writing a checkpoint; resuming on the same world size gives
#   bit-identical final parameters, optimizer state and logged losses;
# - elastic resume: the same checkpoint resumed on 1 and 4 ranks ends within
#   a stated tolerance of the uninterrupted run (summation order only);
# - a sharded optimizer ([parallel] shard = optimizer) writes the same file, resumes exactly, and
#   its checkpoints resume unsharded and the other way round; so do sharded gradients and
#   parameters (shard = gradients, full);
# - asynchronous checkpoints ([checkpoint] async) write the same files, wait for the write on a
#   signal, resume exactly, and a failed background write stops the run at the next step (exit 4);
# - real signals: SIGUSR1 to mpirun and SIGTERM to the ranks stop a run with
#   exit 10 and a checkpoint, within seconds;
# - one folder, one experiment: resume = auto refuses another experiment's or another schedule's
#   checkpoint (--resume-changed goes on), an explicit resume = FILE warns;
# - errors: a corrupted byte (checksum), a different model (names the layer
#   and both shapes), a missing resume path: exit 2, nothing on disk changed;
#   a failure while writing leaves the previous checkpoint the newest, and so does one rank killed
#   (SIGKILL) inside the write: the job ends, the resubmission resumes;
# - --eval-only and --dry-run use the checkpoint.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
# PART ($4): core (layout, exact and elastic resume, signals, errors), layouts (sharded, async,
# pipelined, fp16, ResNet + Adam) or all (the default); CTest runs the halves as two tests.
part=${4:-all}
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }
py=/usr/bin/python3
# The example MLP at 128 wide (118 K parameters): 1.4 s of CPU a run against 3.5 s at 1024 wide, the same
# three dense layers (twelve datasets with their momenta) and every code path.
mlp="flatten dense(128) relu dense(128) relu dense(10)"
run() {  # np out_dir extra-args...
  local np=$1 out=$2
  shift 2
  "$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$out" \
    --set "model.layers=$mlp" --set train.steps=30 --set log.log_every=5 --set checkpoint.every_steps=10 --set checkpoint.every_epochs=0 --set checkpoint.keep=2 "$@" 2>&1
}

# ---- An uninterrupted run: the reference ----
out=$(run 2 "$tmp/a")
rc=$?
echo "$out" | grep -E '^checkpoint|^done' | tail -n 4
check "uninterrupted run exits 0" test $rc -eq 0
ck=$tmp/a/checkpoints
check "keep = 2: only steps 20 and 30 remain" test "$(ls "$ck" | tr '\n' ' ')" = "ckpt-00000020.h5 ckpt-00000030.h5 latest "
check "latest names the newest" test "$(cat "$ck/latest")" = ckpt-00000030.h5
check "no partial files left" test -z "$(ls -A "$ck" | grep partial)"
check "each checkpoint's write time is reported" grep -qE "^checkpoint .*ckpt-00000030.h5 written: step 30, .* in [0-9.]+ s" <<<"$out"
h5ls -r "$ck/ckpt-00000030.h5" >"$tmp/h5ls.txt"
check "h5ls lists /model/dense.0.weight {128, 784}" grep -qE '^/model/dense\.0\.weight +Dataset \{128, 784\}' "$tmp/h5ls.txt"
check "h5ls lists the optimizer state" grep -qE '^/optimizer/momentum/dense\.2\.bias +Dataset \{10\}' "$tmp/h5ls.txt"
check "h5dump reads the step attribute" grep -q '(0): 30' <(h5dump -a /step "$ck/ckpt-00000030.h5")
check "h5py: attributes, shapes, Fletcher32 on every dataset" $py - "$ck/ckpt-00000030.h5" <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
a = f.attrs
assert a["format"] == b"hpctrain-checkpoint" or a["format"] == "hpctrain-checkpoint", a["format"]
assert a["step"] == 30 and a["world_size"] == 2 and a["data_parallel"] == 2 and a["model_parallel"] == 1
assert a["samples"] == 30 * 256 and a["seed"] == 42
for k in ("ini", "ini_file", "model_summary", "written_at", "software", "hdf5_version", "mpi_version", "blas"):
    assert len(a[k]) > 0, k
assert a["format_version"] == 2
assert f["model/dense.0.weight"].attrs["layer_type"] in (b"dense", "dense")
assert f["model/dense.2.weight"].shape == (10, 128)
seen = []
f.visititems(lambda n, o: seen.append(o) if isinstance(o, h5py.Dataset) else None)
assert len(seen) == 13, len(seen)  # 6 parameters, 6 momenta, interval sums
assert all(d.fletcher32 for d in seen), [d.name for d in seen if not d.fletcher32]
EOF

# ---- Stopped by a signal at step 17 on rank 1 only; then resumed on 2 ranks ----
out=$(HPCTRAIN_TEST_SIGNAL=1:17 run 2 "$tmp/b")
rc=$?
check "a signal on one rank: every rank stops, exit 10" test $rc -eq 10
check "the stop wrote the step-17 checkpoint" test -f "$tmp/b/checkpoints/ckpt-00000017.h5"
check "the stop is explained" grep -q "stopped by SIGUSR1 after step 17 of 30" <<<"$out"
if in_part core; then
out=$(HPCTRAIN_TEST_SIGNAL=0:30 run 2 "$tmp/last")
check "a signal during the last step: the run completes normally (exit 0, final evaluation)" \
  test $? -eq 0 -a -n "$(grep '^done: 30 steps' <<<"$out")"
fi
cp "$tmp/b/checkpoints/ckpt-00000017.h5" "$tmp/c17.h5"
if in_part core; then
out=$(run 2 "$tmp/b")
rc=$?
check "resume exits 0" test $rc -eq 0
check "resume says where it starts" grep -q "resumed from .*ckpt-00000017.h5: step 17, epoch 1 batch 17" <<<"$out"
fi
same() {  # two checkpoint files: every dataset bit-identical
  $py - "$1" "$2" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("state") else None)
bad = [n for n in names if not np.array_equal(a[n][()], b[n][()])]
sys.exit(1 if bad or not names else 0)
EOF
}
if in_part core; then
check "same world size: final parameters and momenta bit-identical" same "$ck/ckpt-00000030.h5" "$tmp/b/checkpoints/ckpt-00000030.h5"
check "same world size: every logged loss and accuracy bit-identical" \
  diff <(cut -d, -f1,2,4,5 "$tmp/a/metrics.csv") <(cut -d, -f1,2,4,5 "$tmp/b/metrics.csv")
fi

# ---- Elastic: the step-17 checkpoint of 2 ranks resumed on 1 and 4 ranks ----
# Tolerance: |a - b| <= 1e-5 * max(1, |a|) for every value (13 SGD steps whose
# gradient sums are ordered differently); measured worst about 6e-8.
close() {
  $py - "$1" "$2" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
worst = 0.0
for n in ("model/dense.0.weight", "model/dense.1.weight", "model/dense.2.weight", "model/dense.2.bias"):
    x, y = a[n][()].astype(np.float64), b[n][()].astype(np.float64)
    worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(1.0, np.abs(x)))))
print("worst relative difference %.2e" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
EOF
}
if in_part core; then
for np in 1 4; do
  out=$(run $np "$tmp/e$np" --set "checkpoint.resume=$tmp/c17.h5")
  rc=$?
  check "resume on $np rank(s) exits 0" test $rc -eq 0
  check "resume on $np rank(s) matches the uninterrupted run" close "$ck/ckpt-00000030.h5" "$tmp/e$np/checkpoints/ckpt-00000030.h5"
done
fi

if in_part layouts; then
# ---- Sharded optimizer state ([parallel] shard = optimizer): the same file, resumed on any D ----
# A sharded 2-rank run writes the same checkpoint (parameters and momenta within 1e-5) as the
# unsharded one; stopped and resumed sharded it is bit-identical to its uninterrupted run; the
# unsharded step-17 checkpoint resumes sharded on 4 ranks, the sharded one unsharded on 1 rank.
zero=(--set parallel.shard=optimizer --set parallel.bucket_mb=0.1)  # (5 buckets)
close_all() {  # every parameter and momentum dataset
  $py - "$1" "$2" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("state") else None)
worst = 0.0
for n in names:
    x, y = a[n][()].astype(np.float64), b[n][()].astype(np.float64)
    worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(1.0, np.abs(x)))))
print("%d datasets, worst relative difference %.2e" % (len(names), worst))
sys.exit(0 if worst <= 1e-5 and len(names) == 12 else 1)
EOF
}
out=$(run 2 "$tmp/z" "${zero[@]}")
check "sharded run exits 0" test $? -eq 0
check "sharded: parameters and momenta match the unsharded run" close_all "$ck/ckpt-00000030.h5" "$tmp/z/checkpoints/ckpt-00000030.h5"
HPCTRAIN_TEST_SIGNAL=1:17 run 2 "$tmp/zx" "${zero[@]}" >/dev/null
cp "$tmp/zx/checkpoints/ckpt-00000017.h5" "$tmp/z17.h5"
run 2 "$tmp/zx" "${zero[@]}" >/dev/null
check "sharded stopped and resumed: bit-identical to the uninterrupted sharded run" \
  same "$tmp/z/checkpoints/ckpt-00000030.h5" "$tmp/zx/checkpoints/ckpt-00000030.h5"
run 4 "$tmp/z4" "${zero[@]}" --set "checkpoint.resume=$tmp/c17.h5" >/dev/null
check "unsharded checkpoint resumed sharded on 4 ranks matches" close_all "$ck/ckpt-00000030.h5" "$tmp/z4/checkpoints/ckpt-00000030.h5"
run 1 "$tmp/z1" --set "checkpoint.resume=$tmp/z17.h5" >/dev/null
check "sharded checkpoint resumed unsharded on 1 rank matches" close_all "$ck/ckpt-00000030.h5" "$tmp/z1/checkpoints/ckpt-00000030.h5"
# Sharded gradients and parameters ([parallel] shard = gradients, full; ZeRO-2 and 3): with one
# micro-batch the same checkpoint bits as shard = optimizer (full: each rank writes the
# parameters it owns); full stopped at step 17 and resumed is bit-identical, and that step-17
# checkpoint resumes unsharded on 1 rank (reading by slab does not depend on the writer's
# layout; the MPI tests cover the rest). --dry-run prints the gradients kept (its peak estimate
# is checked in gpt.sh).
for shard in gradients full; do
  run 2 "$tmp/$shard" --set parallel.shard=$shard --set parallel.bucket_mb=0.1 >/dev/null
  check "shard = $shard: the same checkpoint bits as shard = optimizer" \
    same "$tmp/z/checkpoints/ckpt-00000030.h5" "$tmp/$shard/checkpoints/ckpt-00000030.h5"
done
zero3=(--set parallel.shard=full --set parallel.bucket_mb=0.1)
HPCTRAIN_TEST_SIGNAL=1:17 run 2 "$tmp/fx" "${zero3[@]}" >/dev/null
cp "$tmp/fx/checkpoints/ckpt-00000017.h5" "$tmp/f17.h5"
run 2 "$tmp/fx" "${zero3[@]}" >/dev/null
check "shard = full stopped and resumed: bit-identical to its uninterrupted run" \
  same "$tmp/full/checkpoints/ckpt-00000030.h5" "$tmp/fx/checkpoints/ckpt-00000030.h5"
run 1 "$tmp/f1" --set "checkpoint.resume=$tmp/f17.h5" >/dev/null
check "shard = full's checkpoint resumed unsharded on 1 rank matches" \
  close_all "$ck/ckpt-00000030.h5" "$tmp/f1/checkpoints/ckpt-00000030.h5"
dry=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "model.layers=$mlp" \
  --set run.out_dir="$tmp/gdry" --set parallel.shard=gradients --set parallel.bucket_mb=0.1 --dry-run 2>&1)
check "--dry-run prints the kept half and the staging buffers" grep -q "gradients .* MiB (1/2 kept: .* MiB, and staging buffers" <<<"$dry"

# ---- Asynchronous checkpoints ([checkpoint] async): the same files, exact resume ----
out=$(run 2 "$tmp/as" --set checkpoint.async=true)
check "async: exit 0, each checkpoint written in the background" test $? -eq 0 -a \
  "$(grep -c 'written: step .* in the background; training stalled' <<<"$out")" -eq 3
check "async: the final checkpoint equals the synchronous run's (every dataset bit-identical)" \
  same "$ck/ckpt-00000030.h5" "$tmp/as/checkpoints/ckpt-00000030.h5"
HPCTRAIN_TEST_SIGNAL=1:17 run 2 "$tmp/asx" --set checkpoint.async=true >/dev/null
check "async: a signal waits for the step-17 checkpoint before exiting (exit 10, file complete)" \
  test $? -eq 10 -a "$(cat "$tmp/asx/checkpoints/latest")" = ckpt-00000017.h5
run 2 "$tmp/asx" --set checkpoint.async=true >/dev/null
check "async: stopped and resumed, bit-identical to the uninterrupted run" \
  same "$ck/ckpt-00000030.h5" "$tmp/asx/checkpoints/ckpt-00000030.h5"
out=$(HPCTRAIN_TEST_FAIL_WRITE=20 run 2 "$tmp/asf" --set checkpoint.async=true)
rc=$?
check "async: a failed background write stops the run at the next step, exit 4 ($rc), one line" \
  test $rc -eq 4 -a -n "$(grep -E '^hpctrain: error: checkpoint step 20 not written: write failed in .*; the newest complete checkpoint is ckpt-00000010.h5' <<<"$out")"
check "... no step after 21 trained" test -z "$(grep -E '^epoch .* step (2[5-9]|30)/' <<<"$out")"

# ---- Time-based interval: every_minutes ----
# (0.06 s: the 240 steps of the 128-wide MLP took 0.25 s on a fast day, 2026-12-02, when the
# former 0.3 s interval left only the final checkpoint.)
out=$(run 2 "$tmp/m" --set train.steps=240 --set checkpoint.every_steps=0 --set checkpoint.every_minutes=0.001 \
  --set checkpoint.keep=100)
n=$(ls "$tmp/m/checkpoints" | grep -c '^ckpt-')
wall=$(grep -o '^done: 240 steps in [0-9.]* s' <<<"$out" | awk '{print $5}')
check "every_minutes = 0.001 (0.06 s): $n checkpoints in a 240-step run of ${wall:-?} s (>= 2: timed ones and the final one)" \
  test "$n" -ge 2

# ---- Model parallelism: the same logical layout whatever M is ----
# A 2-stage run stopped at step 17 (signal on stage 1), resumed with M = 1; the M = 1 step-17
# checkpoint resumed with M = 2 on 4 ranks; both end where the uninterrupted run ends (1e-5).
out=$(HPCTRAIN_TEST_SIGNAL=1:17 run 2 "$tmp/mp2" --set parallel.pipeline_parallel=2)
check "M = 2: a signal on stage 1 stops both stages with a checkpoint (exit 10)" \
  test $? -eq 10 -a -f "$tmp/mp2/checkpoints/ckpt-00000017.h5"
out=$(run 2 "$tmp/mp2" --set parallel.pipeline_parallel=1)
check "M = 2 checkpoint resumed with M = 1 exits 0" grep -q "resumed from .*ckpt-00000017.h5: step 17" <<<"$out"
check "... and matches the uninterrupted run" close "$ck/ckpt-00000030.h5" "$tmp/mp2/checkpoints/ckpt-00000030.h5"
out=$(run 4 "$tmp/mp4" --set parallel.pipeline_parallel=2 --set "checkpoint.resume=$tmp/c17.h5")
check "M = 1 checkpoint resumed with M = 2 on 4 ranks exits 0" test $? -eq 0
check "... and matches the uninterrupted run" close "$ck/ckpt-00000030.h5" "$tmp/mp4/checkpoints/ckpt-00000030.h5"

# --dry-run of 2 stages with GPipe and 4 micro-batches prints each stage's estimate; the larger is
# the run's start-up estimate (each stage holds its 4 micro-batches' activations: the estimate took
# min(4, 2) before 2026-12-06).
pp=(--set parallel.pipeline_parallel=2 --set parallel.pipeline_schedule=gpipe --set train.micro_batches=4)
dry=$(run 2 "$tmp/ppdry" "${pp[@]}" --dry-run)
table=$(sed -n '/^Memory per rank of each stage/,/^Compute/p' <<<"$dry" | grep -E '^ +[01] ')
most=$(awk '{print $(NF-1)}' <<<"$table" | sort -g | tail -1)
out=$(run 2 "$tmp/ppest" "${pp[@]}" --set train.steps=2)
est=$(grep -o 'estimate [0-9.]* MiB' <<<"$out" | awk '{print $2}')
check "--dry-run of 2 stages: a row per stage, the larger in all ($most MiB) the run's estimate (${est:-?} MiB)" \
  test "$(wc -l <<<"$table")" = 2 -a -n "$est" -a "$most" = "$est"

# M = 2 stopped and resumed with M = 2 is bit-identical to an uninterrupted M = 2 run; an M = 4
# checkpoint resumes with M = 2, and the M = 1 one with M = 4.
run 2 "$tmp/mp2ref" --set parallel.pipeline_parallel=2 >/dev/null
HPCTRAIN_TEST_SIGNAL=0:17 run 2 "$tmp/mp2x" --set parallel.pipeline_parallel=2 >/dev/null
run 2 "$tmp/mp2x" --set parallel.pipeline_parallel=2 >/dev/null
check "M = 2 stopped and resumed: bit-identical to the uninterrupted M = 2 run" \
  same "$tmp/mp2ref/checkpoints/ckpt-00000030.h5" "$tmp/mp2x/checkpoints/ckpt-00000030.h5"
HPCTRAIN_TEST_SIGNAL=3:17 run 4 "$tmp/mp4x" --set parallel.pipeline_parallel=4 >/dev/null
run 2 "$tmp/mp4x" --set parallel.pipeline_parallel=2 >/dev/null
check "M = 4 checkpoint resumed with M = 2 matches the M = 2 run" \
  close "$tmp/mp2ref/checkpoints/ckpt-00000030.h5" "$tmp/mp4x/checkpoints/ckpt-00000030.h5"
run 4 "$tmp/mp14" --set parallel.pipeline_parallel=4 --set "checkpoint.resume=$tmp/c17.h5" >/dev/null
check "M = 1 checkpoint resumed with M = 4 matches the uninterrupted run" \
  close "$ck/ckpt-00000030.h5" "$tmp/mp14/checkpoints/ckpt-00000030.h5"

# ---- fp16 with dynamic loss scaling: the scale and the skip count are part of the checkpoint ----
f16=(--set precision.dtype=fp16 --set precision.loss_scale=1e9 --set precision.loss_scale_window=5)
out=$(run 2 "$tmp/f16ref" "${f16[@]}")
check "fp16 run: updates skipped for overflow are logged" grep -q "fp16 gradient overflow: update skipped, loss scale now" <<<"$out"
HPCTRAIN_TEST_SIGNAL=0:17 run 2 "$tmp/f16x" "${f16[@]}" >/dev/null
run 2 "$tmp/f16x" "${f16[@]}" >/dev/null
check "fp16 stopped and resumed: bit-identical (loss scale restored)" \
  same "$tmp/f16ref/checkpoints/ckpt-00000030.h5" "$tmp/f16x/checkpoints/ckpt-00000030.h5"
check "fp16 checkpoints hold float32 parameters and the loss scale" /usr/bin/python3 -c "
import h5py; f = h5py.File('$tmp/f16ref/checkpoints/ckpt-00000030.h5', 'r')
assert f['model/dense.0.weight'].dtype == 'float32' and f.attrs['loss_scale'] > 0 and f.attrs['skipped_steps'] > 0"
out=$(run 2 "$tmp/f16ref" --set precision.dtype=fp32 --eval-only)
check "an fp16 checkpoint evaluates in float32 (--eval-only)" grep -q "^eval-only: .*ckpt-00000030.h5" <<<"$out"

# ---- Exact resume with nested groups, batch-norm buffers and Adam's step count ----
res() {  # out_dir extra-args...: the ResNet example, 8 steps, Adam
  local out=$1
  shift
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_resnet.ini --set "run.out_dir=$out" \
    --set train.steps=8 --set optim.name=adam --set optim.lr=0.001 --set checkpoint.every_epochs=0 "$@" 2>&1
}
res "$tmp/r1" >/dev/null
HPCTRAIN_TEST_SIGNAL=0:3 res "$tmp/r2" >/dev/null
rc=$?
res "$tmp/r2" >/dev/null
check "ResNet + Adam: stopped at step 3 (exit $rc), resumed, bit-identical to the uninterrupted run" \
  same "$tmp/r1/checkpoints/ckpt-00000008.h5" "$tmp/r2/checkpoints/ckpt-00000008.h5"
check "ResNet checkpoint holds batch-norm running statistics, named in their block" \
  grep -qE '^/model/res\.0\.batchnorm\.0\.running_var +Dataset' <(h5ls -r "$tmp/r1/checkpoints/ckpt-00000008.h5")
check "ResNet checkpoint holds Adam's moments" \
  grep -qE '^/optimizer/exp_avg_sq/conv\.0\.weight +Dataset \{16, 1, 3, 3\}' <(h5ls -r "$tmp/r1/checkpoints/ckpt-00000008.h5")
fi

if in_part core; then
# ---- Real signals ----
long() {  # out_dir: a run long enough to be interrupted, in the background ($! is mpirun)
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$1" \
    --set train.steps=100000 --set log.log_every=10 >"$1.log" 2>&1 &
}
wait_training() {  # log: until the first progress line (at most 60 s)
  for _ in $(seq 600); do grep -q '^epoch ' "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
long "$tmp/s1"
pid=$!
wait_training "$tmp/s1.log"
t0=$(date +%s.%N)
kill -USR1 "$pid"
wait "$pid"
rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "SIGUSR1 to mpirun: exit 10 in ${dt} s (< 30 s, Slurm's KillWait)" test $rc -eq 10 -a "${dt%.*}" -lt 30
check "SIGUSR1 to mpirun: a checkpoint was written" test -n "$(ls "$tmp/s1/checkpoints" | grep ckpt-)"
long "$tmp/s2"
pid=$!
wait_training "$tmp/s2.log"
t0=$(date +%s.%N)
pkill -TERM -f "^$trainer inputs/mnist_mlp.ini --set run.out_dir=$tmp/s2"  # the ranks, not mpirun
wait "$pid"
rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "SIGTERM to every rank (what Slurm sends): exit 10 in ${dt} s" test $rc -eq 10 -a "${dt%.*}" -lt 30
check "SIGTERM: a checkpoint was written" test -n "$(ls "$tmp/s2/checkpoints" | grep ckpt-)"

# ---- Errors: one line, exit 2, nothing on disk changed ----
cp "$tmp/c17.h5" "$tmp/bad.h5"
$py - "$tmp/bad.h5" <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    off = f["model/dense.1.weight"].id.get_chunk_info(0).byte_offset
with open(sys.argv[1], "r+b") as g:  # flip one byte in the middle of the chunk
    g.seek(off + 1000)
    b = g.read(1)
    g.seek(off + 1000)
    g.write(bytes([b[0] ^ 0x5A]))
EOF
before=$(ls -l --time-style=+%s.%N "$ck")
out=$(run 2 "$tmp/x" --set "checkpoint.resume=$tmp/bad.h5")
rc=$?
echo "$out" | grep error | head -2
check "corrupted byte: exit 2" test $rc -eq 2
check "corrupted byte: the checksum failure names the dataset" grep -q "dataset /model/dense.1.weight .*checksum" <<<"$out"
other=(--set "model.layers=flatten dense(64) relu dense(128) relu dense(10)")
out=$(run 2 "$tmp/a" "${other[@]}" --set "checkpoint.resume=$ck/ckpt-00000030.h5")
rc=$?
check "different model: exit 2" test $rc -eq 2
check "different model: names the layer and both shapes" \
  grep -q "dense.0.weight is \[64, 784\] in this model but \[128, 784\] in the checkpoint" <<<"$out"
# One folder, one experiment (resume = auto): another experiment's checkpoint is refused with the
# key and the ways on; so is another schedule, unless --resume-changed.
out=$(run 2 "$tmp/a" "${other[@]}")
rc=$?
check "another model in the folder: exit 2, the key and the ways on ($(grep -c error <<<"$out") line)" \
  test $rc -eq 2 -a "$(grep -c "holds a checkpoint of another experiment (.*): model.layers = flatten dense(64) .*; to start over in $tmp/a: --set checkpoint.resume=none, or use another \[run\] out_dir" <<<"$out")" = 1
out=$(run 2 "$tmp/x" --set "checkpoint.resume=$tmp/nope.h5")
check "missing resume file: exit 2 with its name" test $? -eq 2 -a -n "$(grep 'resume = .*nope.h5: no such file' <<<"$out")"
check "failed resumes changed nothing in the checkpoint directory" test "$before" = "$(ls -l --time-style=+%s.%N "$ck")"
out=$(HPCTRAIN_TEST_FAIL_CHECKPOINT=20 run 2 "$tmp/f")
rc=$?
check "a failure while writing step 20: non-zero exit" test $rc -ne 0
check "... the step-10 checkpoint stays the newest" test "$(cat "$tmp/f/checkpoints/latest")" = ckpt-00000010.h5
check "... the step-20 file is only a partial one" test -f "$tmp/f/checkpoints/.ckpt-00000020.h5.partial" -a ! -e "$tmp/f/checkpoints/ckpt-00000020.h5"
out=$(run 2 "$tmp/f")
check "... and a rerun resumes from it" grep -q "resumed from .*ckpt-00000010.h5: step 10" <<<"$out"
check "... and cleans the partial file up" test ! -e "$tmp/f/checkpoints/.ckpt-00000020.h5.partial"
# One rank killed (SIGKILL) inside a checkpoint write, after its part, before the file is complete:
# the job ends (Open MPI kills the rest), the guarantees of kill -9 hold.
t0=$(date +%s)
out=$(HPCTRAIN_TEST_KILL_IN_WRITE=1:20 timeout 120 "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" \
  inputs/mnist_mlp.ini --set "run.out_dir=$tmp/k" --set train.steps=30 --set checkpoint.every_epochs=0 \
  --set checkpoint.every_steps=10 2>&1)
rc=$? dt=$(($(date +%s) - t0))
check "rank 1 killed inside step 20's checkpoint write: the job ends, non-zero ($rc), in $dt s" \
  test $rc -ne 0 -a $rc -ne 124 -a $dt -lt 60
check "... the step-10 checkpoint stays the newest, step 20's only a partial file" \
  test "$(cat "$tmp/k/checkpoints/latest")" = ckpt-00000010.h5 -a ! -e "$tmp/k/checkpoints/ckpt-00000020.h5"
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$tmp/k" \
  --set train.steps=30 --set checkpoint.every_epochs=0 --set checkpoint.every_steps=10 2>&1)
check "... a resubmission takes over the lock, removes the partial file and resumes from step 10" \
  test $? -eq 0 -a -n "$(grep 'resumed from .*ckpt-00000010.h5: step 10' <<<"$out")" \
  -a ! -e "$tmp/k/checkpoints/.ckpt-00000020.h5.partial"

# ---- Warnings, --eval-only, --dry-run ----
out=$(run 2 "$tmp/b" --set optim.lr=0.02)
rc=$?
check "another learning rate in the folder: exit 2, one line naming it" \
  test $rc -eq 2 -a -n "$(grep "error: .*another experiment.*optim.lr = 0.02 here, 0.05 in the checkpoint" <<<"$out")"
out=$(run 2 "$tmp/b" --set train.steps=35)
rc=$?
check "more steps: exit 2, naming --resume-changed" \
  test $rc -eq 2 -a -n "$(grep "error: .*another schedule: train.steps = 35 here, 30 in the checkpoint; to go on with the new one add --resume-changed" <<<"$out")"
out=$(run 2 "$tmp/b" --set train.steps=35 --resume-changed --set parallel.bucket_mb=1)
check "--resume-changed goes on to step 35, warning about the schedule alone (not the layout)" \
  test -f "$tmp/b/checkpoints/ckpt-00000035.h5" -a "$(grep -c "warning: resuming from" <<<"$out")" = 1 \
  -a -n "$(grep "warning: resuming from .*train.steps = 35 here, 30 in the checkpoint (using 35)" <<<"$out")"
out=$(run 2 "$tmp/b2" --set optim.lr=0.02 --set "checkpoint.resume=$tmp/b/checkpoints/ckpt-00000030.h5")
check "an explicit resume = FILE with another learning rate warns and trains" \
  grep -q "warning: resuming from .*optim.lr = 0.02 here, 0.05 in the checkpoint (using 0.02)" <<<"$out"
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$tmp/a" --set "model.layers=$mlp" --eval-only 2>&1)
rc=$?
echo "$out" | tail -1
final=$($py -c "import json; print('%.2f' % (100 * json.load(open('$tmp/a/summary.json'))['test_accuracy']))")
check "--eval-only exits 0 and reproduces the final test accuracy ($final%)" \
  test $rc -eq 0 -a -n "$(grep "ckpt-00000030.h5 (step 30): test .* accuracy $final%" <<<"$out")"
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$tmp/a" --set "model.layers=$mlp" --dry-run 2>&1)
check "--dry-run shows the checkpoint directory" grep -q "^Checkpoints: $tmp/a/checkpoints (exists, writable)" <<<"$out"
check "--dry-run checks the resume target" grep -q "^Resume: .*ckpt-00000030.h5 (step 30.*fits the model" <<<"$out"
fi
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$tmp/a" \
  --set "model.layers=flatten dense(10)" --dry-run 2>&1)
check "--dry-run refuses a checkpoint that does not fit the model (exit 2)" test $? -eq 2
finish
