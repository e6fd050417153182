#!/usr/bin/env bash
# tools/bench/roof_bench.sh [--rounds N] [--models "mlp cnn gpt"]
# The machine's scaling roof against the 2-rank run, for the MNIST MLP and CNN examples and the
# CPU GPT deck (on tiny Shakespeare, ../shared/data or TEXT=FILE; skipped without it): one 1-rank
# job at half the global batch (MNIST 128, GPT 6 sequences); two such 1-rank jobs at the same
# time (the roof: the same per-rank work with no communication); the 2-rank job at the global
# batch (256, 12); the same with [parallel] shard = optimizer. Steady-state samples/s (tokens/s for
# the GPT) from each run's summary.json; the 2-rank runs as a share of the roof. 600 MLP, 240 CNN
# or 400 GPT steps per run (at 150 / 60, 2026-11-30 to 12-01, a run's ~2 s steady state made
# single runs differ by 10%). Prints a line per model and round, then the median share per model.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rounds=2 models="mlp cnn gpt"
text=${TEXT:-$root/../shared/data/tinyshakespeare/input.txt}
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --models) models=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--models \"mlp cnn gpt\"]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build=${HPCTRAIN_BUILD_DIR:-$root/build}  # the build to measure
T=$build/trainer
# Per model: the deck, the data, the 2-rank run's global batch, steps, the figure summary.json gives.
setup() {
  common=(--set checkpoint.resume=none --set checkpoint.every_epochs=0 --set train.eval_every=100000)
  case $model in
    mlp | cnn)
      deck=$root/inputs/mnist_$model.ini batch=256 key=steady_samples_per_s
      steps=$([ "$model" = mlp ] && echo 600 || echo 240)
      common+=(--set "data.path=$root/inputs/data/mnist-small") ;;
    gpt)  # the CPU GPT deck on tiny Shakespeare (batch 12 of 64 tokens), one checkpoint at the end
      [ -f "$text" ] || { echo "gpt: no text at $text (set TEXT=FILE): skipped"; return 1; }
      [ -d "$tmp/text" ] || "$build/hpctrain-data" import-text --input "$text" --out "$tmp/text" >/dev/null
      deck=$root/inputs/shakespeare_gpt.ini batch=12 key=steady_tokens_per_s steps=400
      common+=(--set "data.path=$tmp/text") ;;
  esac
}
st() { /usr/bin/python3 -c "import json; print(round(json.load(open('$1/summary.json'))['$key']))"; }
one() {  # out extra...
  local out=$1
  shift
  mpirun -q -np 1 --bind-to none "$T" "$deck" --set "run.out_dir=$out" \
    --set "train.global_batch=$((batch / 2))" --set "train.steps=$steps" "${common[@]}" "$@" >/dev/null 2>&1
}
two() {  # out extra...
  local out=$1
  shift
  mpirun -q -np 2 --bind-to none "$T" "$deck" --set "run.out_dir=$out" --set "train.global_batch=$batch" \
    --set "train.steps=$steps" "${common[@]}" "$@" >/dev/null 2>&1
}
echo "roof_bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
for model in $models; do
  setup || continue
  shares=() sharded=()
  for round in $(seq "$rounds"); do
    o=$tmp/$model$round
    one "$o/one"
    one "$o/r1" &
    one "$o/r2"
    wait
    two "$o/two"
    two "$o/twoz" --set parallel.shard=optimizer
    r1=$(st "$o/r1") r2=$(st "$o/r2") t=$(st "$o/two") z=$(st "$o/twoz")
    roof=$((r1 + r2))
    echo "$model round $round: 1 rank (batch $((batch / 2))) $(st "$o/one"); roof $r1 + $r2 = $roof; 2 ranks $t" \
      "($((100 * t / roof))% of roof); sharded $z ($((100 * z / roof))%)"
    shares+=($((1000 * t / roof))) sharded+=($((1000 * z / roof)))
  done
  median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.1f", m/10}'; }
  echo "$model: median over $rounds rounds: 2 ranks $(median "${shares[@]}")% of roof, sharded $(median "${sharded[@]}")%" \
    "(BLAS: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset})"
done
