#!/usr/bin/env bash
# gpu_check.sh SOURCE_DIR BUILD_DIR: tools/gpu-check.sh on a machine without a GPU. --probe
# prints its table and fails (no GPU); --test fails because the GPU tests skip; --train with
# HPCTRAIN_GPU_CHECK_DEVICE=cpu (on the already built trainer) trains both MNIST examples, and
# the checkpoint of the MLP run, evaluated again with device = cpu, gives the run's own test
# accuracy; an unknown option exits 2.
set -u
src=$1 build=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/carry"  # nothing carried: the system's libraries
export HPCTRAIN_GPU_CARRY=$tmp/carry HPCTRAIN_GPU_BUILD_DIR=$build HPCTRAIN_GPU_EPOCHS=1

out=$(OUT=$tmp/probe tools/gpu-check.sh --probe 2>&1)
rc=$?
echo "$out"
if nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP probe-fails check: a GPU is visible"
else
  check "--probe fails without a GPU" test $rc -ne 0
fi
check "--probe names nvcc, cuDNN and NCCL" grep -q "cuDNN root" <<<"$out"
check "--probe ends with a verdict" grep -q "^gpu-check: \(PASS\|FAIL\)" <<<"$out"

if ! nvidia-smi -L >/dev/null 2>&1; then
  out=$(OUT=$tmp/test tools/gpu-check.sh --test 2>&1)
  check "--test fails when the GPU tests skip" test $? -ne 0
  check "--test says why" grep -q "GPU tests skipped" <<<"$out"
fi

out=$(OUT=$tmp/train HPCTRAIN_GPU_CHECK_DEVICE=cpu tools/gpu-check.sh --train 2>&1)
rc=$?
echo "$out"
check "--train (device cpu) passes" test $rc -eq 0
mlp=$(awk '$1 == "mlp" {print $4}' <<<"$out" | tr -d '%')
check "--train reports the MLP's accuracy" test -n "$mlp"
check "--train reports the CNN" grep -q "^cnn " <<<"$out"
evald=$(grep -o "evaluated on the CPU: accuracy [0-9.]*" <<<"$out" | awk '{print $NF}')
check "the checkpoint evaluated again gives the run's test accuracy ($evald vs $mlp)" test "$evald" = "$mlp"

tools/gpu-check.sh --nonsense >/dev/null 2>&1
check "an unknown option exits 2" test $? -eq 2
finish
