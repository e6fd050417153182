#!/usr/bin/env bash
# tools/bench/checkpoint_bench.sh [--smoke] [--dir DIR]
# What a checkpoint costs training, synchronous against [checkpoint] async: a wide MLP
# (784-8192-8192-10, 73.6 M parameters; with SGD momentum 589 MB of state per checkpoint) on
# the shipped MNIST subset, 2 ranks, global batch 64, a checkpoint every 4 steps. For each mode:
# wall time, the time training spent inside checkpointing (summary.json checkpoint_stall_s), the
# write time and rate, and the step time (steady state). Beside them the same disk's rate for dd
# writing 600 MB, with and without fsync. DIR (default: a new directory under /tmp) holds the
# checkpoints. --smoke: a small MLP and few steps, for CI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_args.sh"  # root, trainer, smoke, dir, tmp
layers='flatten dense(8192) relu dense(8192) relu dense(10)' steps=24 dd_mb=600
[ $smoke -eq 1 ] && layers='flatten dense(256) relu dense(10)' steps=8 dd_mb=8
run() {  # out async
  mpirun -q -np 2 --oversubscribe --bind-to none "$trainer" "$root/inputs/mnist_mlp.ini" \
    --set "data.path=$root/inputs/data/mnist-small" --set "model.layers=$layers" --set "train.steps=$steps" \
    --set train.global_batch=64 --set "run.out_dir=$tmp/$1" --set checkpoint.resume=none \
    --set checkpoint.every_epochs=0 --set checkpoint.every_steps=4 --set checkpoint.keep=1 \
    --set train.eval_every=100000 --set log.log_every=4 --set "checkpoint.async=$2" 2>&1
}
field() { /usr/bin/python3 -c "import json; print(json.load(open('$tmp/$1/summary.json'))['$2'])"; }

echo "checkpoint_bench: $layers, 2 ranks, global batch 64, $steps steps, a checkpoint every 4, in $tmp, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-6s %8s %12s %14s %12s %12s %16s\n' mode wall_s stall_s stall/ckpt_s write_s write_MB/s steady_samples/s
for mode in false true false true; do
  out=$(run "$mode-$RANDOM" "$mode")
  d=$(ls -td "$tmp"/$mode-* | head -1)
  n=$(grep -c '^checkpoint .* written' <<<"$out")
  mb=$(grep -o 'written: step [0-9]*, [0-9]* MiB' <<<"$out" | head -1 | awk '{print $4}')
  w=$(field "$(basename "$d")" checkpoint_write_s) s=$(field "$(basename "$d")" checkpoint_stall_s)
  printf '%-6s %8.2f %12.2f %14.3f %12.2f %12.0f %16.0f\n' "$([ $mode = true ] && echo async || echo sync)" \
    "$(field "$(basename "$d")" wall_s)" "$s" "$(/usr/bin/python3 -c "print($s / max($n, 1))")" "$w" \
    "$(/usr/bin/python3 -c "print($n * $mb * 1.048576 / max($w, 1e-9))")" "$(field "$(basename "$d")" steady_samples_per_s)"
  rm -rf "$d"
done
for sync in fsync none; do
  flag=$([ $sync = fsync ] && echo conv=fsync || echo "")
  rate=$(dd if=/dev/zero of="$tmp/dd" bs=4M count=$((dd_mb / 4)) $flag 2>&1 | grep -oE '[0-9.]+ [MG]B/s' | tail -1)
  echo "dd $dd_mb MB ($sync): $rate"
  rm -f "$tmp/dd"
done
echo PASS
