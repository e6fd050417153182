#!/usr/bin/env bash
# errors.sh MPIRUN PROBE: an error on one rank is printed once with its rank
# and ends the whole job (no rank left waiting) with its exit code; an error
# every rank finds alike is one line from rank 0 and exit code 2, no abort.
set -u
mpirun=$1
probe=$2
fail=0

start=$(date +%s)
out=$(timeout 60 "$mpirun" -np 4 --oversubscribe --bind-to none "$probe" one-rank 2 2>&1)
rc=$?
echo "--- one rank fails (exit $rc after $(( $(date +%s) - start )) s)"
echo "$out" | head -n 6
[ $rc -eq 1 ] || { echo "FAIL: exit code $rc, expected 1"; fail=1; }
[ "$(grep -c '^hpctrain: error' <<<"$out")" -eq 1 ] || { echo "FAIL: expected exactly one error line"; fail=1; }
grep -qE '^hpctrain: error \[rank 2 on [^]]+\] .*error_probe.cpp:[0-9]+: MPI_Bcast\(&buf, -5, MPI_INT, 0, MPI_COMM_WORLD\) failed: MPI error' <<<"$out" ||
  { echo "FAIL: the message does not name rank 2, the call and its location"; fail=1; }

out=$("$mpirun" -q -np 3 --oversubscribe --bind-to none "$probe" every-rank 2>&1)
rc=$?
echo "--- every rank fails alike (exit $rc)"
echo "$out"
[ $rc -eq 2 ] || { echo "FAIL: exit code $rc, expected 2"; fail=1; }
[ "$(grep -c . <<<"$out")" -eq 1 ] || { echo "FAIL: expected one line of output"; fail=1; }
grep -q MPI_ABORT <<<"$out" && { echo "FAIL: MPI_Abort banner for an every-rank error"; fail=1; }

[ $fail -eq 0 ] && echo PASS || echo FAILED
exit $fail
