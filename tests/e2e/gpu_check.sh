#!/usr/bin/env bash
# gpu_check.sh SOURCE_DIR BUILD_DIR: tools/gpu-check.sh on a machine without a GPU.
# - The whole check with HPCTRAIN_GPU_CHECK_DEVICE=cpu on "carried" binaries (links to this build):
#   the probe passes mpirun -np 1 and -np 2, the build stage accepts the binaries, the test stage
#   fails because the GPU tests skip and says so, train and gpt run (the MLP checkpoint evaluated
#   again gives the run's accuracy; text sampled from the GPT checkpoint), and the results folder
#   holds at most 8 files (the log and one archive per stage), no checkpoint, names the device tool
#   brings back. --probe alone fails without a GPU. A GPU test program that crashes in a test
#   fails --test, which names that test.
# - A stage over its budget is ended with the processes it started and the earlier stages'
#   archives stay; a command over its limit likewise; a kill of the whole script keeps the finished
#   stages' archives; run_timed ends a process that left the command's process group.
# - The carried prefix: pruned without a dangling libz.so and without dropping the MPI library;
#   with the system's PMIx and Open MPI folders hidden (unshare -m, empty tmpfs over them), a
#   prefix made of this machine's own packages runs mpirun alone (which OPAL_PREFIX alone does not).
# - A missing cmake fails --probe when nothing is carried; an unknown option or stage exits 2.
set -u
src=$1 build=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/carry/bin" "$tmp/empty"
for b in trainer hpctrain-data allreduce-bench tests/gpu_tests; do ln -s "$build/$b" "$tmp/carry/bin/"; done
export HPCTRAIN_GPU_CARRY=$tmp/carry HPCTRAIN_GPU_BUILD_DIR=$tmp/work HPCTRAIN_GPU_PREFIX=$tmp/no-prefix
gpu=0
nvidia-smi -L >/dev/null 2>&1 && gpu=1

out=$(OUT=$tmp/all HPCTRAIN_GPU_CHECK_DEVICE=cpu tools/gpu-check.sh --stages probe,build,test,train,gpt 2>&1)
rc=$?
echo "$out"
check "the dry run fails (the GPU tests skip)" test $rc -ne 0
check "... the probe ran mpirun -np 1 and -np 2" grep -q "^mpirun -np 2 *ok" <<<"$out"
check "... the build stage took the carried binaries" grep -q "^-- build: PASS" <<<"$out"
[ $gpu -eq 0 ] && check "... --test says the GPU tests skipped" grep -q "GPU tests skipped" <<<"$out"
mlp=$(awk '$1 == "mlp" {print $4}' <<<"$out" | tr -d '%')
evald=$(grep -o "evaluated on the CPU: accuracy [0-9.]*" <<<"$out" | awk '{print $NF}')
check "... the MLP checkpoint evaluated again gives the run's accuracy ($evald vs $mlp)" test -n "$mlp" -a "$evald" = "$mlp"
check "... the CNN trained" grep -q "^cnn " <<<"$out"
check "... --gpt reports tokens/s" grep -qE "^shakespeare_gpt +cpu +[0-9]+" <<<"$out"
check "... and samples text from the run's checkpoint" grep -q "^generate: " <<<"$out"
files=$(find "$tmp/all" -type f | sort)
check "the results folder holds at most 8 files ($(wc -l <<<"$files"))" test "$(wc -l <<<"$files")" -le 8
check "... the log and an archive per stage" test "$(cd "$tmp/all" && ls | tr '\n' ' ')" = \
  "build.tar.gz gpt.tar.gz gpu-check.log probe.tar.gz test.tar.gz train.tar.gz "
check "... named as the device tool brings them back" test -z "$(find "$tmp/all" | sed "s|^$tmp/all||" | grep '[^A-Za-z0-9._/-]')"
check "... the log is the whole output" grep -q "^gpu-check: FAIL in" "$tmp/all/gpu-check.log"
check "... the test archive holds the GPU tests' log" grep -q "gpu_tests.log" <<<"$(tar -tzf "$tmp/all/test.tar.gz")"
check "... no checkpoint among the results" test -z "$(for f in "$tmp"/all/*.tar.gz; do tar -tzf "$f"; done | grep '\.h5$')"
check "... the checkpoints stayed in the build folder" test -n "$(find "$tmp/work/check-checkpoints/train_mlp" -name 'ckpt-*.h5')"

# A GPU test program that dies inside a test (the H200's first run, 2026-12-04: a segmentation
# fault ended every later test) fails the stage, which names the test.
mkdir -p "$tmp/crash"
ln -s "$build/trainer" "$tmp/crash/trainer"
printf '#!/bin/sh\necho "[==========] Running 2 tests from 1 test suite."\necho "[ RUN      ] Fake.Passes"\necho "[       OK ] Fake.Passes (0 ms)"\necho "[ RUN      ] Fake.Crashes"\necho "Signal: Segmentation fault (11)"\nkill -SEGV $$\n' >"$tmp/crash/gpu_tests"
chmod +x "$tmp/crash/gpu_tests"
out=$(OUT=$tmp/crashed HPCTRAIN_GPU_BIN=$tmp/crash HPCTRAIN_GPU_CHECK_DEVICE=cpu tools/gpu-check.sh --test 2>&1)
check "a GPU test program that crashes fails --test" test $? -ne 0
check "... naming the test it died in" grep -q "gpu_tests died in Fake.Crashes: Signal: Segmentation fault" <<<"$out"

out=$(OUT=$tmp/probe tools/gpu-check.sh --probe 2>&1)
rc=$?
[ $gpu -eq 0 ] && check "--probe fails without a GPU" test $rc -ne 0
check "--probe names cuDNN and NCCL" grep -q "cuDNN root" <<<"$out"

# Budgets: a stage over its budget is ended; the earlier stages' archives stay.
t0=$(date +%s)
out=$(OUT=$tmp/t1 HPCTRAIN_GPU_CHECK_DEVICE=cpu HPCTRAIN_GPU_BUDGETS=gpt=2 tools/gpu-check.sh --stages build,gpt 2>&1)
rc=$?
check "a stage over its budget is ended ($(( $(date +%s) - t0 )) s)" test $rc -ne 0 -a $(( $(date +%s) - t0 )) -lt 15
check "... the summary says TIMEOUT" grep -q "^gpt *TIMEOUT" <<<"$out"
check "... the earlier stage's archive stays" tar -tzf "$tmp/t1/build.tar.gz"
# (Polled for up to 5 s: under load the killed ranks take a moment to be reaped; one that
# survives fails it.)
gone() { for _ in $(seq 50); do pgrep "$@" >/dev/null || return 0; sleep 0.1; done; return 1; }
check "... no rank of the ended stage is left" gone -f "$tmp/work/check-logs/gpt"
out=$(OUT=$tmp/t2 HPCTRAIN_GPU_CHECK_DEVICE=cpu HPCTRAIN_GPU_CMD_TIMEOUT=1 tools/gpu-check.sh --train 2>&1)
check "a command over HPCTRAIN_GPU_CMD_TIMEOUT fails the stage" test $? -ne 0
check "... and says it timed out" grep -q "timed out after 1 s" <<<"$out"
# A kill of the whole script (the device tool's limit) keeps the stages that finished.
OUT=$tmp/t3 HPCTRAIN_GPU_CHECK_DEVICE=cpu setsid tools/gpu-check.sh --stages build,train >/dev/null 2>&1 &
sid=$!  # (not a group leader here, so setsid execs the check: its pid is the session's id)
for ((i = 0; i < 300; i++)); do [ -f "$tmp/t3/build.tar.gz" ] && break; sleep 0.1; done
sleep 0.5
pkill -KILL -s "$sid"
wait "$sid"
check "a killed check keeps the finished stage's archive" tar -tzf "$tmp/t3/build.tar.gz"
check "... and the log so far" grep -q "^-- build: PASS" "$tmp/t3/gpu-check.log"
check "... and no partial archive of the next" test -z "$(ls "$tmp/t3" | grep train)"

# run_timed ends what the command started, even a process that left its process group.
(
  set +u
  source tools/gpu/env.sh
  exec 3>/dev/null
  cmd_timeout=1
  run_timed bash -c "setsid sleep 97 & sleep 98"
)
check "run_timed ends a process that left the command's group" gone -x -f 'sleep 97'

# A carried prefix: the .debs hold zlib1g-dev's absolute libz.so link, libz.so.1 and the MPI library.
lib=/usr/lib/x86_64-linux-gnu
sysz=$(ldconfig -p | awk '$1 == "libz.so.1" && /x86-64/ {print $NF; exit}')
sysmpi=$(ldconfig -p | awk '$1 == "libmpi.so.40" && /x86-64/ {print $NF; exit}')
pkg=$tmp/pkg
mkdir -p "$pkg/DEBIAN" "$pkg$lib" "$pkg/usr/include" "$tmp/bare/debs"
printf 'Package: hpct-fake\nVersion: 1\nArchitecture: amd64\nMaintainer: test <t@t>\nDescription: test\n' >"$pkg/DEBIAN/control"
ln -s /lib/x86_64-linux-gnu/libz.so.1 "$pkg$lib/libz.so"
cp -L "$sysz" "$pkg$lib/libz.so.1"
cp -L "$sysmpi" "$pkg$lib/libmpi.so.40"
dpkg-deb --build "$pkg" "$tmp/bare/debs/fake.deb" >/dev/null
out=$(OUT=$tmp/bare-probe HPCTRAIN_GPU_CARRY=$tmp/bare HPCTRAIN_GPU_PREFIX=$tmp/prefix tools/gpu-check.sh --probe 2>&1)
check "the system's libz.so.1 pruned from the prefix" test ! -e "$tmp/prefix$lib/libz.so.1"
check "libz.so resolves after pruning ($(readlink "$tmp/prefix$lib/libz.so"))" test -e "$tmp/prefix$lib/libz.so"
check "the carried MPI library is never pruned" test -e "$tmp/prefix$lib/libmpi.so.40"
check "--probe finds no dangling link" grep -q "^missing libs *none" <<<"$out"

# The carried mpirun alone: a prefix of this machine's Open MPI and PMIx packages, their system
# folders hidden. OPAL_PREFIX alone leaves PMIx looking in the hidden folder; the probe's set-up runs.
hide="/usr/lib/x86_64-linux-gnu/pmix2 /etc/openmpi /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi"
if unshare -m true 2>/dev/null; then
  pfx=$tmp/mpi-prefix
  mkdir -p "$pfx"
  for p in openmpi-bin openmpi-common libopenmpi3 libpmix2; do
    dpkg -L "$p" | while read -r f; do { [ -f "$f" ] || [ -L "$f" ]; } && cp -a --parents "$f" "$pfx"; done
  done
  touch "$pfx/.unpacked"
  hidden() { unshare -m bash -c "for d in $hide; do mount -t tmpfs none \$d; done; $1" 2>&1; }
  out=$(hidden "OPAL_PREFIX=$pfx/usr LD_LIBRARY_PATH=$pfx$lib:$pfx$lib/openmpi/lib timeout 30 $pfx/usr/bin/mpirun.openmpi -np 1 true")
  check "hidden system folders: OPAL_PREFIX alone is not enough (negative control)" grep -q "couldn't open the help file" <<<"$out"
  out=$(hidden "OUT=$tmp/hidden HPCTRAIN_GPU_PREFIX=$pfx HPCTRAIN_GPU_CHECK_DEVICE=cpu tools/gpu-check.sh --probe")
  echo "$out" | grep "^mpirun"
  check "hidden system folders: the carried prefix runs mpirun -np 1" grep -q "^mpirun -np 1 *ok" <<<"$out"
  check "... and -np 2 of allreduce-bench" grep -q "^mpirun -np 2 *ok" <<<"$out"
else
  echo "SKIP the hidden-folders checks: unshare -m is not allowed here"
fi

out=$(OUT=$tmp/probe HPCTRAIN_GPU_CARRY=$tmp/empty HPCTRAIN_GPU_CMAKE=/nonexistent/cmake HPCTRAIN_GPU_NINJA=/nonexistent/ninja \
  tools/gpu-check.sh --probe --train 2>&1)
check "--probe fails without cmake when nothing is carried" grep -q "^cmake .*MISSING" <<<"$out"
check "a failed probe stops the check" grep -q "stopping after the failed probe" <<<"$out"
tools/gpu-check.sh --nonsense >/dev/null 2>&1
check "an unknown option exits 2" test $? -eq 2
tools/gpu-check.sh --stages probe,nonsense >/dev/null 2>&1
check "an unknown stage exits 2" test $? -eq 2
finish
