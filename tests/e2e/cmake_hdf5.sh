#!/usr/bin/env bash
# cmake_hdf5.sh SOURCE_DIR: configure picks parallel HDF5 when the serial and
# parallel flavours are both installed (tools/setup.sh installs both), and
# fails with a clear message when pointed at a serial-only HDF5.
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
serial=/usr/lib/x86_64-linux-gnu/hdf5/serial
[ -d "$serial" ] || { echo "FAIL: serial HDF5 not installed at $serial (tools/setup.sh installs libhdf5-dev)"; exit 1; }

cmake -S "$src" -B "$tmp/both" -DHPCTRAIN_ENABLE_CUDA=OFF -DHPCTRAIN_BUILD_TESTS=OFF >"$tmp/both.log" 2>&1
rc=$?
lib=$(grep '^HDF5_C_LIBRARY_hdf5:' "$tmp/both/CMakeCache.txt" 2>/dev/null)
echo "both installed: exit $rc, $lib"
[ $rc -eq 0 ] || { echo "FAIL: configure failed"; cat "$tmp/both.log"; fail=1; }
grep -q "openmpi" <<<"$lib" || { echo "FAIL: the parallel (openmpi) HDF5 was not chosen"; fail=1; }

cmake -S "$src" -B "$tmp/serial" -DHPCTRAIN_ENABLE_CUDA=OFF -DHPCTRAIN_BUILD_TESTS=OFF -DHDF5_ROOT="$serial" \
  >"$tmp/serial.log" 2>&1
rc=$?
echo "serial only: exit $rc"
grep -A3 "CMake Error" "$tmp/serial.log"
[ $rc -ne 0 ] || { echo "FAIL: configure accepted serial HDF5"; fail=1; }
grep -q "needs PARALLEL HDF5" "$tmp/serial.log" || { echo "FAIL: no clear message about parallel HDF5"; fail=1; }

[ $fail -eq 0 ] && echo PASS || echo FAILED
exit $fail
