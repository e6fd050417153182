#!/usr/bin/env bash
# expect_failure.sh PATTERN -- COMMAND...: passes when COMMAND exits non-zero
# and its output contains PATTERN (a fixed string).
set -u
pattern=$1
shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out" | tail -n 20
if [ "$rc" -eq 0 ]; then
  echo "FAIL: expected a non-zero exit code, got 0"
  exit 1
fi
if ! grep -qF -- "$pattern" <<<"$out"; then
  echo "FAIL: output does not contain '$pattern'"
  exit 1
fi
echo "PASS: exit code $rc and '$pattern' in the output"
