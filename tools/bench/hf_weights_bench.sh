#!/usr/bin/env bash
# tools/bench/hf_weights_bench.sh [--smoke] [--dir DIR]
# What Hugging Face weights in and out cost: a LlamaForCausalLM folder of 200,827,904 parameters
# (tools/bench/hf_llama_folder.py: n_embd 1024, 12 layers, ffn 2816, vocabulary 32,000, two BF16
# shards) imported with --import-hf, then exported with --export-hf (float32 and bf16) and --export
# (one safetensors file), each run three times in turn: wall, user and system CPU seconds, and the
# peak resident memory (Python's getrusage of the child). Checked after: the bf16 export holds the
# folder's values bit for bit (importing it gives the same checkpoint tensors, h5diff), and the
# float32 one imports to the same too. DIR (default: a new directory under /tmp) holds the files
# (about 2.4 GB). --smoke: a 2-layer model of 0.1 M parameters, one run each, for CI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_args.sh"  # root, trainer, smoke, dir, tmp
py=/usr/bin/python3
shape=() rounds=3
[ $smoke -eq 1 ] && shape=(--embd 64 --layers 2 --ffn 176 --vocab 256 --heads 4 --kv-heads 2) rounds=1
$py "$root/tools/bench/hf_llama_folder.py" "$tmp/hf" "${shape[@]}"
measure() {  # label command...: one row (wall, user, sys, peak RSS of the child)
  local label=$1
  shift
  $py - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
if r.returncode:
    sys.exit(f"{sys.argv[1]}: exit {r.returncode}: {r.stderr.strip()}")
print(f"{sys.argv[1]:<22} {wall:8.2f} {u.ru_utime:8.2f} {u.ru_stime:8.2f} {u.ru_maxrss / 1024:10.1f}")
PY
}
deck() {  # the [model] section the import prints, with a [data] and [run] to export from
  sed -n '/^\[model\]/,$p' "$tmp/import.out" | grep -v '^block_size'
  printf 'block_size = 64\n[data]\npath = %s\n[run]\nout_dir = %s\n' "$tmp" "$tmp/run"
}
"$trainer" --import-hf "$tmp/hf" --out "$tmp/imp.h5" >"$tmp/import.out"
deck >"$tmp/deck.ini"
ex=("$trainer" "$tmp/deck.ini" --set checkpoint.resume="$tmp/imp.h5")
echo "hf_weights_bench: $(head -1 "$tmp/import.out" | sed 's/.*: \([0-9]* tensors, [0-9]* parameters\).*/\1/'), $rounds round(s), in $tmp, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-22s %8s %8s %8s %10s\n' command wall_s user_s sys_s peak_MB
for _ in $(seq $rounds); do
  measure "--import-hf" "$trainer" --import-hf "$tmp/hf" --out "$tmp/imp.h5"
  measure "--export-hf fp32" "${ex[@]}" --export-hf "$tmp/f32"
  measure "--export-hf bf16" "${ex[@]}" --export-hf "$tmp/bf16" --set checkpoint.export_dtype=bf16
  measure "--export fp32" "${ex[@]}" --export "$tmp/one.safetensors"
done
ok=1
for d in bf16 f32; do
  "$trainer" --import-hf "$tmp/$d" --out "$tmp/back-$d.h5" >/dev/null
  h5diff -q "$tmp/imp.h5" "$tmp/back-$d.h5" /model /model || { echo "FAIL: the $d export imports to other tensors"; ok=0; }
done
[ $ok = 1 ] && echo "# PASS (the exports import back to the same checkpoint tensors)" || { echo "# FAIL"; exit 1; }
