#!/usr/bin/env bash
# tools/bench/pipeline_bench.sh [--smoke]
# Model parallelism where it is needed: an MLP (784-2048-2048-2048-10, 10.0 M
# parameters) whose parameters, gradients and momentum (about 115 MiB) do not
# fit a per-rank [run] memory_budget of 100 MiB. With model_parallel = 1 the
# trainer refuses it (exit 2, naming the budget); with model_parallel = 2 it
# trains. For each schedule and micro-batch count: samples/s (steady state),
# peak memory per rank, the measured pipeline idle fraction beside the ideal
# (M - 1) / (K + M - 1), and the most micro-batch inputs a stage kept. Also the
# same model with M = 1 and no budget, for reference. Shipped MNIST subset,
# global batch 256, 2 ranks (one per core here).
# --smoke: a few steps of two configurations, for CI.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
trainer=${HPCTRAIN_BUILD_DIR:-$root/build}/trainer  # the build to measure (CTest passes its own)
steps=60
smoke=0
[ "${1:-}" = --smoke ] && smoke=1 steps=6
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
layers='flatten dense(2048) relu dense(2048) relu dense(2048) relu dense(10)'
run() {  # np out extra-args...
  local np=$1 out=$2
  shift 2
  mpirun -q -np "$np" --oversubscribe --bind-to none "$trainer" "$root/inputs/mnist_mlp.ini" \
    --set "data.path=$root/inputs/data/mnist-small" --set "model.layers=$layers" --set "train.steps=$steps" \
    --set "run.out_dir=$tmp/$out" --set checkpoint.resume=none --set checkpoint.every_epochs=0 \
    --set log.log_every=100000 "$@"
}
field() { /usr/bin/python3 -c "import json; print(json.load(open('$tmp/$1/summary.json'))['$2'])"; }

echo "pipeline_bench: $layers, global batch 256, $steps steps, $(date -u +%Y-%m-%dT%H:%MZ)"
set +e
err=$(run 1 refused --set run.memory_budget=100M 2>&1 >/dev/null)
rc=$?
set -e
echo "M = 1, memory_budget 100M: exit $rc: $(grep -o 'memory_budget.*held' <<<"$err" | head -1)"
[ $rc -eq 2 ] || { echo "FAIL: expected exit 2 for the model that does not fit"; exit 1; }

printf "%-3s %-6s %3s %12s %14s %10s %10s %6s\n" M sched K "samples/s" "peak MiB/rank" "idle" "ideal" "kept"
row() {  # np M schedule K
  local np=$1 m=$2 sched=$3 k=$4 out="m$2-$3-$4"
  local budget=()
  [ "$m" -gt 1 ] && budget=(--set run.memory_budget=100M)
  run "$np" "$out" --set "parallel.pipeline_parallel=$m" --set "parallel.pipeline_schedule=$sched" \
    --set "train.micro_batches=$k" "${budget[@]}" >/dev/null 2>&1 || { echo "FAIL: M=$m $sched K=$k"; exit 1; }
  printf "%-3s %-6s %3s %12.0f %14.1f %9.1f%% %9.1f%% %6.0f\n" "$m" "$sched" "$k" "$(field "$out" steady_samples_per_s)" \
    "$(/usr/bin/python3 -c "print($(field "$out" peak_bytes_per_rank) / 2**20)")" \
    "$(/usr/bin/python3 -c "print(100 * $(field "$out" pipeline_idle_fraction))")" \
    "$(/usr/bin/python3 -c "print(100 * $(field "$out" pipeline_idle_ideal))")" "$(field "$out" pipeline_peak_kept_inputs)"
}
if [ $smoke -eq 1 ]; then
  row 2 2 1f1b 4
  row 2 2 gpipe 4
else
  row 1 1 1f1b 1
  for sched in gpipe 1f1b; do
    for k in 1 2 4 8; do row 2 2 $sched $k; done
  done
fi
echo "PASS"
