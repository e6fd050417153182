#!/usr/bin/python3
"""Plots a run's metrics file against the step, to a PNG (or SVG: --out x.svg): the training and
evaluation loss; perplexity for language models, else accuracy; throughput (tokens/s for language
models, else samples/s); the learning rate; the gradient norm; memory (the host's resident set,
the GPUs' most used); and, for runs with GPU telemetry, the GPUs' utilization (least, mean, most
over the ranks).

    tools/plot_metrics.py runs/mnist_mlp/metrics.csv [--out metrics.png] [--title TEXT]

The columns are the trainer's (docs/training.md: step, epoch, wall_s, loss, accuracy,
samples_per_s, ..., lr, eval_loss, eval_accuracy, grad_norm, rss_mib, tokens_per_s, perplexity,
eval_perplexity, gpu_...); a column empty on every row (no evaluation, no GPU) draws nothing.
tools/report.py puts the same figure into a run's HTML report.
"""
import argparse
import csv
import os
import sys

NEED = {"step", "loss", "accuracy", "samples_per_s", "eval_loss", "eval_accuracy"}


def read_rows(path):
    """The metrics file's rows; exits with one line when it is not one."""
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError as e:
        sys.exit("plot_metrics: %s: %s" % (path, e.strerror))
    if not rows or not NEED <= set(rows[0]):
        sys.exit("plot_metrics: %s: not a metrics file with rows (needs columns %s)" % (path, ", ".join(sorted(NEED))))
    return rows


def series(rows, column, scale=1.0):
    """(steps, values) of the rows where `column` has a value."""
    have = [r for r in rows if r.get(column, "") != ""]
    return [int(r["step"]) for r in have], [scale * float(r[column]) for r in have]


def panels(rows):
    """[(title, [(label, column, scale, style)], log y)] for what this run logged."""
    lm = bool(series(rows, "tokens_per_s")[0])
    out = [("loss", [("train", "loss", 1, "-"), ("eval", "eval_loss", 1, "o-")], True)]
    if lm:
        out.append(("perplexity", [("train", "perplexity", 1, "-"), ("eval", "eval_perplexity", 1, "o-")], True))
        out.append(("tokens/s", [("", "tokens_per_s", 1, "-")], False))
    else:
        out.append(("accuracy (%)", [("train", "accuracy", 100, "-"), ("eval", "eval_accuracy", 100, "o-")], False))
        out.append(("samples/s", [("", "samples_per_s", 1, "-")], False))
    out.append(("learning rate", [("", "lr", 1, "-")], False))
    out.append(("gradient norm", [("", "grad_norm", 1, "-")], False))
    out.append(("memory (MiB)", [("host resident", "rss_mib", 1, "-"), ("GPU used, most", "gpu_mem_used_mib_max", 1, "-")],
                False))
    gpu = [("least", "gpu_util_pct_min", 1, "-"), ("mean", "gpu_util_pct_mean", 1, "-"),
           ("most", "gpu_util_pct_max", 1, "-")]
    if series(rows, "gpu_util_pct_mean")[0]:
        out.append(("GPU utilization (%)", gpu, False))
    return out


def figure(rows, title):
    """The matplotlib figure of a run's rows (Agg backend)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    ps = panels(rows)
    cols = 3 if len(ps) <= 6 else 4
    fig, ax = plt.subplots(2, cols, figsize=(4.2 * cols, 6.8))
    ax = ax.flatten()
    for x, (name, lines, log) in zip(ax, ps):
        drawn = 0
        for label, column, scale, style in lines:
            steps, values = series(rows, column, scale)
            if steps:
                x.plot(steps, values, style, label=label or None, markersize=3)
                drawn += 1
        if drawn and log and all(v > 0 for _, c, s, _ in lines for v in series(rows, c, s)[1]):
            x.set_yscale("log")
            for axis in (x.yaxis.set_major_formatter, x.yaxis.set_minor_formatter):  # 3.2, not 3.2 x 10^0
                axis(matplotlib.ticker.FormatStrFormatter("%.3g"))
        if drawn > 1 or (drawn == 1 and lines[0][0] and len(lines) > 1):
            x.legend()
        if not drawn:
            x.text(0.5, 0.5, "not logged", ha="center", va="center", transform=x.transAxes, color="gray")
        x.set_title(name)
        x.set_xlabel("step")
    for x in ax[len(ps):]:
        x.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics")
    p.add_argument("--out")
    p.add_argument("--title")
    a = p.parse_args()
    rows = read_rows(a.metrics)
    out = a.out or os.path.splitext(a.metrics)[0] + ".png"
    figure(rows, a.title or a.metrics).savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
