#!/usr/bin/env bash
# watchdog.sh MPIRUN PROBE: the collective watchdog ends a hung job with exit
# code 3, within the timeout plus a few seconds, with one report naming the
# collective and its number and the rank that did not arrive; and it stays
# silent for healthy collectives.
set -u
mpirun=$1
probe=$2
fail=0

run_case() {  # np timeout skip_rank skip_at [communicator tensor_parallel]
  local np=$1 timeout=$2 rank=$3 at=$4 name=${5:-world} tp=${6:-1}
  local start end out rc
  start=$(date +%s.%N)
  out=$("$mpirun" -np "$np" --oversubscribe --bind-to none "$probe" --timeout "$timeout" --skip-rank "$rank" \
        --skip-at "$at" --tensor-parallel "$tp" 2>&1)
  rc=$?
  end=$(date +%s.%N)
  local took
  took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  echo "--- np=$np timeout=${timeout}s rank $rank skips allreduce #$at: exit $rc after ${took}s"
  echo "$out" | grep -v '^$' | head -n 12
  [ "$rc" -eq 3 ] || { echo "FAIL: exit code $rc, expected 3"; fail=1; }
  local reports
  reports=$(grep -c "collective timeout:" <<<"$out")
  [ "$reports" -eq 1 ] || { echo "FAIL: $reports timeout reports, expected exactly 1"; fail=1; }
  grep -qF "allreduce #$at (collective #$at) on communicator '$name'" <<<"$out" ||
    { echo "FAIL: the report does not name allreduce #$at on '$name'"; fail=1; }
  grep -qF "ranks that did not arrive: rank $rank (" <<<"$out" ||
    { echo "FAIL: the report does not name rank $rank as missing"; fail=1; }
  if awk -v t="$took" -v lim="$timeout" 'BEGIN { exit !(t > lim + 12) }'; then
    echo "FAIL: took ${took}s, more than the timeout plus 12 s"
    fail=1
  fi
}

run_case 4 3 1 5
run_case 2 2 1 2
run_case 3 2 2 1
# A tensor-parallel group of 2 of 4 ranks (mesh tp x dp = 2 x 2): rank 3 hangs in the second
# group, which the report names as the trainer names it.
run_case 4 2 3 2 "tp[dp=1]" 2

echo "--- healthy collectives with a 2 s timeout"
out=$("$mpirun" -np 3 --oversubscribe --bind-to none "$probe" --timeout 2 --count 300 2>&1)
rc=$?
echo "$out" | tail -n 3
[ "$rc" -eq 0 ] || { echo "FAIL: healthy run exited $rc"; fail=1; }
grep -q "all collectives completed" <<<"$out" || { echo "FAIL: healthy run did not complete"; fail=1; }

[ "$fail" -eq 0 ] && echo "PASS" || echo "FAILED"
exit "$fail"
