#!/usr/bin/env bash
# tools/bench/gpt_vs_torch.sh [--smoke] [--steps N] [--data TEXT]
# The CPU GPT deck (inputs/shakespeare_gpt.ini: nanoGPT's baby GPT, 804,096 parameters) against
# the PyTorch reference (../shared/bench/torch_gpt_baseline.py: the same model, optimizer and
# batch), side by side in one invocation on tiny Shakespeare, one thread per process:
#   hpctrain 1 rank, 2 ranks (global batch 12 split over them), and two independent 1-rank jobs
#   at once (this machine's scaling roof); PyTorch 1 process and 2 (DDP over gloo).
# tokens/s: hpctrain's steady state (summary.json), PyTorch's over its timed steps (slowest rank).
# Also the model FLOPs per token (6 x parameters + attention, as nanoGPT's MFU counts) and the
# achieved fraction of the single-core sgemm rate (build/sgemm-rate, both GEMM libraries).
# --smoke: 20 steps of hpctrain only on a text the project has (for CI).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}  # the build to measure (CTest passes its own)
ref=${TORCH_GPT_BASELINE:-$root/../shared/bench/torch_gpt_baseline.py}
text=$root/../shared/data/tinyshakespeare/input.txt
steps=200 smoke=0
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 steps=20 ;;
    --steps) steps=$2; shift ;;
    --data) text=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$text" ]; then
  [ $smoke -eq 1 ] || { echo "no text at $text (give --data FILE)" >&2; exit 2; }
  text=$tmp/docs.txt
  cat "$root"/README.md "$root"/docs/*.md >"$text"
fi
vocab=$("$build/hpctrain-data" import-text --input "$text" --out "$tmp/data" | grep -o 'vocabulary [0-9]*' | awk '{print $2}')
deck=$root/inputs/shakespeare_gpt.ini
layers=$(sed -n 's/^layers = //p' "$deck" | sed "s/(65/($vocab/g")
ours() {  # name ranks [extra mpirun args]: tokens/s of one hpctrain run
  local name=$1 np=$2
  mpirun -np "$np" --bind-to none "$build/trainer" "$deck" --set data.path="$tmp/data" --set model.layers="$layers" \
    --set train.steps="$steps" --set train.eval_every=0 --set log.log_every=100 --set run.out_dir="$tmp/$name" \
    --set checkpoint.every_steps=0 --set checkpoint.resume=none --set log.tensorboard=false >"$tmp/$name.log" 2>&1 ||
    { grep -m1 "error" "$tmp/$name.log" >&2; return 1; }
  /usr/bin/python3 -c "import json; print(round(json.load(open('$tmp/$name/summary.json'))['steady_tokens_per_s']))"
}
theirs() {  # processes: tokens/s of the PyTorch reference
  local cmd=(/usr/bin/python3)
  [ "$1" -gt 1 ] && cmd=(/usr/bin/torchrun --standalone --nproc_per_node="$1" --redirects 9:0 --tee 9:0)
  "${cmd[@]}" "$ref" --data "$text" --steps $((steps + 20)) --warmup 20 2>/dev/null |
    awk '/^RESULT/ {for (i = 1; i < NF; i++) if ($i == "tokens/s") print $(i + 1)}'
}
one=$(ours one 1)
two=$(ours two 2)
# Two independent 1-rank jobs at once: what two ranks could reach if nothing were shared.
ours pair_a 1 >"$tmp/pair_a.rate" & a=$!
ours pair_b 1 >"$tmp/pair_b.rate" & b=$!
wait $a $b
roof=$(( $(cat "$tmp/pair_a.rate") + $(cat "$tmp/pair_b.rate") ))
t1="-" t2="-"
if [ $smoke -eq 0 ] && [ -f "$ref" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  t1=$(theirs 1)
  t2=$(theirs 2)
fi
params=$(grep -o "^total  *[0-9]*" "$tmp/one.log" | awk '{print $2}')
# FLOPs per token: 6 x parameters (forward and backward of every weight) + the attention
# matrices, 12 x layers x T x C (QK^T and PV, forward and backward, the full T x T as computed).
flops=$(awk -v p="$params" 'BEGIN{print 6 * p + 12 * 4 * 64 * 128}')
blas=$("$build/sgemm-rate") dnnl=$("$build/sgemm-rate" --onednn)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b ~ /^[0-9.]+$/ && b > 0) printf "%.2fx", a / b; else print "-" }'; }
printf '%-28s %12s %12s %8s\n' configuration hpctrain PyTorch ratio
printf '%-28s %12s %12s %8s\n' "1 rank x 1 thread" "$one" "$t1" "$(ratio "$one" "$t1")"
printf '%-28s %12s %12s %8s\n' "2 ranks x 1 thread" "$two" "$t2" "$(ratio "$two" "$t2")"
printf '%-28s %12s\n' "two 1-rank jobs at once" "$roof"
echo "tokens/s; 1 -> 2 ranks: $(ratio "$two" "$one") (roof: two independent jobs $(ratio "$roof" "$one"));" \
  "PyTorch 1 -> 2: $(ratio "$t2" "$t1")"
awk -v r="$one" -v f="$flops" -v b="$blas" -v d="$dnnl" 'BEGIN{
  g = r * f / 1e9
  printf "model: %.2f MFLOP per token; 1 rank: %.1f GFLOP/s = %.0f%% of oneDNN sgemm (%.1f GFLOP/s), %.0f%% of OpenBLAS sgemm (%.1f)\n",
    f / 1e6, g, 100 * g / d, d, 100 * g / b, b }'
grep -o "float32: [^|]*" "$tmp/one/summary.json" 2>/dev/null | head -1 || true
echo "gpt_vs_torch: $(date -u +%Y-%m-%dT%H:%MZ), $steps steps, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; PASS"
