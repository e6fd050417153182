#!/usr/bin/env bash
# gpu_check.sh SOURCE_DIR BUILD_DIR: tools/gpu-check.sh on a machine without a GPU. --probe
# prints its table and fails (no GPU); --test fails because the GPU tests skip; --train with
# HPCTRAIN_GPU_CHECK_DEVICE=cpu (on the already built trainer) trains both MNIST examples (and
# --gpt the CPU GPT deck for 20 steps, then samples from its checkpoint), and
# the checkpoint of the MLP run, evaluated again with device = cpu, gives the run's own test
# accuracy, and no checkpoint lands in the results folder; a carried prefix (a .deb made here
# holding Debian's absolute libz.so link, libz.so.1 and libmpi.so.40, which this machine also has)
# is pruned without a dangling libz.so and without dropping the MPI library; a missing cmake
# fails --probe, a missing ninja selects Unix Makefiles; the per-command and per-stage timeouts
# end a stage that runs too long; an unknown option exits 2.
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

check "--train leaves no checkpoint among the results" test -z "$(find "$tmp/train" -name '*.h5')"
check "--train's results are only logs (< 5 MB)" test "$(du -sk "$tmp/train" | cut -f1)" -lt 5000
check "the checkpoints went to the build folder" test -n "$(find "$build/check-checkpoints/train_mlp" -name 'ckpt-*.h5')"

out=$(OUT=$tmp/gpt HPCTRAIN_GPU_CHECK_DEVICE=cpu tools/gpu-check.sh --gpt 2>&1)
rc=$?
echo "$out"
check "--gpt (device cpu: the CPU deck on the docs' text) passes" test $rc -eq 0
check "--gpt reports tokens/s" grep -qE "^shakespeare_gpt +cpu +[0-9]+" <<<"$out"
check "--gpt samples text from the run's checkpoint" grep -q "^generate: " <<<"$out"
# A bare prefix: the carried .debs hold zlib1g-dev's absolute libz.so link, libz.so.1 and the MPI library.
lib=/usr/lib/x86_64-linux-gnu
sysz=$(ldconfig -p | awk '$1 == "libz.so.1" && /x86-64/ {print $NF; exit}')
sysmpi=$(ldconfig -p | awk '$1 == "libmpi.so.40" && /x86-64/ {print $NF; exit}')
pkg=$tmp/pkg
mkdir -p "$pkg/DEBIAN" "$pkg$lib" "$pkg/usr/include" "$tmp/bare/debs"
printf 'Package: hpct-fake\nVersion: 1\nArchitecture: amd64\nMaintainer: test <t@t>\nDescription: test\n' >"$pkg/DEBIAN/control"
ln -s /lib/x86_64-linux-gnu/libz.so.1 "$pkg$lib/libz.so"
cp -L "$sysz" "$pkg$lib/libz.so.1"
cp -L "$sysmpi" "$pkg$lib/libmpi.so.40"
echo "/* zlib.h stand-in */" >"$pkg/usr/include/zlib.h"
dpkg-deb --build "$pkg" "$tmp/bare/debs/fake.deb" >/dev/null
out=$(OUT=$tmp/bare-probe HPCTRAIN_GPU_CARRY=$tmp/bare HPCTRAIN_GPU_PREFIX=$tmp/prefix tools/gpu-check.sh --probe 2>&1)
echo "$out" | grep -E "missing libs|cmake"
check "the system's libz.so.1 pruned from the prefix" test ! -e "$tmp/prefix$lib/libz.so.1"
check "libz.so resolves after pruning ($(readlink "$tmp/prefix$lib/libz.so"))" test -e "$tmp/prefix$lib/libz.so"
check "the carried MPI library is never pruned" test -e "$tmp/prefix$lib/libmpi.so.40"
check "--probe finds no dangling link" grep -q "^missing libs *none" <<<"$out"

# cmake and ninja: a missing cmake fails --probe; without ninja the build uses Unix Makefiles.
out=$(OUT=$tmp/probe HPCTRAIN_GPU_CMAKE=/nonexistent/cmake HPCTRAIN_GPU_NINJA=/nonexistent/ninja tools/gpu-check.sh --probe 2>&1)
check "--probe fails without cmake" test $? -ne 0
check "--probe names the missing cmake" grep -q "^cmake .*MISSING" <<<"$out"
check "without ninja the generator is Unix Makefiles" grep -q "^generator *Unix Makefiles" <<<"$out"
check "--probe prints /dev/shm" grep -q "^/dev/shm " <<<"$out"
check "a failed probe stops the check" grep -q "stopping after the failed probe" \
  <<<"$(OUT=$tmp/probe HPCTRAIN_GPU_CMAKE=/nonexistent/cmake tools/gpu-check.sh --probe --train 2>&1)"

# Timeouts: one command, then one stage, that run too long.
out=$(OUT=$tmp/t1 HPCTRAIN_GPU_CHECK_DEVICE=cpu HPCTRAIN_GPU_CMD_TIMEOUT=1 tools/gpu-check.sh --train 2>&1)
check "a command over HPCTRAIN_GPU_CMD_TIMEOUT fails the stage" test $? -ne 0
check "... and says it timed out" grep -q "timed out after 1 s" <<<"$out"
t0=$(date +%s)
out=$(OUT=$tmp/t2 HPCTRAIN_GPU_CHECK_DEVICE=cpu HPCTRAIN_GPU_STAGE_TIMEOUT=2 tools/gpu-check.sh --train 2>&1)
rc=$?
check "a stage over HPCTRAIN_GPU_STAGE_TIMEOUT is ended ($(( $(date +%s) - t0 )) s)" test $rc -ne 0 -a $(( $(date +%s) - t0 )) -lt 10
check "... and the summary says TIMEOUT" grep -q "^train *TIMEOUT" <<<"$out"

tools/gpu-check.sh --nonsense >/dev/null 2>&1
check "an unknown option exits 2" test $? -eq 2
finish
