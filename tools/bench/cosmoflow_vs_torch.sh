#!/usr/bin/env bash
# tools/bench/cosmoflow_vs_torch.sh [--data DIR] [--steps N] [--threads K] [--ranks R]
# inputs/cosmoflow_32.ini trained on the synthetic cosmology set (docs/volumes.md), hpctrain
# against the same model in PyTorch eager (tools/bench/torch_cosmoflow.py, Debian's python3-torch)
# side by side in one invocation: the same data, batch (32), optimizer (SGD, momentum 0.9, the
# deck's rate and warm-up) and number of steps; the test split's mean absolute error after them,
# and samples/s (hpctrain: its steady state, summary.json; PyTorch: over the steps after the
# first two). PyTorch: one process of K threads; hpctrain: R data-parallel ranks of K / R threads.
# Without --data, 2,048 train and 256 test volumes of 32^3 are generated first (about 20 s).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}
data="" steps=192 threads=2 ranks=2
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift ;;
    --steps) steps=$2; shift ;;
    --threads) threads=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$data" ]; then
  data=$tmp/cosmo
  "$build/hpctrain-data" generate --kind cosmo --size 32 --train 2048 --val 256 --test 256 --out "$data" >/dev/null
fi
deck=$root/inputs/cosmoflow_32.ini
per_rank=$((threads / ranks > 0 ? threads / ranks : 1))
start=$(date +%s)
mpirun -np "$ranks" --oversubscribe --bind-to none "$build/trainer" "$deck" --set data.path="$data" \
  --set train.steps="$steps" --set train.eval_every=0 --set kernels.threads="$per_rank" --set run.out_dir="$tmp/ours" \
  --set checkpoint.every_epochs=0 --set checkpoint.dir="$tmp/ckpt" >"$tmp/ours.log" 2>&1 ||
  { grep -m1 error "$tmp/ours.log" >&2; exit 1; }
ours_s=$(($(date +%s) - start))
read -r ours ours_mae < <(/usr/bin/python3 -c "
import json; s = json.load(open('$tmp/ours/summary.json'))
print(round(s['steady_samples_per_s'], 1), round(s['final_eval_mae'], 4))")
lr=$(sed -n 's/^lr *= *//p' "$deck") warmup=$(sed -n 's/^warmup_steps *= *//p' "$deck")
start=$(date +%s)
HPCTRAIN_TRAINER=$build/trainer OMP_NUM_THREADS=$threads /usr/bin/python3 "$root/tools/bench/torch_cosmoflow.py" "$deck" \
  "$data" --steps "$steps" --threads "$threads" --lr "$lr" --warmup "$warmup" >"$tmp/theirs.json"
theirs_s=$(($(date +%s) - start))
read -r theirs theirs_mae < <(/usr/bin/python3 -c "
import json; s = json.load(open('$tmp/theirs.json'))
print(round(s['samples_per_s'], 1), round(s['test_mae'], 4))")
printf '%-34s %12s %14s %10s %8s\n' "cosmoflow_32, $steps steps of 32" "samples/s" "test MAE" "wall s" "speed"
printf '%-34s %12s %14s %10s %8s\n' "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') eager" \
  "$theirs" "$theirs_mae" "$theirs_s" "1.00x"
printf '%-34s %12s %14s %10s %7.2fx\n' "hpctrain, $ranks rank(s)" "$ours" "$ours_mae" "$ours_s" \
  "$(/usr/bin/python3 -c "print($ours / $theirs)")"
echo "($threads core(s) each, float32; MAE of the test split, a constant 0 scores 0.5; $(date -u +%Y-%m-%dT%H:%MZ))"
