#!/usr/bin/env bash
# tools/bench/sharding_bench.sh [memory|speed|all] [BUILD_DIR]: [parallel] shard = none, optimizer,
# gradients and full (ZeRO 0-3) side by side on a deeper char-level Llama (8 blocks, 256 wide, 6.3 M
# parameters, bucket_mb = 2: one block per bucket), from each run's summary.json
# (docs/performance.md "Sharded gradients and parameters (ZeRO-2, ZeRO-3)"):
#   memory: D = 1, 2, 4, 6 steps each: parameter and gradient buffers, optimizer state and peak per rank
#   speed:  D = 2, 30 steps, two rounds alternating: optimizer against gradients at 1 and 4
#           micro-batches; full with the next bucket's gather prefetched (gather_overlap = on) and not
# The data: tiny Shakespeare as char tokens, made here from ../shared/data (or HPCTRAIN_TEXT=FILE).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
what=${1:-all}
build=${2:-${HPCTRAIN_BUILD_DIR:-$root/build}}
text=${HPCTRAIN_TEXT:-$root/../shared/data/tinyshakespeare/input.txt}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
"$build/hpctrain-data" import-text --input "$text" --out "$tmp/chars" >/dev/null || exit 1
deep=(--set data.path="$tmp/chars" --set model.n_layer=8 --set model.n_embd=256 --set model.ffn_dim=768
  --set model.n_head=8 --set model.n_kv_heads=4 --set model.vocab_multiple=1 --set parallel.bucket_mb=2
  --set checkpoint.every_steps=0 --set train.eval_every=0)
run() {  # ranks label args...: one run, then one line from its summary
  local np=$1 label=$2 out=$tmp/run
  rm -rf "$out"
  mpirun -np "$np" --oversubscribe "$build/trainer" inputs/llama_small.ini "${deep[@]}" --set run.out_dir="$out" \
    "${@:3}" >"$tmp/log" 2>&1 || { echo "$label: failed"; tail -3 "$tmp/log"; return; }
  /usr/bin/python3 -c "
import json; s = json.load(open('$out/summary.json')); M = 2.0**20
print('%-34s D=%d %-9s parameters %6.1f MiB  gradients %6.1f MiB  optimizer state %6.1f MiB  peak %6.1f MiB  %7.0f tokens/s  eval loss %.6f'
      % ('$label', s['ranks'], s['shard'], s['parameter_bytes_per_rank'] / M, s['gradient_bytes_per_rank'] / M, s['optimizer_state_bytes_per_rank'] / M,
         s['peak_bytes_per_rank'] / M, s['steady_tokens_per_s'], s['final_eval_loss']))"
}
if [ "$what" = memory ] || [ "$what" = all ]; then
  for np in 1 2 4; do
    for shard in none optimizer gradients full; do
      [ "$np" = 1 ] && [ "$shard" != none ] && continue
      run "$np" "memory" --set train.steps=6 --set parallel.shard=$shard
    done
  done
fi
if [ "$what" = speed ] || [ "$what" = all ]; then
  for round in 1 2; do
    for mb in 1 4; do
      for shard in optimizer gradients; do
        run 2 "speed round $round, $mb micro-batch(es)" --set train.steps=30 --set train.micro_batches=$mb \
          --set parallel.shard=$shard
      done
    done
    for prefetch in on off; do
      run 2 "speed round $round, full, prefetch $prefetch" --set train.steps=30 --set parallel.shard=full \
        --set parallel.gather_overlap=$prefetch
    done
  done
fi
