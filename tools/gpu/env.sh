# tools/gpu/env.sh: the GPU check's environment, sourced by tools/gpu-check.sh (and by
# tests/e2e/gpu_check.sh, which tests these functions alone). Needs: root, carry, prefix, python.
#   use_prefix     unpacks the carried .debs into $prefix once and makes that prefix the one used:
#                  Open MPI relocated (OPAL_PREFIX), its external PMIx relocated (PMIX_* folders:
#                  Debian builds it under /usr/lib/x86_64-linux-gnu/pmix2, which OPAL_PREFIX does not
#                  move), Debian's MCA parameter file and default hostfile read from the prefix
#   cuda_env       cuDNN, NCCL, cuBLAS and the CUDA runtime found (toolkit, system, PyTorch's wheels)
#   run_timed      one command under the command limit; on a timeout every process it started ends
#   end_tagged     ends every process whose environment holds VAR=VALUE
# The carried libraries only fill gaps: every one the machine already has (by soname) is removed
# from the prefix again, except Open MPI's own (never_pruned).

# First directory holding include/<header> and a lib*/ with lib<name>.so*, under the usual places and
# the Python packages' nvidia/ folders (PyTorch's wheels).
python_nvidia_dirs() {
  [ -n "$python" ] || return 0
  "$python" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null | while read -r d; do
    for c in "$d"/nvidia/*/ "$d"/nvidia/*/*/; do [ -d "$c" ] && echo "${c%/}"; done
  done
}
find_root() {  # header libname
  local header=$1 lib=$2 c
  local -a cands=(/usr/local/cuda /usr /usr/local)
  mapfile -t -O ${#cands[@]} cands < <(python_nvidia_dirs)
  for c in "${cands[@]}"; do
    [ -f "$c/include/$header" ] || continue
    if compgen -G "$c/lib/lib$lib.so*" >/dev/null || compgen -G "$c/lib64/lib$lib.so*" >/dev/null ||
      compgen -G "$c/lib/x86_64-linux-gnu/lib$lib.so*" >/dev/null; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# Libraries kept from the carry even when the machine has a library of the same soname: the
# carried mpirun must run against its own Open MPI (and that MPI's PMIx, hwloc, libevent, UCX,
# libfabric), never against a foreign installation that ldconfig happens to know.
never_pruned() {
  case $1 in
    libmpi* | libompi* | libopen-pal* | libopen-rte* | liboshmem* | libmca_* | libpmix* | libhwloc* | libevent* | \
      libucp* | libucs* | libuct* | libucm* | libfabric* | libpsm*) return 0 ;;
  esac
  return 1
}

# libz.so for find_package(ZLIB): zlib1g-dev's link is absolute (/lib/.../libz.so.1), so it is set
# again: to the carried libz.so.1 when pruning kept it, else to the machine's own by absolute path.
link_zlib() {  # lib_dir
  local lib=$1 sys
  if [ -e "$lib/libz.so.1" ]; then
    ln -sf libz.so.1 "$lib/libz.so"
  else
    sys=$(ldconfig -p 2>/dev/null | awk '$1 == "libz.so.1" && /x86-64/ {print $NF; exit}')
    [ -n "$sys" ] && ln -sf "$sys" "$lib/libz.so"
  fi
}

unpack_prefix() {
  mkdir -p "$prefix"
  local f member
  for f in "$carry"/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$f" "$prefix" || return 1
    else  # no dpkg: a .deb is an ar archive around data.tar.*
      member=$(ar t "$f" | grep '^data\.tar') || return 1
      ar p "$f" "$member" | tar -x -C "$prefix" $(case $member in *.xz) echo -J ;; *.zst) echo --zstd ;; *.gz) echo -z ;; esac) ||
        return 1
    fi
  done
  if [ "${HPCTRAIN_GPU_PRUNE:-1}" = 1 ]; then
    local have
    have=$(ldconfig -p 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)
    for f in "$prefix"/usr/lib/x86_64-linux-gnu/lib*.so.*; do
      never_pruned "$(basename "$f")" && continue
      grep -qxF "$(basename "$f")" <<<"$have" && rm -f "$f"
    done
  fi
  link_zlib "$prefix/usr/lib/x86_64-linux-gnu"
  touch "$prefix/.unpacked"
}

use_prefix() {  # a prefix unpacked before, or the carried .debs unpacked now; else the system's stack
  if [ ! -f "$prefix/.unpacked" ]; then
    compgen -G "$carry/debs/*.deb" >/dev/null || return 0
    unpack_prefix || return 1
  fi
  local lib=$prefix/usr/lib/x86_64-linux-gnu pmix=$prefix/usr/lib/x86_64-linux-gnu/pmix2
  export OPAL_PREFIX=$prefix/usr
  export PATH=$prefix/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # PMIx's plugins and help files: PMIX_PREFIX alone does not move them (seen with Debian's PMIx 4.2).
  export PMIX_PREFIX=$pmix PMIX_INSTALL_PREFIX=$pmix PMIX_EXEC_PREFIX=$pmix PMIX_LIBDIR=$pmix/lib \
    PMIX_DATADIR=$pmix/share PMIX_PKGDATADIR=$pmix/share/pmix PMIX_PKGLIBDIR=$pmix/lib/pmix
  # Debian's Open MPI reads /etc/openmpi, which OPAL_PREFIX does not move either.
  if [ -f "$prefix/etc/openmpi/openmpi-mca-params.conf" ]; then
    export OMPI_MCA_mca_base_param_files=$prefix/etc/openmpi/openmpi-mca-params.conf
    export OMPI_MCA_orte_default_hostfile=$prefix/etc/openmpi/openmpi-default-hostfile
  fi
}

# The folders holding the CUDA libraries the binaries need (toolkit, system or PyTorch's wheels) on
# LD_LIBRARY_PATH; CUDNN_ROOT and NCCL_ROOT for a build there.
cuda_env() {
  CUDNN_ROOT=${CUDNN_ROOT:-$(find_root cudnn.h cudnn || true)}
  NCCL_ROOT=${NCCL_ROOT:-$(find_root nccl.h nccl || true)}
  export CUDNN_ROOT NCCL_ROOT
  local d so
  local -a dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
  mapfile -t -O 2 dirs < <(python_nvidia_dirs | sed 's|$|/lib|')
  for d in "${dirs[@]}" "$CUDNN_ROOT/lib" "$CUDNN_ROOT/lib64" "$NCCL_ROOT/lib" "$NCCL_ROOT/lib64"; do
    for so in libcudart.so libcublas.so libcudnn.so libnccl.so; do
      if compgen -G "$d/$so*" >/dev/null && [[ ":${LD_LIBRARY_PATH:-}:" != *":$d:"* ]]; then
        export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        break
      fi
    done
  done
}

mpirun_cmd() {
  if [ -x "$prefix/usr/bin/mpirun.openmpi" ] && [ -n "${OPAL_PREFIX:-}" ]; then
    echo "$prefix/usr/bin/mpirun.openmpi"
  else
    command -v mpirun
  fi
}

# cmake and ninja (a build there): the environment's choice, else PATH, else the Python packages of
# those names (the GPU machine's image has them as pip packages).
tool_path() {  # name override
  local name=$1 p=$2
  [ -n "$p" ] && { echo "$p"; return; }
  p=$(command -v "$name") && { echo "$p"; return; }
  [ -n "$python" ] && "$python" -c "import $name, os; print(os.path.join($name.${name^^}_BIN_DIR, '$name'))" 2>/dev/null
}
cmake_version() { "$cmake_bin" --version 2>/dev/null | awk 'NR == 1 {print $3}'; }
cmake_ok() {  # cmake runs and is at least the project's minimum
  local v
  v=$(cmake_version)
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$cmake_min" "$v" | sort -V | head -1)" = "$cmake_min" ]
}
generator() { if [ -n "$ninja_bin" ] && "$ninja_bin" --version >/dev/null 2>&1; then echo Ninja; else echo "Unix Makefiles"; fi; }
gpu_arch() {  # "9.0" -> "90"
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .'
}

# end_tagged VAR VALUE: TERM, then KILL 5 s later, every process whose environment holds VAR=VALUE
# (ranks that mpirun started, wherever their process group; the caller itself is spared).
end_tagged() {
  local sig i pids
  for sig in TERM KILL; do
    for ((i = 0; i < 10; i++)); do
      pids=$(grep -lsxzF "$1=$2" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vxF -e "$$" -e "$BASHPID")
      [ -n "$pids" ] || return 0
      [ $i -eq 0 ] && kill -s "$sig" $pids 2>/dev/null
      sleep 0.5
    done
  done
}

# run_timed CMD...: CMD under the command limit (cmd_timeout, seconds). On a timeout it says so on
# fd 3 (the script's output, past the caller's redirections) and ends every process CMD started:
# `timeout` ends its own process group, end_tagged the ranks that left it.
run_timed() {
  local tag="$$-$BASHPID-$RANDOM" rc
  HPCTRAIN_GPU_CMD_TAG=$tag timeout --kill-after=5 "$cmd_timeout" "$@"
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "gpu-check: timed out after ${cmd_timeout} s: ${*:1:3} ..." >&3
    end_tagged HPCTRAIN_GPU_CMD_TAG "$tag"
  fi
  return $rc
}
