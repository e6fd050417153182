#!/usr/bin/python3
"""Scaling study: runs one configuration at 1, 2, 4, ... ranks and collects throughput.

    tools/scaling_study.py INPUT.ini --ranks 1 2 4 [--steps 200] [--out runs/scaling]
                           [--set section.key=value ...] [--mpirun-args "--oversubscribe"]

For each rank count it runs `mpirun -np N build/trainer INPUT.ini --set train.steps=STEPS
--set run.out_dir=OUT/npN` (fresh: checkpoint.resume=none), reads OUT/npN/summary.json and
writes OUT/scaling.csv (ranks, steady samples/s, wall s, rank-hours, speedup, efficiency),
prints the table, and plots speedup and efficiency against ideal to OUT/scaling.png.
The cost report (tools/cost_report.py) reads scaling.csv.
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ini")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", default="runs/scaling")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--mpirun-args", default="--bind-to none")
    p.add_argument("--trainer", default=os.path.join(os.environ.get("HPCTRAIN_BUILD_DIR") or os.path.join(ROOT, "build"),
                                                     "trainer"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for n in a.ranks:
        out_dir = os.path.join(a.out, "np%d" % n)
        cmd = ["mpirun", "-q", "-np", str(n)] + shlex.split(a.mpirun_args) + [a.trainer, a.ini]
        for kv in a.set + ["train.steps=%d" % a.steps, "run.out_dir=" + out_dir, "checkpoint.resume=none",
                           "checkpoint.every_epochs=0", "log.log_every=100000"]:
            cmd += ["--set", kv]
        print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-2000:])
            sys.exit("scaling_study: the run at %d rank(s) failed (exit %d)" % (n, r.returncode))
        s = json.load(open(os.path.join(out_dir, "summary.json")))
        rows.append({"ranks": n, "samples_per_s": s["steady_samples_per_s"], "wall_s": s["wall_s"],
                     "rank_hours": s["rank_hours"], "steps": s["steps"], "global_batch": s["global_batch"]})
    base = rows[0]["samples_per_s"] / rows[0]["ranks"]
    for r in rows:
        r["speedup"] = r["samples_per_s"] / base
        r["efficiency"] = r["speedup"] / r["ranks"]
    path = os.path.join(a.out, "scaling.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("%6s %14s %9s %11s %11s %8s" % ("ranks", "samples/s", "wall s", "rank-hours", "speedup", "eff."))
    for r in rows:
        print("%6d %14.0f %9.2f %11.5f %10.2fx %7.0f%%" % (r["ranks"], r["samples_per_s"], r["wall_s"],
                                                           r["rank_hours"], r["speedup"], 100 * r["efficiency"]))
    plot(rows, os.path.join(a.out, "scaling.png"), os.path.basename(a.ini))
    print("wrote %s and %s" % (path, os.path.join(a.out, "scaling.png")))


def plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = [r["ranks"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.plot(n, [r["speedup"] for r in rows], "o-", label="measured")
    ax1.plot(n, [x / n[0] for x in n], "--", color="gray", label="ideal")
    ax1.set_xlabel("ranks")
    ax1.set_ylabel("speedup (samples/s over the first row, per rank)")
    ax1.legend()
    ax2.plot(n, [100 * r["efficiency"] for r in rows], "o-")
    ax2.axhline(100, ls="--", color="gray")
    ax2.set_ylim(0, 110)
    ax2.set_xlabel("ranks")
    ax2.set_ylabel("parallel efficiency (%)")
    fig.suptitle("scaling: " + title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
