#!/usr/bin/env bash
# tools/bench/train_vs_torch.sh [--smoke] [--repeats N] [--models mlp]
# Training throughput of hpctrain against the PyTorch DDP reference
# (../shared/bench/torch_ddp_baseline.py), run side by side in one invocation:
# the same model, global batch 256, SGD (momentum 0.9, lr 0.05), full MNIST,
# 20 warm-up + 200 timed steps, samples/s defined as the reference does
# (steady state, slowest rank). Configurations: 1 rank x 1 thread, 2 ranks x 1
# thread, 1 rank x 2 threads; each with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as
# set and unset; PyTorch also with its tuned malloc settings. Reports the
# median of the repeats, the ratios, hpctrain's MLP rate as a fraction of the
# single-core sgemm rate measured in the same run (MLP and CNN: the FLOPs per sample in flops()),
# and other processes' CPU use.
# --smoke: a few steps of hpctrain only (and of PyTorch when it is installed), for CI.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}  # the build to measure (CTest passes its own)
ref=${TORCH_BASELINE:-$root/../shared/bench/torch_ddp_baseline.py}
mnist=${MNIST_DIR:-$root/../shared/data/mnist}
smoke=0 repeats=3 models=mlp
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --repeats) repeats=$2; shift ;;
    --models) models=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_torch=0
[ -f "$ref" ] && /usr/bin/python3 -c "import torch" 2>/dev/null && have_torch=1
if [ $smoke -eq 1 ]; then
  data=$root/inputs/data/mnist-small steps=20 warmup=5 repeats=1
  configs=("2 1")
  envs=(as-set)
else
  [ -d "$mnist" ] || { echo "no MNIST at $mnist (set MNIST_DIR)" >&2; exit 2; }
  [ $have_torch -eq 1 ] || { echo "PyTorch is missing: apt-get install python3-torch" >&2; exit 2; }
  data=$build/bench-data/mnist steps=200 warmup=20
  if [ ! -d "$data/train" ]; then
    "$build/hpctrain-data" import-idx --images "$mnist/train-images-idx3-ubyte.gz" \
      --labels "$mnist/train-labels-idx1-ubyte.gz" --out "$data" --shards 6 >/dev/null
    "$build/hpctrain-data" import-idx --images "$mnist/t10k-images-idx3-ubyte.gz" \
      --labels "$mnist/t10k-labels-idx1-ubyte.gz" --out "$data" --split test >/dev/null
  fi
  configs=("1 1" "2 1" "1 2")
  envs=(as-set unset)
fi

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat; }  # jiffies, all cores
hz=$(getconf CLK_TCK)
# Runs a command; prints "<value of json key> <other processes' cores>".
measure() {  # key command...
  local key=$1
  shift
  local b0 b1 t0 t1 out cpu
  b0=$(busy)
  t0=$(date +%s.%N)
  out=$( { /usr/bin/time -f "CPU %U %S" "$@" 2>&1; } ) || { echo "run failed: $*" >&2; echo "$out" | tail -5 >&2; return 1; }
  t1=$(date +%s.%N)
  b1=$(busy)
  cpu=$(sed -n 's/^CPU \([0-9.]*\) \([0-9.]*\)$/\1 \2/p' <<<"$out" | awk '{print $1+$2}')
  local value
  if [ "$key" = summary ]; then
    value=$(/usr/bin/python3 -c "import json; print(json.load(open('$tmp/ours/summary.json'))['steady_samples_per_s'])")
  else
    value=$(grep '^{' <<<"$out" | tail -1 | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$key'])")
  fi
  awk -v v="$value" -v b0="$b0" -v b1="$b1" -v hz="$hz" -v cpu="$cpu" -v t0="$t0" -v t1="$t1" \
    'BEGIN { other = ((b1 - b0) / hz - cpu) / (t1 - t0); if (other < 0) other = 0; printf "%.1f %.2f\n", v, other }'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# MFLOP per trained sample (forward, weight gradients, input gradients but the first layer's; the
# GEMM/convolution work only): MLP 784-1024-1024-10 3.73 x 3 = 11.2; CNN conv 28x28x1->32 (0.45),
# conv 14x14x32->64 (7.23), dense 3136->128 (0.80), 128->10: forward 8.48, total 2 x 8.48 + 8.03 = 25.0.
flops() { case $1 in mlp) echo 11.2 ;; cnn) echo 25.0 ;; *) echo 0 ;; esac; }

run_env() {  # name -> the env(1) arguments for that BLAS environment
  case $1 in
    as-set) echo "" ;;
    unset) echo "-u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE" ;;
  esac
}

printf "train_vs_torch: %s, global batch 256, %d warm-up + %d timed steps, median of %d, %s\n" \
  "$(basename "$data")" $warmup $steps "$repeats" "$(date -u +%Y-%m-%dT%H:%MZ)"
printf "%-8s %-6s %-10s %12s %12s %12s %9s %9s %10s %8s\n" blas model "ranks x thr" hpctrain torch torch-tuned \
  "vs torch" "vs tuned" "of sgemm" "other"
for e in "${envs[@]}"; do
  # shellcheck disable=SC2046
  sgemm=$(env $(run_env "$e") "$build/sgemm-rate")
  for model in $models; do
    ini=$root/inputs/mnist_$model.ini
    for c in "${configs[@]}"; do
      read -r np thr <<<"$c"
      ours=() torch=() tuned=() other=()
      for ((r = 0; r < repeats; ++r)); do
        # shellcheck disable=SC2046
        read -r v o < <(measure summary env $(run_env "$e") mpirun -q -np "$np" --oversubscribe --bind-to none \
          "$build/trainer" "$ini" --set "data.path=$data" --set "train.steps=$((steps + warmup))" \
          --set "kernels.threads=$thr" --set log.log_every=100000 --set "run.out_dir=$tmp/ours" \
          --set checkpoint.resume=none --set checkpoint.every_epochs=0)
        ours+=("$v") other+=("$o")
        if [ $have_torch -eq 1 ]; then
          # shellcheck disable=SC2046
          read -r v o < <(measure samples_per_s env $(run_env "$e") mpirun -q -np "$np" --oversubscribe --bind-to none \
            /usr/bin/python3 "$ref" --model "$model" --threads "$thr" --global-batch 256 --warmup $warmup \
            --steps $steps --data-dir "$mnist")
          torch+=("$v") other+=("$o")
          if [ $smoke -eq 0 ]; then
            # shellcheck disable=SC2046
            read -r v o < <(measure samples_per_s env $(run_env "$e") MALLOC_MMAP_THRESHOLD_=33554432 \
              MALLOC_TRIM_THRESHOLD_=4294967296 OMP_WAIT_POLICY=PASSIVE mpirun -q -np "$np" --oversubscribe \
              --bind-to none -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ -x OMP_WAIT_POLICY \
              /usr/bin/python3 "$ref" --model "$model" --threads "$thr" --global-batch 256 --warmup $warmup \
              --steps $steps --data-dir "$mnist")
            tuned+=("$v") other+=("$o")
          fi
        fi
      done
      mo=$(printf "%s\n" "${ours[@]}" | median)
      mt=$( [ ${#torch[@]} -gt 0 ] && printf "%s\n" "${torch[@]}" | median || echo 0)
      mu=$( [ ${#tuned[@]} -gt 0 ] && printf "%s\n" "${tuned[@]}" | median || echo 0)
      mx=$(printf "%s\n" "${other[@]}" | sort -n | tail -1)
      awk -v e="$e" -v m="$model" -v c="$np x $thr" -v o="$mo" -v t="$mt" -v u="$mu" -v s="$sgemm" -v x="$mx" \
        -v fl="$(flops "$model")" 'BEGIN {
          rt = t > 0 ? sprintf("%.2fx", o / t) : "-"; ru = u > 0 ? sprintf("%.2fx", o / u) : "-";
          sg = fl > 0 ? sprintf("%.0f%%", 100 * o * fl * 1e6 / (s * 1e9) / (c ~ /^1 x 2/ ? 2 : (c ~ /^2/ ? 2 : 1))) : "-";
          printf "%-8s %-6s %-10s %12.0f %12s %12s %9s %9s %10s %8s\n", e, m, c, o, (t > 0 ? sprintf("%.0f", t) : "-"),
                 (u > 0 ? sprintf("%.0f", u) : "-"), rt, ru, sg, sprintf("%.2f", x) }'
    done
  done
  echo "  ($e: single-core sgemm $sgemm GFLOP/s)"
done
echo "'of sgemm': hpctrain's samples/s x MFLOP per sample (MLP 11.2, CNN 25.0), divided by the single-core sgemm rate times"
echo "the cores used; 'other': the most CPU cores other processes used during any of the runs (noise check)."
