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

# The start of the scripts called as SCRIPT MPIRUN TRAINER SOURCE_DIR: sets $mpirun, $trainer and
# $src, changes to $src, and makes the scratch directory $tmp, removed when the script exits.
e2e_start() {
  mpirun=$1 trainer=$2 src=$3
  cd "$src" || exit 1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}
