# tools/bench/bench_args.sh, sourced by a benchmark script with its arguments ("$@"): the project
# root, the trainer of the build to measure (HPCTRAIN_BUILD_DIR: CTest passes its own), --smoke
# (smoke=1) and --dir DIR (dir), mpirun allowed as root, and a new folder $tmp under DIR (default
# /tmp) removed at exit, named after the script.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
trainer=${HPCTRAIN_BUILD_DIR:-$root/build}/trainer
smoke=0 dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --dir) dir=$2; shift ;;
    *) echo "usage: $0 [--smoke] [--dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${dir:-/tmp}/hpctrain-$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$tmp"' EXIT
