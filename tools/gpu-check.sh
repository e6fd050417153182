#!/usr/bin/env bash
# tools/gpu-check.sh: everything GPU-side, in one script, for a machine with an
# NVIDIA GPU and the CUDA toolkit (nvcc, cuBLAS; cuDNN and NCCL from the toolkit,
# the system or PyTorch's pip wheels). That machine may lack MPI, HDF5, Boost and
# a network: the project carries them.
#
#   Here, with Debian's package registry:   tools/gpu-check.sh --fetch
#     downloads the .deb files of the runtime and development libraries the build
#     needs (Open MPI, parallel HDF5, Boost.Program_options, OpenBLAS, GoogleTest,
#     zlib, nlohmann-json: about 36 MiB), the gzipped MNIST IDX files (11 MiB, when
#     ../shared/data/mnist exists) and tiny Shakespeare (1.1 MB, when
#     ../shared/data/tinyshakespeare exists) into .gpu-carry/ (ignored by git).
#   There:   tools/gpu-check.sh [--probe] [--build] [--test] [--train] [--gpt] [--bench]
#     (no stage named = all six, in that order). Each stage takes under 3 minutes
#     on one H200, all six under 8. The .debs are unpacked with dpkg -x into a
#     prefix (HPCTRAIN_GPU_PREFIX, default /tmp/hpctrain-prefix) and Open MPI is
#     relocated there with OPAL_PREFIX; nothing is installed system-wide.
#
# Stages:
#   --probe  the GPU, driver, nvcc, cuDNN, NCCL, PyTorch, and the carried libraries
#   --build  CMake + Ninja into build-gpu/ for this GPU's architecture, CUDA required
#   --test   the GPU tests (every backend operation against the CPU backend, training
#            steps against the CPU, NCCL against MPI, the caching pool) and the unit
#            tests; a GPU test that skips here fails the stage
#   --train  the MNIST MLP and CNN examples with device = cuda (NCCL, one rank per
#            GPU), the MLP run's GPU telemetry (NVML: every GPU column filled, energy > 0);
#            then the GPU run's checkpoint evaluated on the CPU (same accuracy)
#   --gpt    the GPU GPT deck (inputs/shakespeare_gpt_gpu.ini) for a short run on tiny Shakespeare
#            (else on the project's docs as text): tokens/s against PyTorch eager on the same
#            model (tools/bench/torch_gpt.py), then text sampled from its checkpoint on the CPU
#   --bench  samples/s of hpctrain (eager and with [run] cuda_graphs) and PyTorch eager side
#            by side (same model, batch, precision; ratio = the better hpctrain figure), and
#            a wide MLP's achieved fraction of the dense bf16 rate (measured in the same run
#            with PyTorch)
# Settings (environment): HPCTRAIN_GPU_CARRY (default .gpu-carry), HPCTRAIN_GPU_PREFIX,
# HPCTRAIN_GPU_BUILD_DIR (default build-gpu), HPCTRAIN_GPU_EPOCHS (--train, default 2),
# HPCTRAIN_GPU_ARCH (when nvidia-smi cannot tell, default 90), HPCTRAIN_GPU_WIDE (the --bench
# wide MLP: "width depth features batch samples", default "8192 8 1024 4096 131072"), and
# HPCTRAIN_GPU_CHECK_DEVICE=cpu,
# which runs --train on the CPU: a check of this script itself without a GPU (tests/e2e/gpu_check.sh),
# HPCTRAIN_GPU_CMAKE / HPCTRAIN_GPU_NINJA (the cmake and ninja to use; default: PATH, then the
# Python packages `cmake` / `ninja`; without ninja the build uses Unix Makefiles),
# HPCTRAIN_GPU_CMD_TIMEOUT (seconds any one mpirun/python command may run, default 240) and
# HPCTRAIN_GPU_STAGE_TIMEOUT (seconds per stage, default 300): a hang in NCCL start-up, graph
# capture or a collective ends that command (exit 124, "timed out") instead of the allowance.
# Output: aligned tables on stdout; logs and results under $OUT when set (the
# device tool's result folder), else build-gpu/check/. Only logs and small files go there:
# checkpoints and datasets stay in the build folder.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=${HPCTRAIN_GPU_CARRY:-$root/.gpu-carry}
prefix=${HPCTRAIN_GPU_PREFIX:-/tmp/hpctrain-prefix}
build=${HPCTRAIN_GPU_BUILD_DIR:-$root/build-gpu}
results=${OUT:-$build/check}
mkdir -p "$results"
dev=${HPCTRAIN_GPU_CHECK_DEVICE:-cuda}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One node, one rank per GPU: Open MPI's shared-memory and TCP transports only (no probing of
# InfiniBand/UCX/libfabric plugins whose libraries a bare machine may lack).
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
# /dev/shm is often small in containers (64 MB is a common default) while the node-shared dataset
# window alone needs about 55 MB for full MNIST and 270 MB for the wide bench set: back Open MPI's
# shared-memory segments with files under /tmp instead.
shm_dir=${TMPDIR:-/tmp}
export OMPI_MCA_osc_sm_backing_directory=${OMPI_MCA_osc_sm_backing_directory:-$shm_dir}
export OMPI_MCA_btl_vader_backing_directory=${OMPI_MCA_btl_vader_backing_directory:-$shm_dir}
cmd_timeout=${HPCTRAIN_GPU_CMD_TIMEOUT:-240}
stage_timeout=${HPCTRAIN_GPU_STAGE_TIMEOUT:-300}
# The trainer's own watchdog, lowered from 300 s so a stuck collective ends inside the command's timeout.
watchdog=(--set parallel.watchdog_s=$(( cmd_timeout > 90 ? 60 : (cmd_timeout * 2 + 2) / 3 )))
# run_timed CMD...: the command under the per-command timeout; says so when it ran out.
# (--foreground keeps the command in the stage's process group, which the stage timeout ends whole;
# the message goes to the script's own stderr, fd 3, past the callers' log redirections.)
exec 3>&2
run_timed() {
  timeout --foreground --kill-after=10 "$cmd_timeout" "$@"
  local rc=$?
  [ $rc -eq 124 ] && echo "gpu-check: timed out after ${cmd_timeout} s: ${*:1:3} ..." >&3
  return $rc
}

# The Debian packages carried to the GPU machine: run time and build time of the
# non-CUDA stack (their libc/libstdc++ needs are met by any newer distribution), with the
# libraries HDF5's libcurl needs in case the machine lacks them. After unpacking, every
# library the machine already has (by soname, ldconfig -p) is removed from the prefix, so the
# carried ones only fill gaps and never shadow the system's (HPCTRAIN_GPU_PRUNE=0 keeps all).
debs=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2
  libpsm-infinipath1 libnuma1 libmunge2 libltdl7 libpciaccess0
  libhdf5-openmpi-103-1 libhdf5-openmpi-dev libsz2 libaec0 hdf5-tools libudev1
  libcurl4 libldap-2.5-0 libsasl2-2 libsasl2-modules-db libssh2-1 librtmp1 libpsl5 libnghttp2-14 libbrotli1
  libboost-program-options1.74.0 libboost-program-options1.74-dev libboost1.74-dev libboost-program-options-dev
  libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5
  libgtest-dev googletest zlib1g-dev nlohmann-json3-dev)

stages=()
fetch=0
for a in "$@"; do
  case $a in
    --fetch) fetch=1 ;;
    --probe | --build | --test | --train | --gpt | --bench) stages+=("${a#--}") ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown option $a (--fetch, --probe, --build, --test, --train, --gpt, --bench)" >&2; exit 2 ;;
  esac
done

if [ $fetch -eq 1 ]; then
  mkdir -p "$carry/debs"
  (cd "$carry/debs" && apt-get download "${debs[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed") || {
    echo "gpu-check --fetch: apt-get download failed (is Debian's registry reachable?)" >&2
    exit 1
  }
  mnist=${MNIST_DIR:-$root/../shared/data/mnist}
  if [ -d "$mnist" ]; then
    mkdir -p "$carry/mnist" && cp "$mnist"/*-ubyte.gz "$carry/mnist/"
  fi
  shakespeare=${SHAKESPEARE_DIR:-$root/../shared/data/tinyshakespeare}
  if [ -f "$shakespeare/input.txt" ]; then
    mkdir -p "$carry/tinyshakespeare" && cp "$shakespeare/input.txt" "$carry/tinyshakespeare/"
  fi
  du -sh "$carry" | awk '{print "gpu-check --fetch: " $1 " in .gpu-carry/ (carry it with the project)"}'
  [ ${#stages[@]} -eq 0 ] && exit 0
fi
[ ${#stages[@]} -eq 0 ] && stages=(probe build test train gpt bench)

# ---- environment: CUDA, cuDNN/NCCL roots, the carried prefix -------------------------------------
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
python=$(command -v python3 || true)
# The Python with PyTorch, when the one on PATH lacks it (Debian: python3-torch is /usr/bin/python3's).
if ! "$python" -c "import torch" 2>/dev/null && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  python=/usr/bin/python3
fi

# First directory holding include/<header> and a lib*/ with lib<name>.so*, under the usual places and
# the Python packages' nvidia/ folders (PyTorch's wheels).
find_root() {  # header libname
  local header=$1 lib=$2 c
  local -a cands=(/usr/local/cuda /usr /usr/local)
  if [ -n "$python" ]; then
    while read -r d; do cands+=("$d"/nvidia/*/ "$d"/nvidia/*/*/); done < <("$python" -c \
      'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  fi
  for c in "${cands[@]}"; do
    c=${c%/}
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

use_prefix() {  # unpacks the carried .debs once; exports what makes the prefix the one used
  [ -d "$carry/debs" ] || return 0
  if [ ! -f "$prefix/.unpacked" ]; then
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
      local have f
      have=$(ldconfig -p 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)
      for f in "$prefix"/usr/lib/x86_64-linux-gnu/lib*.so.*; do
        never_pruned "$(basename "$f")" && continue
        grep -qxF "$(basename "$f")" <<<"$have" && rm -f "$f"
      done
    fi
    link_zlib "$prefix/usr/lib/x86_64-linux-gnu"
    touch "$prefix/.unpacked"
  fi
  local lib=$prefix/usr/lib/x86_64-linux-gnu
  export OPAL_PREFIX=$prefix/usr
  export PATH=$prefix/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

cuda_env() {
  CUDNN_ROOT=${CUDNN_ROOT:-$(find_root cudnn.h cudnn || true)}
  NCCL_ROOT=${NCCL_ROOT:-$(find_root nccl.h nccl || true)}
  export CUDNN_ROOT NCCL_ROOT
  local r
  for r in "$CUDNN_ROOT" "$NCCL_ROOT"; do
    [ -n "$r" ] && export LD_LIBRARY_PATH=$r/lib:$r/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
}

mpirun_cmd() {
  if [ -x "$prefix/usr/bin/mpirun.openmpi" ] && [ -n "${OPAL_PREFIX:-}" ]; then
    echo "$prefix/usr/bin/mpirun.openmpi"
  else
    command -v mpirun
  fi
}

# cmake and ninja: the environment's choice, else PATH, else the Python packages of those names
# (the GPU machine's image has them as pip packages).
tool_path() {  # name override
  local name=$1 p=$2
  [ -n "$p" ] && { echo "$p"; return; }
  p=$(command -v "$name") && { echo "$p"; return; }
  [ -n "$python" ] && "$python" -c "import $name, os; print(os.path.join($name.${name^^}_BIN_DIR, '$name'))" 2>/dev/null
}
cmake_bin=$(tool_path cmake "${HPCTRAIN_GPU_CMAKE:-}")
ninja_bin=$(tool_path ninja "${HPCTRAIN_GPU_NINJA:-}")
cmake_min=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\)).*/\1/p' "$root/CMakeLists.txt")
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

use_prefix || { echo "gpu-check: unpacking the carried .debs into $prefix failed" >&2; exit 1; }
cuda_env
status=0
declare -A took

stage_probe() {
  printf '%-16s %s\n' "check" "found"
  printf '%-16s %s\n' "gpu" "$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap \
    --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  printf '%-16s %s\n' "nvcc" "$("$nvcc" --version 2>/dev/null | grep -o 'release [0-9.]*' || echo missing)"
  printf '%-16s %s\n' "cuDNN root" "${CUDNN_ROOT:-missing}"
  printf '%-16s %s\n' "NCCL root" "${NCCL_ROOT:-missing}"
  printf '%-16s %s\n' "PyTorch" "$("$python" -c 'import torch; print(torch.__version__, "cuda" if torch.cuda.is_available() else "no cuda")' 2>/dev/null || echo missing)"
  printf '%-16s %s\n' "carried .debs" "$(ls "$carry"/debs/*.deb 2>/dev/null | wc -l) in .gpu-carry/debs"
  printf '%-16s %s\n' "mpirun" "$($(mpirun_cmd) --version 2>/dev/null | head -1 || echo missing)"
  local missing=""
  if [ -n "${OPAL_PREFIX:-}" ]; then
    missing=$(for f in "$prefix"/usr/lib/x86_64-linux-gnu/libhdf5_openmpi.so.* "$prefix"/usr/bin/orterun \
      "$prefix"/usr/lib/x86_64-linux-gnu/libboost_program_options.so.* \
      "$prefix"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0; do
      [ -e "$f" ] && ldd "$f" 2>/dev/null | awk '/not found/ {print $1}'
    done | sort -u | tr '\n' ' ')
    [ -e "$prefix/usr/lib/x86_64-linux-gnu/libz.so" ] || missing+='libz.so(dangling) '
    [ -e "$prefix/usr/include/zlib.h" ] || [ -e /usr/include/zlib.h ] || missing+='zlib.h '
    printf '%-16s %s\n' "missing libs" "${missing:-none}"
  fi
  local ok=0
  if cmake_ok; then
    printf '%-16s %s\n' "cmake" "$(cmake_version) ($cmake_bin)"
  else
    printf '%-16s %s\n' "cmake" "MISSING or too old: ${cmake_bin:-none} $(cmake_version) (need >= $cmake_min)"
    ok=1
  fi
  printf '%-16s %s\n' "generator" "$(generator)${ninja_bin:+ ($ninja_bin)}"
  printf '%-16s %s\n' "/dev/shm" "$(df -h /dev/shm 2>/dev/null | awk 'NR == 2 {print $2 " total, " $4 " free"}') (MPI \
shared memory backed in $shm_dir instead)"
  printf '%-16s %s\n' "timeouts" "${cmd_timeout} s a command, ${stage_timeout} s a stage"
  [ $ok -eq 0 ] && [ -n "$(gpu_arch)" ] && [ -x "$nvcc" ] && [ -n "$CUDNN_ROOT" ] && [ -n "$NCCL_ROOT" ] && [ -z "$missing" ]
}

stage_build() {
  local arch
  arch=$(gpu_arch)
  [ -n "$arch" ] || arch=${HPCTRAIN_GPU_ARCH:-90}
  local -a hints=()
  if [ -n "${OPAL_PREFIX:-}" ]; then
    local lib=$prefix/usr/lib/x86_64-linux-gnu
    hints=(-DCMAKE_PREFIX_PATH="$prefix/usr" -DMPI_C_COMPILER="$prefix/usr/bin/mpicc.openmpi"
      -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi" -DHDF5_ROOT="$lib/hdf5/openmpi"
      -DCMAKE_LIBRARY_PATH="$lib/openblas-pthread;$lib" -DCMAKE_INCLUDE_PATH="$prefix/usr/include"
      -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun.openmpi" -DZLIB_LIBRARY="$lib/libz.so"
      -DZLIB_INCLUDE_DIR="$prefix/usr/include")
  fi
  cmake_ok || { echo "gpu-check --build: cmake missing or older than $cmake_min (${cmake_bin:-none})"; return 1; }
  local gen
  gen=$(generator)
  [ "$gen" = Ninja ] && hints+=(-DCMAKE_MAKE_PROGRAM="$ninja_bin")
  # A build folder configured with the other generator is started again.
  [ -f "$build/CMakeCache.txt" ] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen\$" "$build/CMakeCache.txt" &&
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  "$cmake_bin" -S "$root" -B "$build" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DHPCTRAIN_REQUIRE_CUDA=ON -DHPCTRAIN_CUDA_ARCHITECTURES="${arch}-real" -DHPCTRAIN_ENABLE_ONEDNN=OFF \
    -DCUDNN_ROOT="$CUDNN_ROOT" -DNCCL_ROOT="$NCCL_ROOT" "${hints[@]}" >"$results/configure.log" 2>&1 ||
    { tail -20 "$results/configure.log"; return 1; }
  grep "hpctrain 0" "$results/configure.log"
  "$cmake_bin" --build "$build" -j "$(nproc)" --target trainer hpctrain-data gpu_tests unit_tests \
    >"$results/build.log" 2>&1 || { grep -E "error|FAILED|Error " "$results/build.log" | head -20; return 1; }
  "$build/trainer" --version
}

stage_test() {
  local rc=0 log=$results/gpu_tests.log
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$build/tests/gpu_tests" --gtest_output=xml:"$results/gpu_tests.xml" \
    >"$log" 2>&1 || rc=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|^\[  FAILED" "$log" | sed 's/^/  /'
  if grep -q "SKIPPED \] [A-Z]" "$log"; then
    echo "gpu-check --test: GPU tests skipped: this stage needs a GPU (reasons in $log)"
    rc=1
  fi
  run_timed "$build/tests/unit_tests" >"$results/unit_tests.log" 2>&1 || { echo "unit tests failed"; rc=1; }
  tail -1 "$results/unit_tests.log"
  return $rc
}

mnist_data() {  # full MNIST when carried (imported once), else the shipped subset
  if compgen -G "$carry/mnist/train-images*" >/dev/null; then
    local d=$build/mnist
    if [ ! -d "$d/train" ]; then
      "$build/hpctrain-data" import-idx --images "$carry"/mnist/train-images*.gz --labels "$carry"/mnist/train-labels*.gz \
        --out "$d" --shards 4 >/dev/null &&
        "$build/hpctrain-data" import-idx --images "$carry"/mnist/t10k-images*.gz \
          --labels "$carry"/mnist/t10k-labels*.gz --out "$d" --split test >/dev/null || return 1
    fi
    echo "$d"
  else
    echo "$root/inputs/data/mnist-small"
  fi
}

# Checkpoints of a run whose logs go to $results/NAME: in the build folder, never among the results
# (the wide bench alone writes about 3.6 GiB).
ckpt_dir() { echo "$build/check-checkpoints/$(basename "$1")"; }

# trainer <ini> <out_dir> [--set ...]: one rank on the GPU; prints the summary's samples/s and accuracy.
train_one() {
  local ini=$1 out=$2
  shift 2
  rm -rf "$out" "$(ckpt_dir "$out")"
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$build/trainer" "$ini" --set run.out_dir="$out" \
    --set checkpoint.resume=none --set checkpoint.dir="$(ckpt_dir "$out")" "${watchdog[@]}" \
    "$@" >"$out.log" 2>&1 || { tail -5 "$out.log"; return 1; }
  run_timed "$python" - "$out/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{s.get('steady_samples_per_s', 0):.0f} {100 * s.get('test_accuracy', s.get('eval_accuracy', 0)):.2f}")
EOF
}

rate() { train_one "$@" | awk '{print $1}'; }  # samples/s of one training run
json_field() {  # the rounded value of one key of a JSON line on stdin
  "$python" -c "import json, sys; print(round(json.load(sys.stdin)['$1']))" 2>/dev/null
}

# The GPU telemetry (NVML, the real library) of a training run in <out_dir>: on a GPU every
# metrics row has GPU utilization, memory, power, temperature and energy, and summary.json the
# energy in kWh and the GPU-hours; on the CPU (the dry run) the GPU fields are empty and null.
telemetry_check() {
  run_timed "$python" - "$1" "$dev" <<'EOF'
import csv, json, sys
out, dev = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(out + "/metrics.csv")))
s = json.load(open(out + "/summary.json"))
cols = [c for c in rows[0] if c.startswith("gpu_")]
if dev == "cpu":
    ok = all(r[c] == "" for r in rows for c in cols) and s["gpu_hours"] is None and s["gpu_energy_kwh"] is None
    print("GPU telemetry on the cpu: %s" % ("n/a, as it must be" if ok else "FAIL: GPU fields on a CPU run"))
    sys.exit(0 if ok else 1)
missing = sorted({c for r in rows for c in cols if r[c] == ""})
last = rows[-1]
print("GPU telemetry (NVML): util %s-%s%%, memory %s of %s MiB, power %s W, %s C, energy %s J; "
      "summary: %s kWh over %s GPU-hours" % (
          last["gpu_util_pct_min"], last["gpu_util_pct_max"], last["gpu_mem_used_mib_max"], last["gpu_mem_total_mib"],
          last["gpu_power_w_max"], last["gpu_temp_c_max"], last["gpu_energy_j_max"], s["gpu_energy_kwh"], s["gpu_hours"]))
ok = not missing and s["gpu_hours"] and (s["gpu_energy_kwh"] or 0) > 0
if missing:
    print("FAIL: empty GPU columns: " + ", ".join(missing))
sys.exit(0 if ok else 1)
EOF
}

stage_train() {
  local data rc=0 mlp_ok=0
  data=$(mnist_data) || return 1
  local epochs=${HPCTRAIN_GPU_EPOCHS:-2}
  printf '%-10s %-6s %12s %10s\n' model device samples/s accuracy
  for m in mlp cnn; do
    local r
    r=$(train_one "$root/inputs/mnist_$m.ini" "$results/train_$m" --set run.device="$dev" --set data.path="$data" \
      --set train.epochs="$epochs") || { echo "mnist_$m on $dev failed (log: $results/train_$m.log)"; rc=1; continue; }
    [ $m = mlp ] && mlp_ok=1
    printf '%-10s %-6s %12s %9s%%\n' "$m" "$dev" $r
  done
  [ $mlp_ok -eq 1 ] || return 1
  telemetry_check "$results/train_mlp" || rc=1
  # The GPU run's checkpoint, evaluated on the CPU: checkpoints are float32 and device-independent.
  local eval_log=$results/eval_cpu.log
  if run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$build/trainer" "$root/inputs/mnist_mlp.ini" --eval-only \
    --set run.out_dir="$results/train_mlp" --set checkpoint.dir="$(ckpt_dir "$results/train_mlp")" \
    --set run.device=cpu --set data.path="$data" "${watchdog[@]}" >"$eval_log" 2>&1; then
    echo "GPU checkpoint evaluated on the CPU: $(grep -o 'accuracy [0-9.]*%' "$eval_log" | tail -1)"
  else
    echo "evaluating the GPU checkpoint on the CPU failed (log: $eval_log)"
    rc=1
  fi
  return $rc
}

# The GPT stage: on a GPU the GPU deck for HPCTRAIN_GPU_GPT_STEPS (300) steps; with
# HPCTRAIN_GPU_CHECK_DEVICE=cpu the CPU deck for 20 (a check of this script).
stage_gpt() {
  local text=$carry/tinyshakespeare/input.txt data=$build/gpt-data deck=$root/inputs/shakespeare_gpt_gpu.ini
  local steps=${HPCTRAIN_GPU_GPT_STEPS:-300}
  [ "$dev" = cpu ] && deck=$root/inputs/shakespeare_gpt.ini steps=20
  if [ ! -f "$text" ]; then  # no Shakespeare carried: the project's own docs as the text
    text=$build/gpt-docs.txt
    cat "$root"/README.md "$root"/docs/*.md >"$text"
  fi
  local made
  made=$("$build/hpctrain-data" import-text --input "$text" --out "$data" --force) || { echo "$made"; return 1; }
  local vocab
  vocab=$(grep -o 'vocabulary [0-9]*' <<<"$made" | awk '{print $2}')
  local layers
  layers=$(sed -n 's/^layers = //p' "$deck" | sed "s/(65/($vocab/g")
  local out=$results/gpt ckpt
  ckpt=$(ckpt_dir "$out")
  rm -rf "$out" "$ckpt"
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$build/trainer" "$deck" --set run.device="$dev" \
    --set data.path="$data" --set model.layers="$layers" --set train.steps="$steps" --set train.log_every=50 \
    --set train.eval_every=0 --set run.out_dir="$out" --set checkpoint.dir="$ckpt" --set checkpoint.every_steps=0 \
    --set checkpoint.resume=none "${watchdog[@]}" >"$out.log" 2>&1 || { tail -5 "$out.log"; return 1; }
  local ours theirs="-" ratio="-"
  ours=$(json_field steady_tokens_per_s <"$out/summary.json")
  if "$python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && [ "$dev" = cuda ]; then
    local deck2=$results/gpt-torch.ini
    sed "s|^layers = .*|layers = $layers|" "$deck" >"$deck2"
    theirs=$(run_timed "$python" "$root/tools/bench/torch_gpt.py" "$deck2" --device cuda --steps 30 |
      json_field tokens_per_s) || theirs="-"
    [[ "$ours" =~ ^[0-9]+$ && "$theirs" =~ ^[0-9]+$ ]] && ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN{printf "%.2fx", a/b}')
  fi
  printf '%-22s %-6s %12s %12s %8s\n' model device "tokens/s" "PyTorch" ratio
  printf '%-22s %-6s %12s %12s %8s\n' "$(basename "$deck" .ini)" "$dev" "$ours" "$theirs" "$ratio"
  grep "^done" "$out.log" | cut -c1-160
  # The run's checkpoint on the CPU: text from the checkpoint alone (device-independent weights).
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$build/trainer" "$deck" --generate --prompt "ROMEO:" --tokens 100 \
    --set run.device=cpu --set model.layers="$layers" --set run.out_dir="$out" --set checkpoint.dir="$ckpt" \
    >"$results/gpt_generate.log" 2>&1 || { echo "generation from the GPT checkpoint failed"; tail -3 "$results/gpt_generate.log"; return 1; }
  echo "sampled on the CPU from the GPU run's checkpoint:"
  sed -n '/^generate:/,$p' "$results/gpt_generate.log" | head -6
}

stage_bench() {
  local data have_torch=0
  data=$(mnist_data) || return 1
  "$python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && have_torch=1
  local ref=$root/tools/bench/torch_gpu_reference.py
  printf '%-22s %-9s %12s %12s %12s %8s\n' model precision "hpctrain/s" "+graphs/s" "PyTorch/s" ratio
  for m in mlp cnn; do
    for p in fp32 bf16; do
      local ours graphs theirs="-" ratio="-" best
      local -a common=(--set run.device="$dev" --set data.path="$data" --set run.precision="$p" --set train.epochs=1
        --set train.log_every=50 --set checkpoint.every_epochs=0)
      ours=$(rate "$root/inputs/mnist_$m.ini" "$results/bench_${m}_$p" "${common[@]}") || ours="failed"
      graphs=$(rate "$root/inputs/mnist_$m.ini" "$results/bench_${m}_${p}_graphs" "${common[@]}" \
        --set run.cuda_graphs=true) || graphs="failed"
      if [ $have_torch -eq 1 ]; then
        theirs=$(run_timed "$python" "$ref" --model "$m" --precision "$p" | json_field samples_per_s) || theirs="-"
        best=$(printf '%s\n%s\n' "$ours" "$graphs" | grep -E '^[0-9]+$' | sort -n | tail -1)
        [[ "$best" =~ ^[0-9]+$ && "$theirs" =~ ^[0-9]+$ ]] &&
          ratio=$(awk -v a="$best" -v b="$theirs" 'BEGIN{printf "%.2fx", a/b}')
      fi
      printf '%-22s %-9s %12s %12s %12s %8s\n' "mnist_$m" "$p" "$ours" "$graphs" "$theirs" "$ratio"
    done
  done
  # The wide MLP: 8 layers of 8192 on 1024 features, batch 4096, bf16: GEMM-bound.
  local width depth feats batch count classes=16
  read -r width depth feats batch count <<<"${HPCTRAIN_GPU_WIDE:-8192 8 1024 4096 131072}"
  local wide=$build/wide-data-$feats-$count
  [ -d "$wide/train" ] || "$build/hpctrain-data" generate --out "$wide" --shape "$feats" --classes $classes \
    --train "$count" --test 4096 --shards 4 --dtype float16 >/dev/null || return 1
  local layers="" i
  for ((i = 0; i < depth; i++)); do layers+="dense($width) relu "; done
  layers+="dense($classes)"
  local ini=$results/wide.ini
  cat >"$ini" <<EOF
[run]
device = $dev
precision = bf16
[data]
path = $wide
[model]
layers = $layers
[train]
global_batch = $batch
epochs = 1
log_every = 4
[optim]
name = sgd
lr = 0.01
momentum = 0.9
[checkpoint]
every_epochs = 0
EOF
  local ours params peak="-" frac="-" theirs="-"
  ours=$(rate "$ini" "$results/bench_wide") || ours="failed"
  params=$(( (feats * width + width) + (depth - 1) * (width * width + width) + width * classes + classes ))
  if [ $have_torch -eq 1 ]; then
    peak=$(run_timed "$python" "$ref" --gemm | json_field bf16_gemm_tflops) || peak="-"
    theirs=$(run_timed "$python" "$ref" --model wide --precision bf16 --batch $batch --width $width --depth $depth \
      --features $feats --classes $classes --steps 30 --warmup 5 | json_field samples_per_s) || theirs="-"
  fi
  local tflops="-"
  if [[ "$ours" =~ ^[0-9]+$ ]]; then
    tflops=$(awk -v s="$ours" -v p="$params" 'BEGIN{printf "%.0f", 6 * p * s / 1e12}')
    [[ "$peak" =~ ^[0-9]+$ ]] && frac=$(awk -v t="$tflops" -v p="$peak" 'BEGIN{printf "%.0f%%", 100 * t / p}')
  fi
  printf '%-22s %-9s %12s %12s %12s\n' "wide MLP ($((params / 1000000))M)" bf16 "$ours" "-" "$theirs"
  echo "wide MLP: ${tflops} TFLOP/s (6 x parameters x samples/s) = ${frac} of the dense bf16 GEMM rate measured now (${peak} TFLOP/s)"
}

# Each stage in its own process group under the stage timeout (its commands have theirs too). A
# failed probe or build stops the check: nothing after them can run; a failed test stage still lets
# train and bench run, so one run yields every figure it can.
stage_done=0
for s in "${stages[@]}"; do
  echo "== $s"
  t0=$(date +%s)
  r=PASS
  set -m  # the stage in a process group of its own, so the guard can end all of it
  (set +m; "stage_$s") &
  pid=$!
  set +m
  (for ((i = 0; i < stage_timeout; i++)); do sleep 1; kill -0 "$pid" 2>/dev/null || exit 0; done
    kill -TERM -- "-$pid"
    for ((i = 0; i < 10; i++)); do sleep 1; kill -0 -- "-$pid" 2>/dev/null || exit 0; done
    kill -KILL -- "-$pid") >/dev/null 2>&1 &
  guard=$!
  wait "$pid" || r=FAIL
  wait "$guard" 2>/dev/null
  (( $(date +%s) - t0 >= stage_timeout )) && { r=TIMEOUT; echo "gpu-check: stage $s timed out after ${stage_timeout} s"; }
  [ $r = PASS ] || status=1
  took[$s]="$r $(($(date +%s) - t0)) s"
  stage_done=$((stage_done + 1))
  if [ $r != PASS ] && { [ "$s" = probe ] || [ "$s" = build ]; }; then
    echo "gpu-check: stopping after the failed $s stage"
    break
  fi
done
stages=("${stages[@]:0:$stage_done}")
echo
printf '%-8s %-6s %7s\n' stage result time
for s in "${stages[@]}"; do
  read -r r secs _ <<<"${took[$s]}"
  printf '%-8s %-6s %5s s\n' "$s" "$r" "$secs"
done
echo "gpu-check: $([ $status -eq 0 ] && echo PASS || echo FAIL) ($(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU'))"
exit $status
