#!/usr/bin/env bash
# tools/gpu-check.sh: everything GPU-side, in one script, for a machine with an NVIDIA GPU that may
# lack MPI, HDF5, Boost, a compiler for them and a network (a rented slot: docs/gpus.md).
#
#   Here (the CPU machine, with Debian's package registry and the CUDA toolkit):
#     tools/gpu-check.sh --prepare   the CUDA binaries (trainer, hpctrain-data, gpu_tests,
#                                    allreduce-bench) built for sm_90 into .gpu-carry/bin, the .debs of
#                                    the libraries they and mpirun need at run time, full MNIST and
#                                    tiny Shakespeare into .gpu-carry/ (ignored by git; about 20 MiB)
#     tools/gpu-check.sh --fetch     instead: the .debs a build there needs too (about 37 MiB), for
#                                    the fallback that compiles on the GPU machine
#   There:
#     tools/gpu-check.sh [--stages probe,build,test,train,gpt,bench]   (default: all, in that order)
#     (--probe, --build, ... name single stages too.) Budgets, one per stage, printed at the start:
#     probe 20 s, build 20 s (carried binaries; 420 s compiling there), test 90, train 60, gpt 60,
#     bench 110: 360 s in all. A stage over its budget is ended with every process it started.
#
# Stages:
#   probe  the GPU, driver, cuDNN, NCCL, PyTorch (probed once), the carried libraries, and mpirun:
#          `-np 1 true` and `-np 2 allreduce-bench --smoke` must run from the carried prefix
#   build  the carried binaries resolve every library and run; without them, CMake + Ninja here
#   test   the GPU tests (every backend operation against the CPU backend, training steps against
#          the CPU, NCCL against MPI, the caching pool); a test that skips fails the stage; each
#          failing test's message is printed
#   train  the MNIST MLP and CNN for one epoch with device = cuda, the MLP run's NVML telemetry (a
#          figure NVML hides is a warning), the GPU checkpoint evaluated on the CPU
#   gpt    the GPU GPT deck for 200 steps on tiny Shakespeare (else the docs as text): tokens/s
#          against PyTorch eager on the same model (fails when PyTorch has CUDA but gives no
#          figure), then text sampled on the CPU from the run's checkpoint
#   bench  MNIST MLP and CNN with CUDA graphs (fp32, then bf16) against PyTorch eager, hpctrain
#          eager while the budget lasts, the wide MLP's fraction of the dense bf16 GEMM rate last
#
# Results ($OUT when set, the device tool's results folder, else build-gpu/check/): at most 8 files:
# gpu-check.log (the whole output, written as it is produced) and one STAGE.tar.gz of each stage's
# logs, written under a temporary name and renamed when the stage ends, so a kill keeps the finished
# stages. Logs, runs, data and checkpoints live in the build folder (HPCTRAIN_GPU_BUILD_DIR,
# default build-gpu/).
# Settings (environment): HPCTRAIN_GPU_CARRY (default .gpu-carry), HPCTRAIN_GPU_PREFIX (default
# /tmp/hpctrain-prefix), HPCTRAIN_GPU_BIN (binaries; default: .gpu-carry/bin when there, else the
# build), HPCTRAIN_GPU_BUDGETS ("bench=200,gpt=30": seconds per stage), HPCTRAIN_GPU_STAGE_TIMEOUT
# (every stage's budget), HPCTRAIN_GPU_CMD_TIMEOUT (one command's limit; default: its stage's
# budget), HPCTRAIN_GPU_EPOCHS (train, 1), HPCTRAIN_GPU_GPT_STEPS (200), HPCTRAIN_GPU_WIDE ("width
# depth features batch samples", default "8192 8 1024 4096 131072"), HPCTRAIN_GPU_ARCH (a build
# there when nvidia-smi cannot tell, 90), HPCTRAIN_GPU_CMAKE / HPCTRAIN_GPU_NINJA, and
# HPCTRAIN_GPU_CHECK_DEVICE=cpu: the dry run of this script on the CPU (tests/e2e/gpu_check.sh).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=${HPCTRAIN_GPU_CARRY:-$root/.gpu-carry}
prefix=${HPCTRAIN_GPU_PREFIX:-/tmp/hpctrain-prefix}
work=${HPCTRAIN_GPU_BUILD_DIR:-$root/build-gpu}
dev=${HPCTRAIN_GPU_CHECK_DEVICE:-cuda}
all_stages=(probe build test train gpt bench)
declare -A budget=([probe]=20 [build]=20 [test]=90 [train]=60 [gpt]=60 [bench]=110)

stages=()
mode=check
for a in "$@"; do
  case $a in
    --prepare) mode=prepare ;;
    --fetch) mode=fetch ;;
    --stages=*) IFS=, read -r -a stages <<<"${a#--stages=}" ;;
    --stages) mode=stages-next ;;
    --probe | --build | --test | --train | --gpt | --bench) stages+=("${a#--}") ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *)
      if [ "$mode" = stages-next ]; then
        IFS=, read -r -a stages <<<"$a"
        mode=check
      else
        echo "gpu-check: unknown option $a (--prepare, --fetch, --stages a,b,... or --probe ... --bench)" >&2
        exit 2
      fi
      ;;
  esac
done
[ "$mode" = stages-next ] && { echo "gpu-check: --stages needs a list (probe,build,test,train,gpt,bench)" >&2; exit 2; }
for s in "${stages[@]}"; do
  [ -n "${budget[$s]:-}" ] || { echo "gpu-check: unknown stage '$s' (probe,build,test,train,gpt,bench)" >&2; exit 2; }
done
[ ${#stages[@]} -eq 0 ] && stages=("${all_stages[@]}")

nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
python=$(command -v python3 || true)
# The Python with PyTorch, when the one on PATH lacks it (Debian: python3-torch is /usr/bin/python3's).
if ! "$python" -c "import torch" 2>/dev/null && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  python=/usr/bin/python3
fi
source "$root/tools/gpu/env.sh"
source "$root/tools/gpu/prepare.sh"
if [ "$mode" != check ]; then
  prepare_carry "$mode"
  exit $?
fi
source "$root/tools/gpu/stages.sh"

results=${OUT:-$work/check}
logs=$work/check-logs
mkdir -p "$results" "$logs"
# The whole output into the results folder as it is produced (a kill keeps what was printed).
exec > >(tee -a "$results/gpu-check.log") 2>&1
tee_pid=$!
exec 3>&1  # run_timed's and the guard's messages: past the callers' redirections, into the log

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

cmake_bin=$(tool_path cmake "${HPCTRAIN_GPU_CMAKE:-}")
ninja_bin=$(tool_path ninja "${HPCTRAIN_GPU_NINJA:-}")
cmake_min=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\)).*/\1/p' "$root/CMakeLists.txt")
use_prefix || { echo "gpu-check: unpacking the carried .debs into $prefix failed"; exit 1; }
cuda_env
# The binaries: HPCTRAIN_GPU_BIN, else the carried ones, else those the build stage makes here.
bin=${HPCTRAIN_GPU_BIN:-$carry/bin}
[ -x "$bin/trainer" ] || bin=$work/bin
[ "$bin" = "$work/bin" ] && budget[build]=420
# The PyTorch twins read the deck's layers string through this trainer (tools/hpctrain_torch.py).
export HPCTRAIN_TRAINER=${HPCTRAIN_TRAINER:-$bin/trainer}

# Budgets: HPCTRAIN_GPU_STAGE_TIMEOUT for every stage, then HPCTRAIN_GPU_BUDGETS per stage.
if [ -n "${HPCTRAIN_GPU_STAGE_TIMEOUT:-}" ]; then for s in "${all_stages[@]}"; do budget[$s]=$HPCTRAIN_GPU_STAGE_TIMEOUT; done; fi
IFS=, read -r -a over <<<"${HPCTRAIN_GPU_BUDGETS:-}"
for kv in "${over[@]}"; do budget[${kv%%=*}]=${kv#*=}; done
total=0 plan=""
for s in "${stages[@]}"; do total=$((total + budget[$s])) plan+="$s ${budget[$s]} s, "; done
echo "gpu-check: $(date -u +%Y-%m-%dT%H:%MZ), device $dev, binaries $bin"
echo "gpu-check: budget ${plan%, } = $total s ($(awk -v t=$total 'BEGIN{printf "%.1f", t / 60}') min)"

# archive STAGE: that stage's logs into the results folder (temporary name, then renamed).
archive() {
  [ -d "$logs/$1" ] || return 0
  tar -czf "$results/.$1.tar.gz.part" --exclude='*.h5' -C "$logs" "$1" 2>/dev/null &&
    mv -f "$results/.$1.tar.gz.part" "$results/$1.tar.gz"
}

# Each stage in a process group of its own under its budget (its commands have their limit too);
# the guard ends the group and every process that carries the stage's tag (ranks included). A
# failed probe or build stops the check: nothing after them can run; a failed test stage still lets
# train, gpt and bench run, so one run yields every figure it can.
status=0 t_start=$(date +%s)
declare -A took
ran=()
for s in "${stages[@]}"; do
  echo "== $s (budget ${budget[$s]} s)"
  t0=$(date +%s) r=PASS tag="stage-$$-$s"
  rm -rf "${logs:?}/$s" && mkdir -p "$logs/$s"
  set -m
  (set +m; export HPCTRAIN_GPU_STAGE_TAG=$tag L=$logs/$s stage_deadline=$((t0 + budget[$s]))
    cmd_timeout=${HPCTRAIN_GPU_CMD_TIMEOUT:-${budget[$s]}}
    # The trainer's own watchdog below the command's limit, so a stuck collective ends with its report.
    watchdog=(--set parallel.watchdog_s=$(( cmd_timeout > 90 ? 60 : (cmd_timeout * 2 + 2) / 3 )))
    "stage_$s") &
  pid=$!
  set +m
  (for ((i = 0; i < budget[$s]; i++)); do sleep 1; kill -0 "$pid" 2>/dev/null || exit 0; done
    echo "gpu-check: stage $s over its budget of ${budget[$s]} s: ended" >&3
    kill -TERM -- "-$pid" 2>/dev/null
    end_tagged HPCTRAIN_GPU_STAGE_TAG "$tag"
    kill -KILL -- "-$pid" 2>/dev/null) &
  guard=$!
  wait "$pid" || r=FAIL
  wait "$guard" 2>/dev/null
  dt=$(($(date +%s) - t0))
  ((dt >= budget[$s])) && r=TIMEOUT
  [ $r = PASS ] || status=1
  took[$s]="$r $dt"
  ran+=("$s")
  archive "$s"
  echo "-- $s: $r in $dt s (budget ${budget[$s]} s); $(($(date +%s) - t_start)) s of $total s so far"
  if [ $r != PASS ] && { [ "$s" = probe ] || [ "$s" = build ]; }; then
    echo "gpu-check: stopping after the failed $s stage"
    break
  fi
done
echo
printf '%-8s %-8s %7s %8s\n' stage result time budget
for s in "${ran[@]}"; do
  read -r r secs <<<"${took[$s]}"
  printf '%-8s %-8s %5s s %6s s\n' "$s" "$r" "$secs" "${budget[$s]}"
done
echo "gpu-check: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $(($(date +%s) - t_start)) s" \
  "($(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU'))"
exec >&- 2>&- 3>&-
wait "$tee_pid" 2>/dev/null
exit $status
