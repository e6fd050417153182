#!/usr/bin/python3
"""What a run cost, and the cheapest configuration that meets a target time.

    tools/cost_report.py --price 2.50 --summary runs/a/summary.json [runs/b/summary.json ...]
                         [--samples-per-epoch 60000] [--price-per-kwh 0.30]
    tools/cost_report.py --price 2.50 --scaling runs/scaling/scaling.csv
                         --samples-per-epoch 60000 --epochs 10 [--target-hours 0.5]

--price is per device-hour (a GPU, or a CPU rank). Per run (summary.json): device-hours = the
run's GPU-hours (gpu_hours: each GPU counted once, however many ranks share it) on GPUs, else
ranks x wall time; cost = device-hours x price, and per epoch when the epoch size is given.
Energy: the GPUs' (NVML) plus the CPU packages' (RAPL), each where the run measured it ("-"
where it measured neither), and its cost at --price-per-kwh.
From a scaling study (tools/scaling_study.py): for every rank count, the time the job would
take at the measured steady throughput, its device-hours and cost, and which is the cheapest
that finishes within --target-hours.
"""
import argparse
import csv
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--price", type=float, required=True, help="price per device-hour")
    p.add_argument("--summary", nargs="+", default=[])
    p.add_argument("--scaling")
    p.add_argument("--samples-per-epoch", type=float)
    p.add_argument("--epochs", type=float)
    p.add_argument("--target-hours", type=float)
    p.add_argument("--price-per-kwh", type=float, help="price of energy, for the energy cost column")
    a = p.parse_args()
    if a.price <= 0:
        sys.exit("cost_report: --price must be > 0")
    if not a.summary and not a.scaling:
        sys.exit("cost_report: give --summary files and/or --scaling")
    if a.summary:
        print("%-40s %6s %10s %12s %10s %14s %12s %12s" % ("run", "ranks", "wall s", "device-h", "cost", "cost/epoch",
                                                         "energy kWh", "energy cost"))
        for path in a.summary:
            try:
                s = json.load(open(path))
            except (OSError, ValueError) as e:
                sys.exit("cost_report: %s: %s" % (path, e))
            gpu_hours = s.get("gpu_hours")  # (absent from older summaries; null on the CPU)
            dh = gpu_hours if gpu_hours is not None else s["ranks"] * s["wall_s"] / 3600.0
            cost = dh * a.price
            per_epoch = "-"
            if a.samples_per_epoch:
                epochs = s["steps"] * s["global_batch"] / a.samples_per_epoch
                per_epoch = "%.4f" % (cost / epochs) if epochs > 0 else "-"
            parts = [s.get(k) for k in ("gpu_energy_kwh", "cpu_energy_kwh") if s.get(k) is not None]
            kwh = "%.6f" % sum(parts) if parts else "-"
            kwh_cost = "%.4f" % (sum(parts) * a.price_per_kwh) if parts and a.price_per_kwh else "-"
            print("%-40s %6d %10.1f %12.5f %10.4f %14s %12s %12s" % (path[-40:], s["ranks"], s["wall_s"], dh, cost,
                                                                     per_epoch, kwh, kwh_cost))
    if a.scaling:
        if not (a.samples_per_epoch and a.epochs):
            sys.exit("cost_report: --scaling needs --samples-per-epoch and --epochs")
        rows = list(csv.DictReader(open(a.scaling)))
        if not rows:
            sys.exit("cost_report: %s has no rows" % a.scaling)
        samples = a.samples_per_epoch * a.epochs
        print("\n%.0f epochs of %.0f samples at %.2f per device-hour:" % (a.epochs, a.samples_per_epoch, a.price))
        print("%6s %12s %10s %12s %10s %8s" % ("ranks", "samples/s", "hours", "device-h", "cost", "target"))
        best = None
        for r in rows:
            n, sps = int(r["ranks"]), float(r["samples_per_s"])
            hours = samples / sps / 3600.0
            cost = hours * n * a.price
            meets = a.target_hours is None or hours <= a.target_hours
            if meets and (best is None or cost < best[1]):
                best = (n, cost, hours)
            print("%6d %12.0f %10.4f %12.5f %10.4f %8s" % (n, sps, hours, hours * n, cost, "yes" if meets else "no"))
        if best:
            print("cheapest%s: %d rank(s), %.4f h, cost %.4f" % (
                " within %.4g h" % a.target_hours if a.target_hours else "", best[0], best[2], best[1]))
        else:
            print("no configuration finishes within %.4g h" % a.target_hours)


if __name__ == "__main__":
    main()
