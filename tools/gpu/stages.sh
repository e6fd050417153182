# tools/gpu/stages.sh: the GPU check's stages, sourced by tools/gpu-check.sh. Each stage_NAME runs in
# a process group of its own under its budget, writes its logs under $L (the stage's log folder in
# the build folder, archived into the results folder when the stage ends) and prints what a reader
# of the output's tail needs: figures as tables, and for a failure the failing test's message or
# the last lines of the command's log. Uses: root carry work bin L dev python cmd_timeout watchdog.

torch_cuda() { [ "$(torch_state | awk '{print $2}')" = cuda ]; }
torch_state() {  # "VERSION cuda|nocuda" or "missing": PyTorch probed once per check (a file in $work)
  local f=$work/torch-probe.txt
  [ -s "$f" ] || { "$python" -c 'import torch; print(torch.__version__, "cuda" if torch.cuda.is_available() else "nocuda")' \
    2>/dev/null || echo missing; } >"$f"
  cat "$f"
}

# mpirun_ok LOG CMD...: mpirun ran, and said nothing about a help file it could not open (what a
# relocated Open MPI or PMIx missing its own files prints, even when the job then runs).
mpirun_ok() {
  local log=$1
  shift
  run_timed "$@" >"$log" 2>&1 && ! grep -q "couldn't open the help file\|Sorry!  You were supposed" "$log"
}

stage_probe() {
  printf '%-16s %s\n' "check" "found"
  printf '%-16s %s\n' "gpu" "$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap \
    --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  printf '%-16s %s\n' "nvcc" "$("$nvcc" --version 2>/dev/null | grep -o 'release [0-9.]*' || echo missing)"
  printf '%-16s %s\n' "cuDNN root" "${CUDNN_ROOT:-missing}"
  printf '%-16s %s\n' "NCCL root" "${NCCL_ROOT:-missing}"
  printf '%-16s %s\n' "PyTorch" "$(torch_state)"
  printf '%-16s %s\n' "carried .debs" "$(ls "$carry"/debs/*.deb 2>/dev/null | wc -l) in $carry/debs"
  printf '%-16s %s\n' "binaries" "$([ -x "$bin/trainer" ] && echo "$bin" || echo "none: the build stage compiles them")"
  local ok=0 missing=""
  if [ -n "${OPAL_PREFIX:-}" ]; then
    missing=$(for f in "$prefix"/usr/lib/x86_64-linux-gnu/libhdf5_openmpi.so.* "$prefix"/usr/bin/orterun \
      "$prefix"/usr/lib/x86_64-linux-gnu/libboost_program_options.so.* \
      "$prefix"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0; do
      [ -e "$f" ] && ldd "$f" 2>/dev/null | awk '/not found/ {print $1}'
    done | sort -u | tr '\n' ' ')
    [ -e "$prefix/usr/lib/x86_64-linux-gnu/libz.so" ] || missing+='libz.so(dangling) '
    printf '%-16s %s\n' "missing libs" "${missing:-none}"
  fi
  local mpirun
  mpirun=$(mpirun_cmd)
  printf '%-16s %s\n' "mpirun" "${mpirun:-missing} ($("$mpirun" --version 2>/dev/null | head -1))"
  if mpirun_ok "$L/mpirun_np1.log" "$mpirun" -np 1 true; then
    printf '%-16s %s\n' "mpirun -np 1" "ok"
  else
    printf '%-16s %s\n' "mpirun -np 1" "FAILED: $(grep -v '^-*$' "$L/mpirun_np1.log" | head -3 | tr '\n' ' ')"
    ok=1
  fi
  if [ -x "$bin/allreduce-bench" ]; then
    if mpirun_ok "$L/mpirun_np2.log" "$mpirun" -np 2 --oversubscribe --bind-to none "$bin/allreduce-bench" --smoke; then
      printf '%-16s %s\n' "mpirun -np 2" "ok (allreduce-bench --smoke: $(grep -c ' OK$' "$L/mpirun_np2.log") sizes exact)"
    else
      printf '%-16s %s\n' "mpirun -np 2" "FAILED: $(grep -v '^-*$' "$L/mpirun_np2.log" | tail -3 | tr '\n' ' ')"
      ok=1
    fi
  fi
  if [ ! -x "$bin/trainer" ]; then  # the build stage compiles there: it needs cmake and nvcc
    if cmake_ok; then
      printf '%-16s %s\n' "cmake" "$(cmake_version) ($cmake_bin), generator $(generator)"
    else
      printf '%-16s %s\n' "cmake" "MISSING or too old: ${cmake_bin:-none} $(cmake_version) (need >= $cmake_min)"
      ok=1
    fi
    [ -x "$nvcc" ] || ok=1
  fi
  printf '%-16s %s\n' "/dev/shm" "$(df -h /dev/shm 2>/dev/null | awk 'NR == 2 {print $2 " total, " $4 " free"}') (MPI \
shared memory backed in $shm_dir instead)"
  [ -z "$missing" ] && [ -n "$CUDNN_ROOT$NCCL_ROOT" ] || ok=1
  if [ -z "$(gpu_arch)" ]; then
    [ "$dev" = cpu ] && echo "probe: no GPU (the dry run on the CPU goes on)" || ok=1
  fi
  return $ok
}

# The carried binaries (tools/gpu-check.sh --prepare built them for sm_90 on the CPU machine): every
# library they need resolves here and the trainer runs. Without them: CMake + Ninja into $work.
stage_build() {
  if [ "$bin" != "$work/bin" ]; then
    local f bad=""
    for f in "$bin"/*; do
      bad+=$(ldd "$f" 2>/dev/null | awk -v f="$(basename "$f")" '/not found/ {printf " %s:%s", f, $1}')
    done
    [ -z "$bad" ] || { echo "gpu-check --build: carried binaries miss libraries:$bad"; return 1; }
    "$bin/trainer" --version || return 1
    echo "carried binaries in $bin: $(cd "$bin" && ls | tr '\n' ' ')"
    return 0
  fi
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
  [ -f "$work/CMakeCache.txt" ] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen\$" "$work/CMakeCache.txt" &&
    rm -rf "$work/CMakeCache.txt" "$work/CMakeFiles"
  "$cmake_bin" -S "$root" -B "$work" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DHPCTRAIN_REQUIRE_CUDA=ON -DHPCTRAIN_CUDA_ARCHITECTURES="${arch}-real" -DHPCTRAIN_ENABLE_ONEDNN=OFF \
    -DCUDNN_ROOT="$CUDNN_ROOT" -DNCCL_ROOT="$NCCL_ROOT" "${hints[@]}" >"$L/configure.log" 2>&1 ||
    { tail -20 "$L/configure.log"; return 1; }
  grep "hpctrain 0" "$L/configure.log"
  "$cmake_bin" --build "$work" -j "$(nproc)" --target trainer hpctrain-data gpu_tests allreduce-bench \
    >"$L/build.log" 2>&1 || { grep -E "error|FAILED|Error " "$L/build.log" | head -20; return 1; }
  mkdir -p "$work/bin"
  ln -sf "$work/trainer" "$work/hpctrain-data" "$work/allreduce-bench" "$work/tests/gpu_tests" "$work/bin/"
  "$work/bin/trainer" --version
}

# Each failing GoogleTest test's output, from its RUN line to its FAILED line (at most 25 lines each).
failed_tests() {
  awk '/^\[ RUN      \]/ {n = 0; delete buf} {buf[n++] = $0}
       /^\[  FAILED  \] .*\(/ {s = n > 25 ? n - 25 : 0; for (i = s; i < n; i++) print "  " buf[i]; n = 0}' "$1"
}

stage_test() {
  local rc=0 log=$L/gpu_tests.log
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$bin/gpu_tests" --gtest_output=xml:"$L/gpu_tests.xml" \
    >"$log" 2>&1 || rc=1
  grep -E "^\[==========\]|^\[  (PASSED|FAILED|SKIPPED) " "$log" | grep -v "^\[  SKIPPED \] [A-Z]" | sed 's/^/  /'
  failed_tests "$log"
  if grep -q "SKIPPED \] [A-Z]" "$log"; then
    echo "gpu-check --test: $(grep "SKIPPED \] [A-Z]" "$log" | sort -u | wc -l) GPU tests skipped: this stage needs a" \
      "GPU ($(grep -m1 -B2 'SKIPPED \] [A-Z]' "$log" | grep -v SKIPPED | head -1 | cut -c1-120))"
    rc=1
  fi
  grep -q '^\[ RUN' "$log" || { echo "gpu_tests did not run:"; tail -5 "$log"; }
  # A test that started and never ended: the program died in it (a crash ends every later test too).
  local last
  last=$(sed -n 's/^\[ RUN      \] //p' "$log" | tail -1)
  if [ -n "$last" ] && ! grep -qE "^\[ +(OK|FAILED|SKIPPED) +\] $last( |\$)" "$log"; then
    echo "gpu-check --test: gpu_tests died in $last: $(grep -m1 -E 'Signal: |terminate called|Aborted' "$log" | cut -c1-120)"
    rc=1
  fi
  return $rc
}

mnist_data() {  # full MNIST when carried (imported once, uncompressed), else the shipped subset
  if compgen -G "$carry/mnist/train-images*" >/dev/null; then
    local d=$work/mnist
    if [ ! -d "$d/test" ]; then
      rm -rf "$d"
      run_timed "$bin/hpctrain-data" import-idx --images "$carry"/mnist/train-images*.gz \
        --labels "$carry"/mnist/train-labels*.gz --out "$d" --shards 4 --gzip 0 >/dev/null &&
        run_timed "$bin/hpctrain-data" import-idx --images "$carry"/mnist/t10k-images*.gz \
          --labels "$carry"/mnist/t10k-labels*.gz --out "$d" --split test --gzip 0 >/dev/null || return 1
    fi
    echo "$d"
  else
    echo "$root/inputs/data/mnist-small"
  fi
}

# Checkpoints of a run: in the build folder, never among the logs that are archived.
ckpt_dir() { echo "$work/check-checkpoints/$(basename "$1")"; }

# train_one <ini> <out_dir> [--set ...]: one rank; prints the summary's samples/s and test accuracy.
train_one() {
  local ini=$1 out=$2
  shift 2
  rm -rf "$out" "$(ckpt_dir "$out")"
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$bin/trainer" "$ini" --set run.out_dir="$out" \
    --set checkpoint.resume=none --set checkpoint.dir="$(ckpt_dir "$out")" --set log.tensorboard=false \
    "${watchdog[@]}" "$@" >"$out.log" 2>&1 || { tail -5 "$out.log" >&2; return 1; }
  "$python" - "$out/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{s.get('steady_samples_per_s', 0):.0f} {100 * s.get('test_accuracy', s.get('eval_accuracy', 0)):.2f}")
EOF
}
rate() { train_one "$@" | awk '{print $1}'; }  # samples/s of one training run
json_field() {  # KEY [CASE]: the rounded KEY of the JSON on stdin (a document, or lines: the one of CASE)
  "$python" -c "
import json, sys
text = sys.stdin.read()
try: docs = [json.loads(text)]
except ValueError: docs = [json.loads(l) for l in text.splitlines() if l.startswith('{')]
for d in docs:
    if '${2:-}' in ('', d.get('case')) and '$1' in d: print(round(d['$1'])); break" 2>/dev/null
}

# The GPU telemetry (NVML) of a training run in <out_dir>: on a GPU the metrics rows' GPU columns and
# the summary's energy and GPU-hours; NVML may hide a figure (MIG, some VMs): that is a warning.
# On the CPU (the dry run) the GPU fields are empty and null.
telemetry_check() {
  "$python" - "$1" "$dev" <<'EOF'
import csv, json, sys
out, dev = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(out + "/metrics.csv")))
s = json.load(open(out + "/summary.json"))
cols = [c for c in rows[0] if c.startswith("gpu_")]
if dev == "cpu":
    ok = all(r[c] == "" for r in rows for c in cols) and s["gpu_hours"] is None and s["gpu_energy_kwh"] is None
    print("GPU telemetry on the cpu: %s" % ("n/a, as it must be" if ok else "FAIL: GPU fields on a CPU run"))
    sys.exit(0 if ok else 1)
last = rows[-1]
print("GPU telemetry (NVML): util %s-%s%%, memory %s of %s MiB, power %s W, %s C, energy %s J; "
      "summary: %s kWh over %s GPU-hours" % (
          last["gpu_util_pct_min"], last["gpu_util_pct_max"], last["gpu_mem_used_mib_max"], last["gpu_mem_total_mib"],
          last["gpu_power_w_max"], last["gpu_temp_c_max"], last["gpu_energy_j_max"], s["gpu_energy_kwh"], s["gpu_hours"]))
missing = sorted({c for r in rows for c in cols if r[c] == ""})
if missing or not (s["gpu_energy_kwh"] or 0) > 0:
    print("WARN: NVML gave no figure for: " + ", ".join(missing + ([] if (s["gpu_energy_kwh"] or 0) > 0 else ["energy"])))
if not s["gpu_hours"]:
    print("FAIL: the run counted no GPU-hours (not seen as a GPU run)")
sys.exit(0 if s["gpu_hours"] else 1)
EOF
}

stage_train() {
  local data rc=0 m r
  data=$(mnist_data) || return 1
  printf '%-10s %-6s %12s %10s\n' model device samples/s accuracy
  for m in mlp cnn; do
    r=$(train_one "$root/inputs/mnist_$m.ini" "$L/train_$m" --set run.device="$dev" --set data.path="$data" \
      --set train.epochs="${HPCTRAIN_GPU_EPOCHS:-1}") || { echo "mnist_$m on $dev failed (log: train/train_$m.log)"; rc=1; continue; }
    printf '%-10s %-6s %12s %9s%%\n' "$m" "$dev" $r
  done
  [ -f "$L/train_mlp/summary.json" ] || return 1
  telemetry_check "$L/train_mlp" || rc=1
  # The GPU run's checkpoint, evaluated on the CPU: checkpoints are float32 and device-independent.
  if run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$bin/trainer" "$root/inputs/mnist_mlp.ini" --eval-only \
    --set run.out_dir="$L/train_mlp" --set checkpoint.dir="$(ckpt_dir "$L/train_mlp")" \
    --set run.device=cpu --set data.path="$data" "${watchdog[@]}" >"$L/eval_cpu.log" 2>&1; then
    echo "GPU checkpoint evaluated on the CPU: $(grep -o 'accuracy [0-9.]*%' "$L/eval_cpu.log" | tail -1)"
  else
    echo "evaluating the GPU checkpoint on the CPU failed:"
    tail -3 "$L/eval_cpu.log"
    rc=1
  fi
  return $rc
}

# The GPT stage: on a GPU the GPU deck for HPCTRAIN_GPU_GPT_STEPS (200) steps and PyTorch eager on the
# same model; with HPCTRAIN_GPU_CHECK_DEVICE=cpu the CPU deck for 20 (a check of this script). One
# evaluation, at the end (eval_every = 0 would evaluate at every pass over the data). Then text
# sampled on the CPU from the run's checkpoint.
stage_gpt() {
  local text=$carry/tinyshakespeare/input.txt data=$work/gpt-data deck=$root/inputs/shakespeare_gpt_gpu.ini
  local steps=${HPCTRAIN_GPU_GPT_STEPS:-200}
  [ "$dev" = cpu ] && deck=$root/inputs/shakespeare_gpt.ini steps=20
  if [ ! -f "$text" ]; then  # no Shakespeare carried: the project's own docs as the text
    text=$work/gpt-docs.txt
    cat "$root"/README.md "$root"/docs/*.md >"$text"
  fi
  local made vocab layers out=$L/gpt ckpt
  made=$("$bin/hpctrain-data" import-text --input "$text" --out "$data" --force) || { echo "$made"; return 1; }
  vocab=$(grep -o 'vocabulary [0-9]*' <<<"$made" | awk '{print $2}')
  layers=$(sed -n 's/^layers = //p' "$deck" | sed "s/(65/($vocab/g")
  ckpt=$(ckpt_dir "$out")
  rm -rf "$out" "$ckpt"
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$bin/trainer" "$deck" --set run.device="$dev" \
    --set data.path="$data" --set model.layers="$layers" --set train.steps="$steps" --set log.log_every=50 \
    --set train.eval_every="$steps" --set run.out_dir="$out" --set checkpoint.dir="$ckpt" \
    --set checkpoint.every_steps=0 --set checkpoint.resume=none "${watchdog[@]}" >"$out.log" 2>&1 ||
    { tail -5 "$out.log"; return 1; }
  local ours theirs="-" ratio="-" rc=0
  ours=$(json_field steady_tokens_per_s <"$out/summary.json")
  if [ "$dev" = cuda ] && torch_cuda; then
    sed "s|^layers = .*|layers = $layers|" "$deck" >"$L/gpt-torch.ini"
    theirs=$(run_timed "$python" "$root/tools/bench/torch_gpt.py" "$L/gpt-torch.ini" --device cuda --steps 30 \
      2>"$L/torch_gpt.log" | tee -a "$L/torch_gpt.log" | json_field tokens_per_s)
    if [[ "$ours" =~ ^[0-9]+$ && "$theirs" =~ ^[0-9]+$ ]]; then
      ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN{printf "%.2fx", a/b}')
    else
      echo "gpu-check --gpt: PyTorch has CUDA but gave no tokens/s:"
      tail -3 "$L/torch_gpt.log"
      theirs="failed" rc=1
    fi
  fi
  printf '%-22s %-6s %12s %12s %8s\n' model device "tokens/s" "PyTorch" ratio
  printf '%-22s %-6s %12s %12s %8s\n' "$(basename "$deck" .ini)" "$dev" "$ours" "$theirs" "$ratio"
  grep "^done" "$out.log" | cut -c1-160
  # The run's checkpoint on the CPU: text from the checkpoint alone (device-independent weights).
  run_timed "$(mpirun_cmd)" -np 1 --bind-to none "$bin/trainer" "$deck" --generate --prompt "ROMEO:" --tokens 100 \
    --set run.device=cpu --set model.layers="$layers" --set run.out_dir="$out" --set checkpoint.dir="$ckpt" \
    >"$L/gpt_generate.log" 2>&1 || { echo "generation from the GPT checkpoint failed"; tail -3 "$L/gpt_generate.log"; return 1; }
  echo "sampled on the CPU from the GPU run's checkpoint:"
  sed -n '/^generate:/,$p' "$L/gpt_generate.log" | head -6
  return $rc
}

# Seconds left of this stage's budget.
left() { echo $((stage_deadline - $(date +%s))); }

# The bench stage, most telling figures first: MNIST MLP and CNN with CUDA graphs in fp32, then bf16,
# each printed as measured; PyTorch eager on the same four (one process); the table; hpctrain eager
# while time is left; the wide MLP last (its data generated uncompressed, once).
stage_bench() {
  local data m p
  data=$(mnist_data) || return 1
  declare -A graphs eager theirs
  local -a cases=(mlp:fp32 cnn:fp32 mlp:bf16 cnn:bf16)
  mnist_run() {  # model precision name [--set ...]
    local m=$1 p=$2 name=$3
    shift 3
    rate "$root/inputs/mnist_$m.ini" "$L/${name}_${m}_$p" --set run.device="$dev" --set data.path="$data" \
      --set precision.dtype="$p" --set train.epochs=1 --set log.log_every=50 --set checkpoint.every_epochs=0 "$@" ||
      echo failed
  }
  local c
  for c in "${cases[@]}"; do
    m=${c%:*} p=${c#*:}
    graphs[$c]=$(mnist_run "$m" "$p" graphs --set kernels.cuda_graphs="$([ "$dev" = cuda ] && echo true || echo false)")
    echo "hpctrain mnist_$m $p with CUDA graphs: ${graphs[$c]} samples/s"
  done
  if torch_cuda; then
    run_timed "$python" "$root/tools/bench/torch_gpu_reference.py" --cases "$(IFS=,; echo "${cases[*]}")" \
      >"$L/torch_mnist.log" 2>&1 || tail -3 "$L/torch_mnist.log"
    for c in "${cases[@]}"; do theirs[$c]=$(json_field samples_per_s "$c" <"$L/torch_mnist.log"); done
  fi
  for c in "${cases[@]}"; do  # eager too, while 60 s stay for the wide MLP
    [ "$(left)" -gt 60 ] || { echo "bench: eager runs left out (budget)"; break; }
    eager[$c]=$(mnist_run "${c%:*}" "${c#*:}" eager)
  done
  printf '%-12s %-9s %12s %12s %12s %8s\n' model precision "+graphs/s" "eager/s" "PyTorch/s" ratio
  for c in "${cases[@]}"; do
    local g=${graphs[$c]} e=${eager[$c]:--} t=${theirs[$c]:--} best ratio="-"
    best=$(printf '%s\n%s\n' "$g" "$e" | grep -E '^[0-9]+$' | sort -n | tail -1)
    [[ "$best" =~ ^[0-9]+$ && "$t" =~ ^[0-9]+$ ]] && ratio=$(awk -v a="$best" -v b="$t" 'BEGIN{printf "%.2fx", a/b}')
    printf '%-12s %-9s %12s %12s %12s %8s\n' "mnist_${c%:*}" "${c#*:}" "$g" "$e" "$t" "$ratio"
  done
  local rc=0
  bench_wide || rc=1
  for c in "${cases[@]}"; do [[ "${graphs[$c]}" =~ ^[0-9]+$ ]] || rc=1; done
  return $rc
}

# The wide MLP: 8 layers of 8192 on 1024 features, batch 4096, bf16: GEMM-bound.
bench_wide() {
  local width depth feats batch count classes=16
  read -r width depth feats batch count <<<"${HPCTRAIN_GPU_WIDE:-8192 8 1024 4096 131072}"
  local wide=$work/wide-data-$feats-$count
  [ -d "$wide/test" ] || run_timed "$bin/hpctrain-data" generate --out "$wide" --shape "$feats" --classes $classes \
    --train "$count" --test 4096 --shards 4 --dtype float16 --gzip 0 >/dev/null || { rm -rf "$wide"; return 1; }
  local layers="" i
  for ((i = 0; i < depth; i++)); do layers+="dense($width) relu "; done
  layers+="dense($classes)"
  cat >"$L/wide.ini" <<EOF2
[run]
device = $dev
[precision]
dtype = bf16
[data]
path = $wide
[model]
layers = $layers
[train]
global_batch = $batch
epochs = 1
[log]
log_every = 4
[optim]
name = sgd
lr = 0.01
momentum = 0.9
[checkpoint]
every_epochs = 0
EOF2
  local ours params peak="-" frac="-" theirs="-" tflops="-"
  ours=$(rate "$L/wide.ini" "$L/bench_wide") || ours="failed"
  params=$(( (feats * width + width) + (depth - 1) * (width * width + width) + width * classes + classes ))
  if torch_cuda; then
    run_timed "$python" "$root/tools/bench/torch_gpu_reference.py" --cases gemm,wide:bf16 --batch "$batch" \
      --width "$width" --depth "$depth" --features "$feats" --classes $classes --steps 30 --warmup 5 \
      >"$L/torch_wide.log" 2>&1 || tail -3 "$L/torch_wide.log"
    peak=$(json_field bf16_gemm_tflops gemm <"$L/torch_wide.log")
    theirs=$(json_field samples_per_s wide:bf16 <"$L/torch_wide.log")
  fi
  if [[ "$ours" =~ ^[0-9]+$ ]]; then
    tflops=$(awk -v s="$ours" -v p="$params" 'BEGIN{printf "%.0f", 6 * p * s / 1e12}')
    [[ "$peak" =~ ^[0-9]+$ ]] && frac=$(awk -v t="$tflops" -v p="$peak" 'BEGIN{printf "%.0f%%", 100 * t / p}')
  fi
  printf '%-22s %-9s %12s %12s\n' "wide MLP ($((params / 1000000))M)" bf16 "$ours" "${theirs:--}"
  echo "wide MLP: ${tflops} TFLOP/s (6 x parameters x samples/s) = ${frac} of the dense bf16 GEMM rate measured now (${peak:--} TFLOP/s)"
  [[ "$ours" =~ ^[0-9]+$ ]]
}
