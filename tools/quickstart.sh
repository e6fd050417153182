#!/usr/bin/env bash
# tools/quickstart.sh: install what hpctrain needs, build it, and run the main
# example job: the MNIST MLP (inputs/mnist_mlp.ini) trained data-parallel on 2
# ranks on the shipped MNIST subset (a few seconds).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/tools/setup.sh"
cd "$root"
np=2
echo
# resume = none: train anew each time (by default a rerun continues from runs/mnist_mlp/checkpoints)
echo "+ mpirun -np $np --oversubscribe build/trainer inputs/mnist_mlp.ini --set checkpoint.resume=none"
mpirun -np $np --oversubscribe --bind-to none build/trainer inputs/mnist_mlp.ini --set checkpoint.resume=none
echo "quickstart: OK (metrics and checkpoints in runs/mnist_mlp/). Next: tools/test.sh runs the whole test suite;"
echo "build/trainer --help lists every key; add --dry-run to check a configuration without training."
