#!/usr/bin/env bash
# tools/bench/old_new_throughput.sh OLD_BUILD NEW_BUILD [ROUNDS]: steady samples/s (summary.json) of
# the MNIST MLP (150 steps), the MNIST CNN (30 steps) and the Shakespeare GPT (40 steps, on the
# 220 kB test text: 62 characters) with two builds' trainers on 2 ranks, alternating which goes
# first each round (default 4 rounds). For restructurings that must keep throughput within noise
# (issue 30); compare the means against the rounds' spread. Prints one line per round and build.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-4}
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$new/hpctrain-data" import-text --input tests/data/text/shakespeare-220k.txt --out $tmp/text --val-fraction 0.1 --shards 2 >/dev/null
run() { # bin deck args...
  local bin=$1; shift; local o=$tmp/o$RANDOM
  mpirun -np 2 --oversubscribe --bind-to none $bin "$@" --set run.out_dir=$o --set checkpoint.resume=none --set checkpoint.every_epochs=0 --set checkpoint.every_steps=0 >/dev/null 2>&1
  /usr/bin/python3 -c "import json; print(round(json.load(open('$o/summary.json'))['steady_samples_per_s'], 1))" 2>/dev/null ||
    echo "failed"
  rm -rf $o
}
for r in $(seq "$rounds"); do
  order="old new"; [ $((r % 2)) -eq 0 ] && order="new old"
  for side in $order; do
    bin=$old/trainer
    [ "$side" = new ] && bin=$new/trainer
    m=$(run $bin inputs/mnist_mlp.ini --set train.steps=150)
    c=$(run $bin inputs/mnist_cnn.ini --set train.steps=30)
    g=$(run $bin inputs/shakespeare_gpt.ini --set "model.layers=embedding(62, 128) position_embedding repeat(4, res(layernorm(bias=0) attention(4, bias=0, proj_std=0.0070711)) res(layernorm(bias=0) linear(512, bias=0) gelu linear(128, bias=0, std=0.0070711))) layernorm(bias=0) lm_head(62)" --set data.path=$tmp/text --set train.steps=40 --set train.eval_every=0)
    echo "round $r $side mlp $m cnn $c gpt $g"
  done
done
