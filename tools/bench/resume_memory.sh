#!/usr/bin/env bash
# tools/bench/resume_memory.sh [BUILD_DIR [LABEL]]: peak resident memory per rank (KB, /usr/bin/time %M)
# of a 20 M-parameter MLP with Adam sharded over 2 ranks (160 MB of state), started fresh and
# resumed from its step-8 checkpoint, twice (docs/performance.md "Resume memory"). Run it for two
# builds side by side to compare them.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-${HPCTRAIN_BUILD_DIR:-$root/build}}
label=${2:-$(basename "$build")}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
layers="flatten dense(4096) relu dense(4096) relu dense(10)"
run() {
  mpirun -np 2 --oversubscribe /usr/bin/time -f "$label $1 %M KB" "$build/trainer" inputs/mnist_mlp.ini \
    --set "model.layers=$layers" --set optim.name=adam --set train.global_batch=64 --set checkpoint.every_steps=4 \
    --set parallel.shard=optimizer "${@:2}" 2>&1 | grep -E "^$label |rror"
}
run write --set train.steps=8 --set checkpoint.dir="$tmp/a"
cp "$tmp/a/ckpt-00000008.h5" "$tmp/step8.h5"
run fresh --set train.steps=9 --set checkpoint.dir="$tmp/fresh"
for round in 1 2; do
  rm -f "$tmp/a"/ckpt-00000009.h5
  cp "$tmp/step8.h5" "$tmp/a/ckpt-00000008.h5"
  echo ckpt-00000008.h5 >"$tmp/a/latest"
  run "resumed($round)" --set train.steps=9 --set checkpoint.dir="$tmp/a"
done
