#!/usr/bin/env bash
# tools/bench/bitwise_compare.sh OLD_BUILD NEW_BUILD: the same training runs with two builds'
# trainers side by side on this machine, and whether they end bit-identical: the final
# checkpoint's /model and /optimizer groups (h5diff, exact) and every logged figure that does
# not measure time (loss, accuracy, lr, evaluation, gradient norm, loss scale, skipped steps). For
# restructurings that must not change results (issue 30: "fp32 results bit-identical to
# before"). Runs on the CPU; both builds on the same machine (OpenBLAS and oneDNN pick their
# kernels per CPU, so checkpoints of another machine need not match).
#   tools/bench/bitwise_compare.sh /tmp/old-build build
# Each build runs in its own source tree (CMakeCache.txt's CMAKE_HOME_DIRECTORY), with that tree's
# decks, so a deck whose keys moved between the two is read by each build as it was written for
# it; the --set overrides below use names both builds accept (old names warn in the new build).
# Decks: MLP with micro-batches and clipping; Adam sharded over 2 ranks with the all-gather
# overlapped; a 2-stage 1F1B pipeline with clipping; 2 stages x 2 replicas (GPipe, sharded);
# a CNN with batch norm in fp16 (loss scaling); a GPT with a tied head over 2 stages, AdamW,
# bf16. Prints one row per deck and PASS/FAIL; exits 1 on any difference.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
data_tool=${HPCTRAIN_DATA_TOOL:-$new/hpctrain-data}
[ -x "$data_tool" ] || data_tool=$root/build/hpctrain-data
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "outputs in $tmp" || trap 'rm -rf "$tmp"' EXIT
cd "$root"
"$data_tool" import-text --input tests/data/text/shakespeare-220k.txt --out "$tmp/text" --val-fraction 0.1 \
  --shards 2 >/dev/null || { echo "import-text failed"; exit 1; }
mlp=(inputs/mnist_mlp.ini --set "model.layers=flatten dense(64) relu dense(10)" --set train.steps=12
     --set train.log_every=2 --set train.global_batch=64)
gpt_layers="embedding(62, 32) position_embedding repeat(2, res(layernorm(bias=0) attention(4, bias=0)) res(layernorm(bias=0) linear(64, bias=0) gelu linear(32, bias=0))) layernorm(bias=0) lm_head(62)"  # (the fixed text has 62 characters)
decks=(
  "mlp_microbatch_clip|2|${mlp[*]@Q} --set train.micro_batches=2 --set optim.clip_norm=0.5"
  "mlp_adam_sharded_overlap|2|${mlp[*]@Q} --set optim.name=adam --set optim.lr=0.01 --set parallel.shard=optimizer --set parallel.gather_overlap=on"
  "mlp_pipeline_1f1b_clip|2|${mlp[*]@Q} --set parallel.pipeline_parallel=2 --set train.micro_batches=4 --set optim.clip_norm=0.5"
  "mlp_pp2_dp2_gpipe_sharded|4|${mlp[*]@Q} --set parallel.pipeline_parallel=2 --set parallel.pipeline_schedule=gpipe --set train.micro_batches=2 --set optim.name=adamw --set parallel.shard=optimizer"
  "cnn_batchnorm_fp16|2|inputs/mnist_cnn.ini --set 'model.layers=conv(8,3,pad=1) batchnorm relu maxpool(2) flatten dense(10)' --set train.steps=8 --set train.log_every=2 --set train.global_batch=64 --set run.precision=fp16 --set optim.name=adam --set optim.lr=0.01"
  "gpt_tied_pp2_bf16|2|inputs/shakespeare_gpt.ini --set data.path=$tmp/text --set data.block_size=16 --set 'model.layers=$gpt_layers' --set train.steps=10 --set train.log_every=2 --set train.eval_every=0 --set parallel.pipeline_parallel=2 --set train.micro_batches=2 --set run.precision=bf16"
)
fails=0
printf '%-28s %6s %10s %10s  %s\n' deck ranks "old s" "new s" result
for d in "${decks[@]}"; do
  IFS='|' read -r name np args <<<"$d"
  for side in old new; do
    bin=$old/trainer
    [ $side = new ] && bin=$new/trainer
    here=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$(dirname "$bin")/CMakeCache.txt")
    out=$tmp/$name-$side
    t0=$(date +%s.%N)
    eval "(cd ${here:-$root} && mpirun -np $np --oversubscribe --bind-to none $bin $args --set run.out_dir=$out \
          --set checkpoint.resume=none --set checkpoint.every_epochs=0 --set checkpoint.every_steps=0)" >"$out.log" 2>&1 || echo "$name: $side exited $?"
    printf -v "t_$side" '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)"
  done
  a=$(ls "$tmp/$name-old"/checkpoints/ckpt-*.h5 2>/dev/null | tail -1)
  b=$(ls "$tmp/$name-new"/checkpoints/ckpt-*.h5 2>/dev/null | tail -1)
  result=PASS
  if [ -z "$a" ] || [ -z "$b" ]; then
    result="FAIL (no final checkpoint)"
  elif ! h5diff -q "$a" "$b" /model /model || ! h5diff -q "$a" "$b" /optimizer /optimizer; then
    result="FAIL (checkpoints differ)"
  elif ! cmp -s <(cut -d, -f1,2,4,5,9-14 "$tmp/$name-old/metrics.csv") <(cut -d, -f1,2,4,5,9-14 "$tmp/$name-new/metrics.csv"); then
    result="FAIL (logged losses differ)"
  fi
  [ "$result" = PASS ] || fails=$((fails + 1))
  printf '%-28s %6s %10s %10s  %s\n' "$name" "$np" "$t_old" "$t_new" "$result"
done
echo
[ $fails -eq 0 ] && echo "PASS: ${#decks[@]} decks bit-identical" || echo "FAIL: $fails of ${#decks[@]} decks differ"
[ $fails -eq 0 ]
