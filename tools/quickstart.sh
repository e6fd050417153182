#!/usr/bin/env bash
# tools/quickstart.sh: install what hpctrain needs, build it, and run the main
# example job on 2 ranks. Until the training engine lands this is a --dry-run
# of inputs/mnist_mlp.ini: the resolved configuration and the process grid.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/tools/setup.sh"
cd "$root"
np=2
echo
echo "+ mpirun -np $np --oversubscribe build/trainer inputs/mnist_mlp.ini --dry-run"
mpirun -np $np --oversubscribe --bind-to none build/trainer inputs/mnist_mlp.ini --dry-run
echo "quickstart: OK. Next: tools/test.sh runs the whole test suite; build/trainer --help lists every key."
