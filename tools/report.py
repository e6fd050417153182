#!/usr/bin/python3
"""report.py RUN_DIR [--out FILE]: one self-contained HTML page of a run, for people without
TensorBoard: the plots of tools/plot_metrics.py (inline SVG), summary.json as a table and the
configuration the run used (config.ini). No scripts, no style sheets or fonts from elsewhere, no
network: the file opens anywhere, mailed or copied off a cluster.

    tools/report.py runs/shakespeare_gpt              # writes runs/shakespeare_gpt/report.html

RUN_DIR is a run's [run] out_dir: metrics.csv (needed), summary.json and config.ini (shown when
there; a run still going has no summary yet).
"""
import argparse
import html
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_metrics  # noqa: E402

STYLE = """body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
td { border-bottom: 1px solid #ddd; padding: 0.15em 1em 0.15em 0; }
td.v { text-align: right; font-family: monospace; }
pre { background: #f6f6f6; padding: 0.8em; font-size: 0.85em; overflow-x: auto; }
svg { max-width: 100%; height: auto; }"""

# summary.json's fields shown first (the rest follow in file order).
FIRST = ["run_id", "started_at", "deck", "steps", "total_steps", "ranks", "wall_s", "final_train_loss",
         "final_eval_split", "final_eval_loss", "final_eval_accuracy", "final_eval_perplexity", "final_eval_bits_per_byte",
         "steady_samples_per_s",
         "steady_tokens_per_s", "steady_model_flops_per_s", "peak_bytes_per_rank", "rank_hours", "cost"]


def svg_of(rows, title):
    """The metrics figure as an <svg> element (no XML declaration, no DOCTYPE)."""
    import matplotlib
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as <text> (searchable, smaller), not glyph paths
    buf = io.StringIO()
    plot_metrics.figure(rows, title).savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def summary_table(summary):
    keys = [k for k in FIRST if k in summary] + [k for k in summary if k not in FIRST]
    cells = []
    for k in keys:
        v = summary[k]
        shown = "null" if v is None else ("%.6g" % v if isinstance(v, float) else str(v))
        cells.append("<tr><td>%s</td><td class=\"v\">%s</td></tr>" % (html.escape(k), html.escape(shown)))
    return "<table>\n" + "\n".join(cells) + "\n</table>"


def page(run_dir, rows, summary, ini):
    name = os.path.basename(os.path.normpath(run_dir))
    title = "hpctrain run %s" % name
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>%s</title>" % html.escape(title), "<style>%s</style></head><body>" % STYLE,
             "<h1>%s</h1>" % html.escape(title)]
    if summary:
        parts.append("<p>%s, started %s, %s steps on %s rank(s)</p>" % tuple(
            html.escape(str(summary.get(k, "?"))) for k in ("deck", "started_at", "steps", "ranks")))
    parts += ["<h2>Metrics</h2>", svg_of(rows, os.path.join(run_dir, "metrics.csv"))]
    parts += ["<h2>Summary</h2>", summary_table(summary) if summary else "<p>no summary.json (the run has not ended)</p>"]
    parts += ["<h2>Configuration</h2>", "<pre>%s</pre>" % html.escape(ini) if ini else "<p>no config.ini</p>"]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def read_optional(path, parse):
    try:
        with open(path) as f:
            return parse(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        sys.exit("report.py: %s: %s" % (path, e))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir")
    p.add_argument("--out", help="the HTML file (default: RUN_DIR/report.html)")
    a = p.parse_args()
    metrics = os.path.join(a.run_dir, "metrics.csv")
    if not os.path.isfile(metrics):
        sys.exit("report.py: %s: no metrics.csv: give a run's [run] out_dir" % a.run_dir)
    rows = plot_metrics.read_rows(metrics)
    summary = read_optional(os.path.join(a.run_dir, "summary.json"), json.load)
    ini = read_optional(os.path.join(a.run_dir, "config.ini"), lambda f: f.read())
    out = a.out or os.path.join(a.run_dir, "report.html")
    with open(out, "w") as f:
        f.write(page(a.run_dir, rows, summary, ini))
    print("wrote", out)


if __name__ == "__main__":
    main()
