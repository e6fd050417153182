#!/usr/bin/env bash
# tools/bench/deck_vs_torch.sh [--deck FILE] [--context T] [--batch B] [--steps N] [--threads K] [--ranks R]
#                              [--set KEY=VALUE ...]
# A language-model deck's model (default inputs/gpt2_124m.ini: GPT-2 124M, 12 layers, 12 heads, 768
# wide, vocabulary 50,257, tied head; inputs/llama_small.ini and the like work the same) on the CPU
# at a small batch, hpctrain against the same model in PyTorch eager (tools/bench/torch_gpt.py,
# Debian's python3-torch, the model built from the deck's layers string), side by side in one
# invocation, float32, AdamW, clip 1.0. PyTorch: one process of K threads. hpctrain: R ranks
# (data-parallel, the batch split between them) of K / R threads each, so both use K cores.
# hpctrain trains on llm.c shards of made-up ids (tests/reference/llmc_write_datafile.py),
# PyTorch on random ids: the speed of a step does not depend on the ids.
# tokens/s: hpctrain's steady state (summary.json), PyTorch's over its timed steps; and the
# model FLOP/s (6 N + 12 L C T a token, as llm.c counts them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}
context=128 batch=4 steps=6 threads=2 ranks=1 deck=$root/inputs/gpt2_124m.ini
extra=()  # --set KEY=VALUE: hpctrain's run only (train.loss_chunk=0: the deck without its chunks)
while [ $# -gt 0 ]; do
  case $1 in
    --deck) deck=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
    --ranks) ranks=$2; shift ;;
    --context) context=$2; shift ;;
    --batch) batch=$2; shift ;;
    --steps) steps=$2; shift ;;
    --threads) threads=$2; shift ;;
    --set) extra+=(--set "$2"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/fw"
"$root/tests/reference/llmc_write_datafile.py" "$tmp/fw/bench_train_0.bin" gpt-2 0 2000000
per_rank=$((threads / ranks > 0 ? threads / ranks : 1))
sets=(--set data.path="$tmp/fw" --set model.block_size="$context" --set train.global_batch="$batch"
  --set precision.dtype=fp32 --set kernels.threads="$per_rank" --set train.micro_batch=$((batch / ranks))
  ${extra[@]+"${extra[@]}"})
layers=$("$build/trainer" "$deck" --describe-model "${sets[@]}" 2>/dev/null |
  /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['layers_text'])")
printf '[model]\nlayers = %s\nblock_size = %s\n[train]\nglobal_batch = %s\n' "$layers" "$context" "$batch" >"$tmp/torch.ini"

# Warm-up steps are timed out of both: hpctrain's steady state starts after its first steps.
mpirun -np "$ranks" --oversubscribe --bind-to none "$build/trainer" "$deck" "${sets[@]}" --set train.steps=$((steps + 2)) --set train.eval_every=0 \
  --set log.log_every=1 --set run.out_dir="$tmp/ours" --set checkpoint.every_steps=0 \
  --set checkpoint.dir="$tmp/ckpt" --set checkpoint.space_check=off --set log.tensorboard=false >"$tmp/ours.log" 2>&1 ||
  { grep -m1 error "$tmp/ours.log" >&2; exit 1; }
read -r ours ours_flops fpt < <(/usr/bin/python3 -c "
import json; s = json.load(open('$tmp/ours/summary.json'))
print(round(s['steady_tokens_per_s'], 1), s['steady_model_flops_per_s'], s['flops_per_token'])")
theirs=$(OMP_NUM_THREADS=$threads /usr/bin/python3 "$root/tools/bench/torch_gpt.py" "$tmp/torch.ini" --device cpu \
  --steps "$steps" --warmup 2 --batch "$batch" --threads "$threads" |
  /usr/bin/python3 -c "import json, sys; print(round(json.load(sys.stdin)['tokens_per_s'], 1))")
printf '%-28s %12s %14s %8s\n' "$(basename "$deck" .ini), T=$context B=$batch" "tokens/s" "model GFLOP/s" "ratio"
printf '%-28s %12s %14.1f %8s\n' "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') eager" \
  "$theirs" "$(/usr/bin/python3 -c "print($theirs * $fpt / 1e9)")" "1.00x"
printf '%-28s %12s %14.1f %7.2fx\n' "hpctrain, $ranks rank(s)" "$ours" "$(/usr/bin/python3 -c "print($ours_flops / 1e9)")" \
  "$(/usr/bin/python3 -c "print($ours / $theirs)")"
echo "($threads core(s) each, float32, $steps timed steps; $(date -u +%Y-%m-%dT%H:%MZ))"
