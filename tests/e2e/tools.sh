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
printf 'ranks,samples_per_s\n1,100\n2,190\n4,300\n' >"$tmp/table.csv"
out=$($py tools/cost_report.py --price 1 --scaling "$tmp/table.csv" --samples-per-epoch 36000 --epochs 1 --target-hours 0.06)
echo "$out" | tail -5
check "cheapest within 0.06 h: 2 ranks (1 rank is too slow, 4 cost more)" grep -q "cheapest within 0.06 h: 2 rank(s), 0.0526 h, cost 0.1053" <<<"$out"
out=$($py tools/cost_report.py --price 1 --scaling "$tmp/table.csv" --samples-per-epoch 36000 --epochs 1 --target-hours 0.01)
check "no configuration fast enough: said so" grep -q "no configuration finishes within 0.01 h" <<<"$out"
finish
