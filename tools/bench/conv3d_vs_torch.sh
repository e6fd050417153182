#!/usr/bin/env bash
# tools/bench/conv3d_vs_torch.sh [--repeats N]: conv3d forward + backward at inputs/cosmoflow_32.ini's
# five shapes on one CPU thread, hpctrain (oneDNN, and the direct loops) against PyTorch eager's
# Conv3d(padding='same'), side by side in one invocation (tools/bench/conv_bench.cpp --volumes,
# tools/bench/torch_conv3d.py); best of N after a warm-up, milliseconds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}
repeats=3
[ "${1:-}" = --repeats ] && repeats=$2
ours=$("$build/conv-bench" --volumes --repeats "$repeats")
theirs=$(OMP_NUM_THREADS=1 /usr/bin/python3 "$root/tools/bench/torch_conv3d.py" --repeats "$repeats")
printf '%-24s %-16s %6s %12s %12s %12s %9s\n' "layer" "in -> out" "batch" "PyTorch ms" "oneDNN ms" "direct ms" "speed-up"
# (both list the cases, then the batches 16 and 32, in the same order)
paste <(awk '$1 == "cosmoflow_32" {print $3, $4, $6, $7, $8, $9}' <<<"$ours") <(awk '{print $3}' <<<"$theirs") |
  while read -r i in out batch direct onednn torch_ms; do
    printf '%-24s %-16s %6s %12.2f %12.2f %12.2f %8.2fx\n' "cosmoflow_32 conv3d $i" "$in -> $out" "$batch" "$torch_ms" \
      "$onednn" "$direct" "$(/usr/bin/python3 -c "print($torch_ms / $onednn)")"
  done
echo "(1 thread, float32, forward + backward; PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'); $(date -u +%Y-%m-%dT%H:%MZ))"
