# Shared by the end-to-end scripts: `check DESCRIPTION COMMAND...` prints ok/FAIL
# and records a failure in $fail; `finish` prints the verdict and exits with it.
fail=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
finish() {
  [ "$fail" -eq 0 ] && echo PASS || echo FAILED
  exit "$fail"
}
