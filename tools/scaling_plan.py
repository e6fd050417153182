#!/usr/bin/env python3
"""Predict a data-parallel run's step time, throughput, efficiency and cost at N ranks.

From one measured run's summary.json (a 1-rank run at the per-rank batch and thread count the
ranks will have: the machine's scaling roof), the model's gradient bytes (4 x parameters, in
summary.json) and the link between ranks (latency and bandwidth: measured here with
allreduce-bench, or given), it predicts for each rank count of a global batch B:

  step(N) = compute(N) + update(N) + exposed communication(N)
  compute(N) = (t1 - update(1)) * (B / N) / b1      (per-rank batch; b1 the measured run's)
  update(N)  = state bytes touched per step / memory bandwidth   (/ N with --shard-optimizer)
  allreduce  = 2 (N-1)/N * G * beta + 2 log2(N) * alpha * buckets     (ring volume, tree latency)
  exposed    = allreduce * (1 - hidden)           (hidden: the share backward hides, --hidden; by
                                                   default 0 with one gradient bucket, else 0.5)
             + with --shard-optimizer the parameters' all-gather, (N-1)/N * G * beta, not hidden
  across nodes: the hierarchical scheme (node-shared memory, then the nodes' first ranks over
  the network): the network term uses the nodes' count and the network's alpha, beta.

Prints an aligned table (ranks, nodes, per-rank batch, step ms, samples/s, efficiency against N x
the 1-rank rate, cost per million samples) and, with --check SUMMARY.json of a measured N-rank
run, the prediction against it (PASS within --tolerance, default 15%).

  tools/scaling_plan.py --summary runs/one/summary.json --ranks 1,2,4,8 [--global-batch B] [--ranks-per-node 2]
      [--link shm|measure|ALPHA_US,GBPS] [--network ALPHA_US,GBPS|BENCH_OUTPUT] [--shard-optimizer]
      [--memory-bandwidth GBPS] [--hidden H] [--price-per-device-hour P] [--check S.json]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys


def fail(msg):
    print("scaling_plan: error: " + msg, file=sys.stderr)
    sys.exit(2)


def load_summary(path):
    try:
        with open(path) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: cannot read it as summary.json (%s)" % (path, e))
    for key in ("global_batch", "ranks", "steady_samples_per_s", "parameters"):
        if key not in s:
            fail("%s: no '%s' (a summary.json of a run of this version)" % (path, key))
    if s["steady_samples_per_s"] <= 0:
        fail("%s: steady_samples_per_s is %s (the run was too short to time)" % (path, s["steady_samples_per_s"]))
    return s


def fit_link(rows):
    """Least squares of time = alpha + bytes * beta over (bytes, seconds) rows."""
    n = len(rows)
    sx = sum(b for b, _ in rows)
    sy = sum(t for _, t in rows)
    sxx = sum(b * b for b, _ in rows)
    sxy = sum(b * t for b, t in rows)
    beta = (n * sxy - sx * sy) / max(n * sxx - sx * sx, 1e-30)
    alpha = max((sy - beta * sx) / n, 0.0)
    return alpha, max(beta, 1e-15)


def measure_link(root, scheme):
    """alpha (s), beta (s/byte) of a 2-rank in-place allreduce from allreduce-bench's table."""
    bench = os.path.join(os.environ.get("HPCTRAIN_BUILD_DIR") or os.path.join(root, "build"), "allreduce-bench")
    if not os.access(bench, os.X_OK):
        fail("%s not built (cmake --build build)" % bench)
    cmd = ["mpirun", "-q", "-np", "2", "--oversubscribe", "--bind-to", "none", bench]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail("allreduce-bench failed: " + (out.stderr or out.stdout).strip().splitlines()[-1])
    return link_from_table(out.stdout, scheme, "allreduce-bench")


def link_from_table(text, scheme, where):
    """alpha, beta fitted to a 2-rank allreduce-bench table (its mpi or shm column)."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 9 and re.fullmatch(r"\d+", f[0]):
            us = float(f[5] if scheme == "shm" else f[2])
            # A 2-rank allreduce moves 2 (N-1)/N = 1 x the bytes: time = alpha + bytes * beta.
            rows.append((float(f[0]), us * 1e-6))
    if len(rows) < 3:
        fail("%s: no allreduce-bench table (run it with 2 ranks, one per node)" % where)
    return fit_link(rows)


def parse_pair(text, what):
    try:
        a, b = (float(x) for x in text.split(","))
        return a * 1e-6, 1.0 / (b * 1e9)
    except ValueError:
        fail("%s '%s': give ALPHA_US,GBPS (latency in microseconds, bandwidth in GB/s)" % (what, text))


def predict(s, n, a):
    """Step seconds at n ranks for global batch a.global_batch (default: the measured run's)."""
    B, r1 = a.global_batch, s["ranks"]
    b1 = s["global_batch"] / r1  # the measured run's per-rank batch
    t1 = s["global_batch"] / s["steady_samples_per_s"]
    p = s["parameters"]
    g = 4.0 * p  # gradient bytes
    # Optimizer state blocks per parameter (momentum 1, Adam 2; frozen layers none): from the run.
    state_blocks = s.get("optimizer_state_bytes_per_rank", g) / g * (r1 if s.get("shard_optimizer") else 1)
    touched = 4.0 * p * (3 + 2 * state_blocks)  # read w, g, state; write w, state
    update1 = touched / (a.memory_bandwidth * 1e9)
    compute = max(t1 - update1 - s.get("comm_wait_s_per_step", 0.0), 1e-9) * (B / n) / b1
    update = update1 / n if a.shard_optimizer else update1
    per_node = max(1, min(a.ranks_per_node, n))
    nodes = math.ceil(n / per_node)
    buckets = max(1, s.get("buckets", 1))

    def allreduce(ranks, alpha, beta):
        if ranks <= 1:
            return 0.0
        return 2 * (ranks - 1) / ranks * g * beta + 2 * math.log2(ranks) * alpha * buckets

    comm = allreduce(per_node, a.alpha, a.beta) + allreduce(nodes, a.net_alpha, a.net_beta)
    exposed = comm * (1 - a.hidden)
    if a.shard_optimizer and n > 1:  # the all-gather after the update is not hidden
        exposed += (n - 1) / n * g * (a.beta if nodes == 1 else a.net_beta)
    return compute + update + exposed, nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summary", required=True, help="summary.json of a measured run (1 rank: the roof's job)")
    ap.add_argument("--ranks", default="1,2,4,8,16")
    ap.add_argument("--ranks-per-node", type=int, default=2)
    ap.add_argument("--link", default="measure", help="shm | mpi (measured) | ALPHA_US,GBPS")
    ap.add_argument("--network", default="20,10",
                    help="between nodes: ALPHA_US,GBPS (default 20 us, 10 GB/s), or a file holding the output of "
                         "allreduce-bench run with 2 ranks on 2 nodes (its mpi column is fitted)")
    ap.add_argument("--shard-optimizer", action="store_true")
    ap.add_argument("--memory-bandwidth", type=float, default=10.0, help="GB/s one rank's update streams at")
    ap.add_argument("--hidden", type=float,
                    help="share of the allreduce backward hides (0-1; default: 0 when the measured run had one "
                         "gradient bucket, which is ready only when backward ends, else 0.5)")
    ap.add_argument("--global-batch", type=int, help="of the planned runs (default: the measured run's)")
    ap.add_argument("--price-per-device-hour", type=float, default=0.0)
    ap.add_argument("--check", help="summary.json of a measured N-rank run: compare")
    ap.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args()
    s = load_summary(a.summary)
    a.global_batch = a.global_batch or s["global_batch"]
    try:
        ranks = [int(x) for x in a.ranks.split(",")]
    except ValueError:
        fail("--ranks '%s': give a comma-separated list of rank counts" % a.ranks)
    if a.hidden is None:
        a.hidden = 0.0 if s.get("buckets", 1) <= 1 else 0.5
    if not 0 <= a.hidden <= 1:
        fail("--hidden %s: give a share between 0 and 1" % a.hidden)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if a.link in ("measure", "shm", "mpi"):
        a.alpha, a.beta = measure_link(root, "mpi" if a.link == "mpi" else "shm")
        how = "measured (allreduce-bench, 2 ranks, %s)" % ("MPI" if a.link == "mpi" else "node-shared memory")
    else:
        a.alpha, a.beta = parse_pair(a.link, "--link")
        how = "given"
    if os.path.isfile(a.network):
        with open(a.network) as f:
            a.net_alpha, a.net_beta = link_from_table(f.read(), "mpi", "--network " + a.network)
    else:
        a.net_alpha, a.net_beta = parse_pair(a.network, "--network")
    print("scaling_plan: %s: %d parameters (%.1f MiB of gradients), measured %.0f samples/s on %d rank(s) at "
          "global batch %d; planned global batch %d" % (a.summary, s["parameters"], 4 * s["parameters"] / 2**20,
                                                       s["steady_samples_per_s"], s["ranks"], s["global_batch"],
                                                       a.global_batch))
    print("link within a node %s: %.1f us + %.2f GB/s; between nodes %.1f us + %.2f GB/s; hidden %.0f%%; "
          "optimizer %s" % (how, a.alpha * 1e6, 1e-9 / a.beta, a.net_alpha * 1e6, 1e-9 / a.net_beta, 100 * a.hidden,
                           "sharded" if a.shard_optimizer else "whole on every rank"))
    base = s["steady_samples_per_s"] / s["ranks"]  # per rank, at the measured run's per-rank batch
    B = a.global_batch
    print("%6s %6s %10s %10s %12s %11s %16s" % ("ranks", "nodes", "batch/rank", "step ms", "samples/s",
                                                "efficiency", "cost/1M samples"))
    for n in ranks:
        t, nodes = predict(s, n, a)
        rate = B / t
        cost = t * n * a.price_per_device_hour / 3600 / B * 1e6
        print("%6d %6d %10.0f %10.2f %12.0f %10.1f%% %16s" % (n, nodes, B / n, 1e3 * t, rate,
                                                               100 * rate / (n * base),
                                                               "%.4f" % cost if a.price_per_device_hour else "-"))
    if a.check:
        c = load_summary(a.check)
        if c["global_batch"] != B:
            fail("--check %s: global batch %d, not the planned %d (--global-batch)" % (a.check, c["global_batch"], B))
        t, _ = predict(s, c["ranks"], a)
        measured = c["global_batch"] / c["steady_samples_per_s"]
        err = (t - measured) / measured
        ok = abs(err) <= a.tolerance
        print("check: %d ranks predicted %.2f ms per step, measured %.2f ms (%s): %+.1f%% -> %s" %
              (c["ranks"], 1e3 * t, 1e3 * measured, a.check, 100 * err, "PASS" if ok else "FAIL"))
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
