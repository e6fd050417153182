#!/usr/bin/python3
"""Plots a run's metrics file: training loss (and evaluation loss), accuracy, throughput and,
for runs with GPU telemetry, the GPUs' utilization (least, mean, most over the ranks) against
the step, to a PNG.

    tools/plot_metrics.py runs/mnist_mlp/metrics.csv [--out metrics.png] [--title TEXT]

The columns are the trainer's (docs/training.md: step, epoch, wall_s, loss, accuracy,
samples_per_s, data_wait_pct, comm_exposed_pct, lr, eval_loss, eval_accuracy, ...); evaluation
columns are empty on rows without an evaluation, GPU columns on runs without GPU telemetry.
"""
import argparse
import csv
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics")
    p.add_argument("--out")
    p.add_argument("--title")
    a = p.parse_args()
    try:
        rows = list(csv.DictReader(open(a.metrics)))
    except OSError as e:
        sys.exit("plot_metrics: %s: %s" % (a.metrics, e.strerror))
    need = {"step", "loss", "accuracy", "samples_per_s", "eval_loss", "eval_accuracy"}
    if not rows or not need <= set(rows[0]):
        sys.exit("plot_metrics: %s: not a metrics file with rows (needs columns %s)" % (a.metrics, ", ".join(sorted(need))))
    out = a.out or os.path.splitext(a.metrics)[0] + ".png"
    step = [int(r["step"]) for r in rows]
    ev = [r for r in rows if r["eval_loss"]]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    gpu = [r for r in rows if r.get("gpu_util_pct_mean")]
    fig, ax = plt.subplots(1, 4 if gpu else 3, figsize=(16 if gpu else 12, 3.4))
    ax[0].plot(step, [float(r["loss"]) for r in rows], label="train")
    if ev:
        ax[0].plot([int(r["step"]) for r in ev], [float(r["eval_loss"]) for r in ev], "o-", label="eval")
    ax[0].set_yscale("log")
    ax[0].set_title("loss")
    ax[0].legend()
    ax[1].plot(step, [100 * float(r["accuracy"]) for r in rows], label="train")
    if ev:
        ax[1].plot([int(r["step"]) for r in ev], [100 * float(r["eval_accuracy"]) for r in ev], "o-", label="eval")
    ax[1].set_title("accuracy (%)")
    ax[1].legend()
    ax[2].plot(step, [float(r["samples_per_s"]) for r in rows])
    ax[2].set_title("samples/s")
    if gpu:
        gstep = [int(r["step"]) for r in gpu]
        for stat in ("min", "mean", "max"):
            ax[3].plot(gstep, [float(r["gpu_util_pct_" + stat]) for r in gpu], label=stat)
        ax[3].set_title("GPU utilization (%)")
        ax[3].legend()
    for x in ax:
        x.set_xlabel("step")
    fig.suptitle(a.title or a.metrics)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
