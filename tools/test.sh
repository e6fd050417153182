#!/usr/bin/env bash
# tools/test.sh: the same set-up as quickstart.sh (packages, build with
# warnings as errors), then the whole test suite: serial unit tests and MPI
# tests (with the watchdog and error probes) built with AddressSanitizer + UBSan, then every CTest test of the
# normal build (unit, MPI at 1-4 ranks, GPU tests that skip without a GPU,
# end-to-end). Prints each test's time; exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
export HPCTRAIN_WERROR=ON
source "$root/tools/setup.sh"
cd "$root"

echo
echo "== sanitizer build (ASan + UBSan, CPU only): unit and MPI tests"
cmake -S . -B build-asan -G Ninja -DHPCTRAIN_SANITIZE=ON -DHPCTRAIN_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug \
      -DHPCTRAIN_WERROR=ON >/dev/null
cmake --build build-asan -j "$(nproc)"
(cd build-asan && ctest --output-on-failure -L "unit|mpi")

echo
echo "== full suite (build/)"
(cd build && ctest --output-on-failure)
echo
echo "tools/test.sh: all tests passed in $(( $(date +%s) - start )) s"
