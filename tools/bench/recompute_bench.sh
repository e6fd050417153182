#!/usr/bin/env bash
# tools/bench/recompute_bench.sh [--steps N] [--rounds R] [--old BUILD] [--precisions "fp32 bf16"]
# Activation checkpointing on the GPT decks: [train] recompute = none against blocks, side by
# side in one invocation, alternating, R rounds, one rank, one thread, tiny Shakespeare:
#   baby    inputs/shakespeare_gpt.ini (4 layers, 128 wide, block 64, batch 12, no dropout)
#   gpu     inputs/shakespeare_gpt_gpu.ini on the CPU (6 layers, 384 wide, block 256, dropout 0.2)
#           at global batch 8 (its 64 is minutes per step here)
# Per run: steady tokens/s, the peak the model's allocator held (parameters, gradients, optimizer
# state, activations, saved tensors and scratch: summary.json's peak_bytes_per_rank), the
# process's maximum resident set (/usr/bin/time), the final loss, and what the saved sets held at
# the end (saved_bytes_per_rank). With --old BUILD, that
# build's trainer (recompute = none only) runs beside them. --precisions: each policy in each
# [precision] dtype (default fp32; bf16 and fp16 keep saved tensors in 16 bits). PASS when blocks
# ends at the same loss digits as none and holds less, in every precision; FAIL otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}
text=$root/../shared/data/tinyshakespeare/input.txt
steps=40 rounds=2 old= precisions=fp32
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --old) old=$(cd "$2" && pwd); shift ;;
    --precisions) precisions=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/hpctrain-data" import-text --input "$text" --out "$tmp/data" >/dev/null
run() {  # trainer deck recompute label precision extra...
  local trainer=$1 deck=$2 rc=$3 label=$4 prec=$5 out=$tmp/run
  shift 5
  local ini=$root/inputs/$deck
  if [ "$rc" = old ]; then  # a build from before [model] block_size (2026-12-02) reads it in [data]
    ini=$tmp/old-$deck
    sed 's/^\[data\]$/[data]\n'"$(grep '^block_size' "$root/inputs/$deck")"'/; /^\[model\]$/,/^\[/{/^block_size/d}' \
      "$root/inputs/$deck" >"$ini"
  fi
  local args=("$ini" --set "data.path=$tmp/data" --set "train.steps=$steps" --set "run.out_dir=$out"
    --set checkpoint.resume=none --set checkpoint.every_steps=0 --set train.eval_every=0 --set train.log_every=1000
    --set checkpoint.every_epochs=0 --set "run.precision=$prec" "$@")
  [ "$rc" = old ] || args+=(--set "train.recompute=$rc")
  rm -rf "$out"
  /usr/bin/time -f "%M" -o "$tmp/rss" "$trainer" "${args[@]}" >"$tmp/log" 2>&1 || { echo "FAIL: $label"; tail -3 "$tmp/log"; exit 1; }
  /usr/bin/python3 - "$out/summary.json" "$tmp/rss" "$label" "$rc" "$prec" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rss = int(open(sys.argv[2]).read().split()[-1]) / 1024
saved = s.get('saved_bytes_per_rank')  # (an old build has none)
held = s.get('activation_bytes_per_rank')
print(f"{sys.argv[3]:<7} {sys.argv[5]:<5} {sys.argv[4]:<7} {s['steady_tokens_per_s']:>10.0f} "
      f"{s['peak_bytes_per_rank'] / 2**20:>10.1f} {rss:>9.1f} {s['final_train_loss']:>9.5f} "
      f"{saved / 2**20 if saved is not None else float('nan'):>9.1f} "
      f"{held / 2**20 if held is not None else float('nan'):>9.1f}")
PY
}
echo "recompute_bench: $steps steps, $rounds rounds, $(date -u +%Y-%m-%dT%H:%MZ)"
printf "%-7s %-5s %-7s %10s %10s %9s %9s %9s %9s\n" deck prec policy "tokens/s" "peak MiB" "RSS MiB" "loss" "saved MiB" \
  "act. MiB"
for r in $(seq "$rounds"); do
  for prec in $precisions; do
    for policy in none blocks ${old:+old}; do
      trainer=$build/trainer
      [ "$policy" = old ] && trainer=$old/trainer
      run "$trainer" shakespeare_gpt.ini "$policy" baby "$prec"
      run "$trainer" shakespeare_gpt_gpu.ini "$policy" gpu "$prec" --set train.global_batch=8 --set run.cpu_gemm=onednn
    done
  done
done | tee "$tmp/table"
/usr/bin/python3 - "$tmp/table" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
ok = True
for deck, prec in sorted({(r[0], r[1]) for r in rows}):
    none = [r for r in rows if r[0] == deck and r[1] == prec and r[2] == "none"]
    blocks = [r for r in rows if r[0] == deck and r[1] == prec and r[2] == "blocks"]
    same = {r[6] for r in none} == {r[6] for r in blocks}
    less = max(float(r[4]) for r in blocks) < min(float(r[4]) for r in none)
    ratio = min(float(r[4]) for r in blocks) / min(float(r[4]) for r in none)
    speed = sum(float(r[3]) for r in blocks) / sum(float(r[3]) for r in none)
    print(f"{deck} {prec}: blocks holds {ratio:.2f}x of none's peak at {speed:.2f}x its tokens/s; same loss: {same}")
    ok = ok and same and less
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
