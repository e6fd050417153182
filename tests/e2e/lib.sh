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

# Standard input without the lines Open MPI's runtime sometimes prints as ranks exit: libevent's
# "[warn] Epoll MOD(1) on fd N failed ... Bad file descriptor", a race in mpirun's event loop
# (open-mpi/ompi#2004; once in trainer_cli, 2026-12-06). Checks that count the program's stderr
# lines count them without it.
without_runtime_noise() { grep -v '^\[warn\] Epoll ' || true; }

# The start of the scripts called as SCRIPT MPIRUN TRAINER SOURCE_DIR: sets $mpirun, $trainer and
# $src, changes to $src, and makes the scratch directory $tmp, removed when the script exits.
e2e_start() {
  mpirun=$1 trainer=$2 src=$3
  cd "$src" || exit 1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# The start of the scripts on tools/netns_hosts.sh's two hosts (after e2e's own start), given the
# source folder and optionally a command to run at exit before the hosts go: skips (exit 77)
# without root, iproute2 or util-linux; brings the hosts up (NETNS_NET, NETNS_MPI, NETNS_TMP...).
netns_start() {
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
  command -v ip >/dev/null && command -v unshare >/dev/null || { echo "SKIP: iproute2/util-linux missing"; exit 77; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  source "$1/tools/netns_hosts.sh"
  trap "${2:+$2; }netns_hosts_down" EXIT
  netns_hosts_up || { echo "FAIL cannot create the two hosts"; exit 1; }
}
