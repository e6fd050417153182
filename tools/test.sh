#!/usr/bin/env bash
# tools/test.sh: the same set-up as quickstart.sh (packages, build with
# warnings as errors), then the whole test suite: serial unit tests, MPI
# tests at 1-3 ranks (with the watchdog and error probes) and the fast tier built with AddressSanitizer + UBSan
# in a folder outside the source tree (HPCTRAIN_ASAN_DIR; default under $TMPDIR), then every CTest test of the
# normal build (unit, MPI at 1-4 ranks, GPU tests that skip without a GPU,
# end-to-end). Prints each test's time; exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
export HPCTRAIN_WERROR=ON
# CUDA code for one architecture (sm_90: H100, H200) unless told otherwise: the build checks that
# it compiles, and each further architecture costs about 37 CPU-s here (2026-12-05). Builds for
# GPUs (tools/gpu-check.sh, docs/building.md) keep the default list.
export HPCTRAIN_CMAKE_ARGS="${HPCTRAIN_CMAKE_ARGS:--DHPCTRAIN_CUDA_ARCHITECTURES=90-real}"
source "$root/tools/setup.sh"
cd "$root"

echo
# The tests' scratch files go to a folder of their own, which must be empty again at the end (Open
# MPI's session folders, ompi.*, excepted): a test that leaves files behind fails the suite. (On
# 2026-12-06 doc_commands left 19 copies of the docs per run, 1-rank pipeline tests their
# datasets, and unit tests files of fixed names.)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hpctrain-tests-XXXXXX")
chmod 1777 "$scratch"  # (as /tmp: install.sh builds as another user)
trap 'rm -rf "$scratch"' EXIT

# Outside the source tree (as cluster users build: `cmake -B /scratch/b`), so the tests it runs
# prove they use their own build's binaries; only what those tests need is built.
asan=${HPCTRAIN_ASAN_DIR:-${TMPDIR:-/tmp}/hpctrain-asan-$(printf '%s' "$root" | md5sum | cut -c1-8)}
echo "== sanitizer build (ASan + UBSan, CPU only) in $asan: unit, MPI and fast tests, the fuzz replay"
# The library as a unity build (16 sources per compile; the test programs stay file by file):
# 405 CPU-s against 552 for this build, 209 s against 277 on 2 cores (2026-12-05). build/ below
# compiles every source alone, as developers' builds do.
cmake -S . -B "$asan" -G Ninja -DHPCTRAIN_SANITIZE=ON -DHPCTRAIN_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug \
      -DHPCTRAIN_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build "$asan" -j "$(nproc)" --target unit_tests mpi_tests watchdog_probe error_probe trainer chat_render fuzz
# At 1-3 ranks: the 4- and 8-rank runs (mpi_np4, pipeline_np8) would put two sanitized ranks on
# each core for 50 s and take no code path that 3 ranks do not (uneven shards need 3); they run
# in the normal build below.
(cd "$asan" && TMPDIR=$scratch ctest --output-on-failure -j "$(nproc)" -L "unit|mpi|fast|fuzz" -E '^(mpi_np4|pipeline_np8)$')

echo
echo "== full suite (build/)"
# Side by side on every core: the MPI test binaries' PROCESSORS (their rank count) keep them alone,
# RUN_SERIAL keeps the Slurm cluster alone; the end-to-end scripts, which
# spend much of their time starting processes and Python, run two at a time (2026-12-02: the
# suite 694 s against 844 s one at a time, on 2 cores).
# (the fuzz harnesses' replay ran above, under the sanitizers: not again here)
(cd build && TMPDIR=$scratch ctest --output-on-failure -j "$(nproc)" -LE fuzz)
echo
left=$(find "$scratch" -mindepth 1 -maxdepth 1 ! -name 'ompi.*' -printf '%f ')
if [ -n "$left" ]; then
  echo "tools/test.sh: FAILED: the tests left behind in \$TMPDIR ($scratch): $left"
  exit 1
fi
echo "tools/test.sh: all tests passed in $(( $(date +%s) - start )) s"
