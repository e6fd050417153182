#!/usr/bin/env bash
# tools/make_mnist_small.sh [MNIST_DIR] [OUT]: rebuilds the MNIST subset shipped in
# inputs/data/mnist-small from the original IDX files: the first 6,000 training
# images (5,000 train + the last 1,000 of those as val) and the first 2,000
# test images, gzip-compressed, pixels scaled to [0, 1] (scale 1/255).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mnist=${1:-$root/../shared/data/mnist}
out=${2:-$root/inputs/data/mnist-small}
tool=$root/build/hpctrain-data
"$tool" import-idx --images "$mnist/train-images-idx3-ubyte.gz" --labels "$mnist/train-labels-idx1-ubyte.gz" \
  --out "$out" --split train --limit 6000 --val-count 1000 --shards 2 --chunk-rows 256 --gzip 6 --force
"$tool" import-idx --images "$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz" \
  --out "$out" --split test --limit 2000 --shards 1 --chunk-rows 256 --gzip 6 --force
"$tool" inspect "$out"
