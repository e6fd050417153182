#!/usr/bin/env bash
# watchdog.sh MPIRUN PROBE: the collective watchdog ends a hung job with exit
# code 3, within the timeout plus a few seconds, with one report naming the
# collective and its number and the rank that did not arrive; it stays silent
# for healthy collectives and ranks busy outside collectives or finished early;
# and a rank stopped whole (heartbeats lost) ends the job too.
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

echo "--- healthy collectives with a 1 s timeout, then 4 s outside collectives, then rank 0 alone 4 s more"
out=$("$mpirun" -np 3 --oversubscribe --bind-to none "$probe" --timeout 1 --count 300 --idle 4 2>&1)
rc=$?
echo "$out" | tail -n 3
[ "$rc" -eq 0 ] || { echo "FAIL: healthy run exited $rc"; fail=1; }
grep -q "all collectives completed" <<<"$out" || { echo "FAIL: healthy run did not complete"; fail=1; }

# A rank stopped whole (SIGSTOP: its watchdog too, as a host that is gone) while the others are in
# no collective: only the heartbeats can tell. Its neighbours (ranks 0 and 2) notice within the
# timeout plus twice the grace (1 + 2 x 1 s); both report on stderr, the host's report file gets one line.
echo "--- rank 1 stopped (SIGSTOP) while the others wait outside collectives, 1 s timeout"
report=$(mktemp -u)
start=$(date +%s.%N)
out=$(timeout 60 "$mpirun" -np 3 --oversubscribe --bind-to none "$probe" --timeout 1 --idle 20 --stop-rank 1 \
  --report "$report" 2>&1)
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "exit $rc after ${took}s"
grep "lost contact" <<<"$out" | head -n 2
[ "$rc" -eq 3 ] || { echo "FAIL: exit code $rc, expected 3"; fail=1; }
grep -q "lost contact: no heartbeat from rank 1's watchdog for .* this rank is in no collective" <<<"$out" ||
  { echo "FAIL: no report of rank 1's lost heartbeat"; fail=1; }
grep -q "collective timeout" <<<"$out" && { echo "FAIL: a collective timeout was reported"; fail=1; }
awk -v t="$took" 'BEGIN { exit !(t > 15) }' && { echo "FAIL: took ${took}s, more than 15 s"; fail=1; }
lines=$(grep -c "lost contact: no heartbeat from rank 1's watchdog" "$report" 2>/dev/null)
[ "$lines" = 1 ] && [ "$(wc -l <"$report")" = 1 ] || { echo "FAIL: the report file has ${lines:-no} such line(s), expected 1"; fail=1; }
rm -f "$report"

[ "$fail" -eq 0 ] && echo "PASS" || echo "FAILED"
exit "$fail"
