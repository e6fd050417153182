#!/usr/bin/env bash
# tools.sh MPIRUN SOURCE_DIR (mpirun is the one on PATH, as the tools use it): the scaling-study driver, the metrics plotter and the cost
# report on real runs of the shipped example: scaling.csv has a row per rank count with
# speedup and efficiency computed from the runs' own summaries, the PNGs are PNGs, the cost
# report's device-hours and cost equal ranks x wall / 3600 x price, and the cheapest
# configuration within a target time is chosen right on a hand-made scaling table.
set -u
src=$2
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

out=$($py tools/scaling_study.py inputs/mnist_mlp.ini --ranks 1 2 --steps 20 --out "$tmp/s" \
  --mpirun-args "--oversubscribe --bind-to none" 2>&1)
check "scaling study exits 0" test $? -eq 0
echo "$out" | tail -4
check "scaling.csv: one row per rank count" test "$(tail -n +2 "$tmp/s/scaling.csv" | wc -l)" -eq 2
check "speedup and efficiency follow from the runs' summaries" $py - "$tmp/s" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/scaling.csv")))
s1 = json.load(open(d + "/np1/summary.json"))["steady_samples_per_s"]
s2 = json.load(open(d + "/np2/summary.json"))["steady_samples_per_s"]
assert abs(float(rows[1]["speedup"]) - s2 / s1) < 1e-9 and abs(float(rows[1]["efficiency"]) - s2 / s1 / 2) < 1e-9
PY
check "scaling.png is a PNG" png "$tmp/s/scaling.png"

$py tools/plot_metrics.py "$tmp/s/np2/metrics.csv" --out "$tmp/m.png" >/dev/null
check "metrics plot is a PNG" png "$tmp/m.png"
# The same rows with GPU telemetry filled in (as a GPU run writes them): a fourth panel.
$py - "$tmp/s/np2/metrics.csv" "$tmp/gpu-metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for i, r in enumerate(rows):
    r.update(gpu_util_pct_min=str(60 + i), gpu_util_pct_mean=str(70 + i), gpu_util_pct_max=str(80 + i))
w = csv.DictWriter(open(sys.argv[2], "w"), fieldnames=list(rows[0]))
w.writeheader()
w.writerows(rows)
PY
$py tools/plot_metrics.py "$tmp/gpu-metrics.csv" --out "$tmp/g.png" >/dev/null
check "metrics plot with GPU utilization is a PNG, wider than without" $py -c "
import struct, sys
w = lambda f: struct.unpack('>I', open(f, 'rb').read()[16:20])[0]
sys.exit(0 if w('$tmp/g.png') > w('$tmp/m.png') else 1)"
err=$($py tools/plot_metrics.py "$tmp/nothing.csv" 2>&1)
check "metrics plot of a missing file: non-zero exit naming it" test $? -ne 0 -a -n "$(grep nothing.csv <<<"$err")"

out=$($py tools/cost_report.py --price 2.5 --summary "$tmp/s/np2/summary.json" --samples-per-epoch 5120 2>&1)
check "cost report per run: device-hours and cost from ranks x wall x price" $py - "$tmp/s/np2/summary.json" "$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
line = [l for l in sys.argv[2].splitlines() if "summary.json" in l][0].split()
dh, cost, per_epoch = float(line[3]), float(line[4]), float(line[5])
assert abs(dh - s["ranks"] * s["wall_s"] / 3600) < 1e-5, (dh, s)
assert abs(cost - dh * 2.5) < 1e-4 and abs(per_epoch - cost / (s["steps"] * s["global_batch"] / 5120)) < 1e-4
PY
check "cost report of a CPU run without RAPL: no energy (-)" test "$(grep summary.json <<<"$out" | awk '{print $7}')" = "-"
# A GPU run: 4 ranks sharing 2 GPUs for an hour (2 GPU-hours), 1.5 kWh on the GPUs, no RAPL.
printf '{"steps": 100, "global_batch": 512, "ranks": 4, "wall_s": 3600, "gpu_hours": 2.0, "gpu_energy_kwh": 1.5, "cpu_energy_kwh": null}' \
  >"$tmp/gpu-summary.json"
out=$($py tools/cost_report.py --price 3 --price-per-kwh 0.2 --summary "$tmp/gpu-summary.json")
echo "$out"
check "cost report of a GPU run: GPU-hours, energy and its cost" test \
  "$(grep summary.json <<<"$out" | awk '{print $4, $5, $7, $8}')" = "2.00000 6.0000 1.500000 0.3000"
printf 'ranks,samples_per_s\n1,100\n2,190\n4,300\n' >"$tmp/table.csv"
out=$($py tools/cost_report.py --price 1 --scaling "$tmp/table.csv" --samples-per-epoch 36000 --epochs 1 --target-hours 0.06)
echo "$out" | tail -5
check "cheapest within 0.06 h: 2 ranks (1 rank is too slow, 4 cost more)" grep -q "cheapest within 0.06 h: 2 rank(s), 0.0526 h, cost 0.1053" <<<"$out"
out=$($py tools/cost_report.py --price 1 --scaling "$tmp/table.csv" --samples-per-epoch 36000 --epochs 1 --target-hours 0.01)
check "no configuration fast enough: said so" grep -q "no configuration finishes within 0.01 h" <<<"$out"
# ---- The scaling planner ----
# A hand-made 1-rank summary: 256 samples in 0.256 s, 1 M parameters, momentum; link 0 us + 1 GB/s,
# 10 GB/s memory, half the allreduce hidden. At 2 ranks: compute (0.256 - 0.002) / 2 = 0.127 s,
# update 4 MB x 5 / 10 GB/s = 0.002 s, allreduce 2 x 1/2 x 4 MB / 1 GB/s = 0.004 s, half exposed:
# 131.00 ms; sharded: update 0.001 s, all-gather 0.002 s more: 132.00 ms.
cat >"$tmp/one.json" <<'JSON'
{"global_batch": 256, "ranks": 1, "steady_samples_per_s": 1000, "parameters": 1000000,
 "optimizer_state_bytes_per_rank": 4000000, "comm_wait_s_per_step": 0, "buckets": 1}
JSON
out=$($py tools/scaling_plan.py --summary "$tmp/one.json" --ranks 1,2 --link 0,1 --hidden 0.5 2>&1)
echo "$out" | tail -3
check "planner: 2 ranks predicted from the model (131.00 ms per step)" grep -qE '^ +2 +1 +128 +131\.00 ' <<<"$out"
out=$($py tools/scaling_plan.py --summary "$tmp/one.json" --ranks 2 --link 0,1 --hidden 0.5 --shard-optimizer 2>&1)
check "planner: sharded optimizer (132.00 ms)" grep -qE '^ +2 +1 +128 +132\.00 ' <<<"$out"
# Two nodes, one rank each, the network fitted from an allreduce-bench table of 0 us + 1 GB/s
# (what tools/bench/multinode_plan.sh measures between two hosts): the same 131.00 ms.
for b in 4096 65536 1048576 4194304; do
  printf '%12d %10d %12.1f 1.00 1.00 %12.1f 1.00 1.00 1.00x OK\n' $b $((b / 4)) "$(awk -v b=$b 'BEGIN {print b / 1000}')" 1.0
done >"$tmp/net.txt"
out=$($py tools/scaling_plan.py --summary "$tmp/one.json" --ranks 2 --ranks-per-node 1 --link 5,1 --network "$tmp/net.txt" \
  --hidden 0.5 2>&1)
check "planner: the network fitted from an allreduce-bench table (131.00 ms on 2 nodes)" \
  grep -qE '^ +2 +2 +128 +131\.00 ' <<<"$out"
out=$($py tools/scaling_plan.py --summary "$tmp/s/np1/summary.json" --ranks 1,2 --check "$tmp/s/np2/summary.json" \
  --tolerance 10 2>&1)
check "planner on the study's runs: measures the link, compares with the 2-rank run" \
  grep -qE '^check: 2 ranks predicted [0-9.]+ ms per step, measured [0-9.]+ ms' <<<"$out"
out=$($py tools/scaling_plan.py --summary "$tmp/nothing.json" 2>&1)
check "planner: a missing summary is one line, exit 2" test $? -eq 2 -a -n "$(grep 'nothing.json: cannot read' <<<"$out")"
# --deck: GPT-2 124M on llm.c shards (600,000 ids: 585 windows of 1024). One rank's step =
# (6 x 124475904 + 12 x 12 x 768 x 1024) x 524288 FLOPs / (989e12 x 0.4) + the AdamW update,
# 4 x 124475904 x 7 bytes / 3350 GB/s: 1139.08 + 0.93 = 1140.01 ms (the table rounds to 2 places).
mkdir -p "$tmp/fw" && tests/reference/llmc_write_datafile.py "$tmp/fw/s_train_0.bin" gpt-2 0 600000
out=$($py tools/scaling_plan.py --deck inputs/gpt2_124m.ini --set data.path="$tmp/fw" --ranks 1,8 2>&1)
want=$($py -c "print('%.2f' % (1e3 * ((6 * 124475904 + 12 * 12 * 768 * 1024) * 524288 / (989e12 * 0.4) + 4 * 124475904 * 7 / 3350e9)))")
check "planner --deck: one H100's step of the GPT-2 124M deck at 40% MFU ($want ms)" \
  grep -qE "^ +1 +1 +512 +$want " <<<"$out"
check "... and 8 GPUs of a node (64 windows each)" grep -qE "^ +8 +1 +64 +[0-9.]+ " <<<"$out"
# --layouts (tools/layout_plan.py): the 1-rank row is --dry-run's peak per rank plus the 16-bit
# scratch allowance (twice the largest layer, the 38,633,472-row-by-width embedding, in float32);
# 8 ranks with the optimizer sharded hold 1/8 of AdamW's 949.7 MiB; 8-way tensor parallelism holds
# the position table whole (1024 x 768 = 786,432) and 1/8 of the other 123,689,472 of the
# 124,475,904 parameters (the token table and head vocabulary-parallel): 16,247,616, in float32
# and bf16 (0.09 GiB), their float32 gradients (0.06) and AdamW's two moments (0.12).
# (The deck's [train] loss_chunk off first: the logits and their gradient in the peak.)
out=$($py tools/scaling_plan.py --deck inputs/gpt2_124m.ini --set data.path="$tmp/fw" --set train.loss_chunk=0 \
  --ranks 1,8 --layouts 2>&1)
peak=$("$HPCTRAIN_BUILD_DIR/trainer" inputs/gpt2_124m.ini --dry-run --set data.path="$tmp/fw" --set train.loss_chunk=0 \
  --set run.out_dir="$tmp/dry" 2>&1 |
  sed -n 's/^Peak per rank: about .* MiB (\([0-9]*\) bytes).*/\1/p')
want=$($py -c "print('%.2f' % ((${peak:-0} + 2 * 38633472 * 4) / 2**30))")
check "planner --layouts: one rank's memory is --dry-run's peak plus the 16-bit scratch ($want GiB)" \
  grep -qE "^ +1 +1 +1 none +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +$want +yes " <<<"$out"
# loss_chunk = 1024 (the deck has 4096): no logits in --dry-run's peak (about half of it), and the planner
# adds lm_head's two float32 chunks of 1024 rows of the 50,304-row vocabulary.
chunk_out=$($py tools/scaling_plan.py --deck inputs/gpt2_124m.ini --set data.path="$tmp/fw" --set train.loss_chunk=1024 \
  --ranks 1,8 --layouts 2>&1)
chunked=$("$HPCTRAIN_BUILD_DIR/trainer" inputs/gpt2_124m.ini --dry-run --set data.path="$tmp/fw" \
  --set train.loss_chunk=1024 --set run.out_dir="$tmp/dry" 2>&1 |
  sed -n 's/^Peak per rank: about .* MiB (\([0-9]*\) bytes).*/\1/p')
want=$($py -c "print('%.2f' % ((${chunked:-0} + 2 * 38633472 * 4 + 2 * 4 * 1024 * 50304) / 2**30))")
check "... with loss_chunk = 1024: --dry-run's peak ($chunked bytes, ${peak} without) plus the scratch and two chunks ($want GiB)" \
  test "${chunked:-0}" -gt 0 -a "${chunked:-0}" -lt "${peak:-0}" -a -n "$(grep -E "^ +1 +1 +1 none +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +$want +" <<<"$chunk_out")"
# --dry-run reads shapes only: Llama 3.2 1B's deck (4.6 GB of float32 parameters) in under 256 MB
# of memory (it allocated parameters and gradients before: 8.4 GB and 35 s here, 2026-12-05).
rss=$($py -c "
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if r.returncode == 0 else -1)" \
  "$HPCTRAIN_BUILD_DIR/trainer" inputs/llama_1b.ini --dry-run --set data.path="$tmp/fw" --set model.vocab_size=50257 \
  --set run.out_dir="$tmp/dry")
check "--dry-run of inputs/llama_1b.ini exits 0 in under 256 MB (${rss} MB)" test "${rss:--1}" -ge 0 -a "${rss:--1}" -lt 256
check "... 8 ranks sharding AdamW's state hold 0.12 GiB of it each" grep -qE "^ +8 +1 +8 optimizer +0.70 +0.46 +0.12 " <<<"$out"
check "... 8-way tensor parallelism holds 0.09 GiB of parameters and copy, 0.06 of gradients, 0.12 of state" \
  grep -qE "^ +8 +8 +1 none +0.09 +0.06 +0.12 " <<<"$out"
check "... which the trainer cannot run: 8 does not divide GPT-2's 12 heads" \
  grep -qE "^ +8 +8 +1 none .*T does not divide the heads, vocabulary or positions" <<<"$out"
check "... while 2 does" grep -qE "^ +8 +2 +4 gradients .* runs" <<<"$out"
out=$($py tools/scaling_plan.py --deck inputs/gpt2_124m.ini --set data.path="$tmp/fw" --ranks 1,8 --layouts --device-memory 20 2>&1)
check "... on a 20 GiB device one rank does not fit and tensor parallelism does" \
  test -n "$(grep -E '^ +1 +1 +1 none .* no ' <<<"$out")" -a -n "$(grep -E '^ +8 +4 +2 optimizer .* yes ' <<<"$out")"
check "... and the fastest fitting layout is named" grep -q "fastest that fits" <<<"$out"
# --check-memory against a run: a 1-layer GPT at 2 ranks with the optimizer sharded; its peak
# doubled is a FAIL (the check can fail).
cat >"$tmp/tiny.ini" <<INI
[data]
path = $tmp/fw
[model]
arch = gpt
n_layer = 1
n_head = 2
n_embd = 32
block_size = 16
[train]
global_batch = 4
steps = 2
eval_every = 0
[optim]
name = adamw
[checkpoint]
every_steps = 0
INI
"$1" -q -np 2 --oversubscribe --bind-to none "$HPCTRAIN_BUILD_DIR/trainer" "$tmp/tiny.ini" --set run.out_dir="$tmp/tiny" \
  --set parallel.shard=optimizer >/dev/null 2>&1
out=$($py tools/scaling_plan.py --deck "$tmp/tiny.ini" --ranks 1 --check-memory "$tmp/tiny/summary.json" 2>&1)
check "planner --check-memory: a measured 2-rank sharded run's peak within 15% ($(grep -o '[-+][0-9.]*%' <<<"$out"))" \
  grep -qE "^check-memory: 2 rank\(s\) \(tensor_parallel 1\), shard optimizer: .* -> PASS" <<<"$out"
$py -c "import json; s = json.load(open('$tmp/tiny/summary.json')); s['peak_bytes_per_rank'] *= 2; json.dump(s, open('$tmp/double.json', 'w'))"
out=$($py tools/scaling_plan.py --deck "$tmp/tiny.ini" --ranks 1 --check-memory "$tmp/double.json" 2>&1)
check "... and a peak twice as large fails it (exit 1)" test $? -eq 1 -a -n "$(grep -- '-> FAIL' <<<"$out")"
# ... and a tensor-parallel run (T = 2 on 2 ranks: the blocks and the vocabulary split; the
# vocabulary padded to 64 rows so that it splits).
"$1" -q -np 2 --oversubscribe --bind-to none "$HPCTRAIN_BUILD_DIR/trainer" "$tmp/tiny.ini" --set run.out_dir="$tmp/tiny_tp" \
  --set parallel.tensor_parallel=2 --set model.vocab_multiple=64 >/dev/null 2>&1
out=$($py tools/scaling_plan.py --deck "$tmp/tiny.ini" --set model.vocab_multiple=64 --ranks 1 \
  --check-memory "$tmp/tiny_tp/summary.json" 2>&1)
check "planner --check-memory: a measured tensor_parallel = 2 run's peak within 15% ($(grep -o '[-+][0-9.]*%' <<<"$out"))" \
  grep -qE "^check-memory: 2 rank\(s\) \(tensor_parallel 2\), shard none: .* -> PASS" <<<"$out"
# ... and with sequence parallelism (the norms', residuals' and their gradients' positions split too).
"$1" -q -np 2 --oversubscribe --bind-to none "$HPCTRAIN_BUILD_DIR/trainer" "$tmp/tiny.ini" --set run.out_dir="$tmp/tiny_sp" \
  --set parallel.tensor_parallel=2 --set parallel.sequence_parallel=true --set model.vocab_multiple=64 >/dev/null 2>&1
out=$($py tools/scaling_plan.py --deck "$tmp/tiny.ini" --set model.vocab_multiple=64 --ranks 1 \
  --check-memory "$tmp/tiny_sp/summary.json" 2>&1)
check "planner --check-memory: a measured sequence-parallel T = 2 run's peak within 15% ($(grep -o '[-+][0-9.]*%' <<<"$out"))" \
  grep -qE "^check-memory: 2 rank\(s\) \(tensor_parallel 2, sequence-parallel\), shard none: .* -> PASS" <<<"$out"
out=$($py tools/scaling_plan.py --deck inputs/mnist_mlp.ini --set data.path="$tmp/fw" 2>&1)
check "planner --deck of a deck that is not arch = gpt: one line, exit 2 ($out)" \
  test $? -eq 2 -a "$(wc -l <<<"$out")" = 1

finish
