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

Before any run, from a language-model deck (arch = gpt): --deck FILE [--set KEY=VALUE ...] asks
the trainer's --dry-run for the training FLOPs per step (6 N + 12 L C T per token, as llm.c
counts them) and the parameters, and takes the 1-rank step as FLOPs / (GPU peak x --mfu):
  --gpu h100|h200|a100|TFLOPS (dense bf16 peak: 989, 989, 312) --mfu 0.4 (default)
with, unless given, a GPU node's links: --link 5,300 (NVLink: 5 us, 300 GB/s bus bandwidth),
--network 20,50 (400 Gb/s InfiniBand a GPU), --ranks-per-node 8, --memory-bandwidth 3350
(HBM3), --hidden 0.5; every other term as above.
  tools/scaling_plan.py --deck inputs/gpt2_124m.ini --set data.path=fineweb10B --ranks 1,8,16,64

With --deck, --layouts also prices every tensor-parallel x data-parallel x ZeRO layout of each
rank count: the memory per rank against --device-memory (GiB; default the --gpu's) and the step,
which fit and which should be fastest (tools/layout_plan.py says how). --check-memory S.json
compares the memory it predicts for a measured run of the deck (its ranks, tensor_parallel and shard) with the
run's peak_bytes_per_rank (PASS within --tolerance).
  tools/scaling_plan.py --deck inputs/llama_1b.ini --set data.path=D --ranks 8,16 --layouts
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

import layout_plan


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


GPU_PEAK_TFLOPS = {"h100": 989.0, "h200": 989.0, "a100": 312.0}  # dense bf16, as the trainer's MFU


def deck_summary(root, a):
    """A summary.json-like dict for a deck: its 1-rank step at --mfu of the GPU's peak."""
    trainer = os.path.join(os.environ.get("HPCTRAIN_BUILD_DIR") or os.path.join(root, "build"), "trainer")
    if not os.access(trainer, os.X_OK):
        fail("%s not built (cmake --build build)" % trainer)
    cmd = [trainer, a.deck, "--dry-run"] + [x for kv in a.set for x in ("--set", kv)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail("%s --dry-run: %s" % (a.deck, ((out.stderr or out.stdout).strip().splitlines() or ["failed"])[-1]))
    m = re.search(r"^Compute: [0-9.e+]+ FLOPs per token \(6 x (\d+) parameters \+ 12 x (\d+) layers x (\d+) wide x "
                  r"(\d+) context\), [0-9.e+]+ per step of (\d+) tokens", out.stdout, re.M)
    b = re.search(r"^Batch: global (\d+) ", out.stdout, re.M)
    if not m or not b:
        fail("%s: --dry-run printed no Compute line (a deck of [model] arch = gpt)" % a.deck)
    peak = GPU_PEAK_TFLOPS.get(a.gpu.lower())
    if peak is None:
        try:
            peak = float(a.gpu)
        except ValueError:
            fail("--gpu '%s': give h100, h200, a100 or a peak in TFLOP/s" % a.gpu)
    if not 0 < a.mfu <= 1:
        fail("--mfu %s: give a share between 0 and 1" % a.mfu)
    params, layers, width, context, tokens = (int(x) for x in m.groups())
    per_token = 6.0 * params + 12.0 * layers * width * context  # (the line's figures are rounded)
    per_step = per_token * tokens
    batch = int(b.group(1))
    step = per_step / (peak * 1e12 * a.mfu)
    print("deck %s: %.3g FLOPs per token, %d parameters, %d tokens a step (%d windows); one %s at %.0f TFLOP/s "
          "x MFU %.2f: %.3f s a step on one rank; a sample is a window of %d tokens" %
          (a.deck, per_token, params, tokens, batch, a.gpu, peak, a.mfu, step, tokens // batch))
    # (update(1) is part of the measured step in --summary mode; here the step is compute alone,
    # so the update is added back in predict's compute term: t1 = compute + update.)
    state = 8.0 * params  # AdamW: two blocks of float32
    update1 = 4.0 * params * (3 + 2 * 2) / (a.memory_bandwidth * 1e9)
    return {"global_batch": batch, "ranks": 1, "steady_samples_per_s": batch / (step + update1),
            "parameters": params, "buckets": 2, "optimizer_state_bytes_per_rank": state, "dry_run": out.stdout,
            "compute1": step, "update1": update1, "tokens_per_step": tokens}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--summary", help="summary.json of a measured run (1 rank: the roof's job)")
    src.add_argument("--deck", help="a language-model deck: the step from its FLOPs, the GPU's peak and --mfu")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="--deck: passed to the trainer")
    ap.add_argument("--gpu", default="h100", help="--deck: h100, h200, a100, or a dense peak in TFLOP/s")
    ap.add_argument("--mfu", type=float, default=0.4, help="--deck: the model FLOPs utilization assumed")
    ap.add_argument("--ranks", default="1,2,4,8,16")
    ap.add_argument("--ranks-per-node", type=int)
    ap.add_argument("--link", help="shm | mpi (measured) | ALPHA_US,GBPS (default: measure; --deck: 5,300)")
    ap.add_argument("--network",
                    help="between nodes: ALPHA_US,GBPS (default 20 us, 10 GB/s; --deck: 20 us, 50 GB/s), or a file "
                         "holding the output of "
                         "allreduce-bench run with 2 ranks on 2 nodes (its mpi column is fitted)")
    ap.add_argument("--shard-optimizer", action="store_true")
    ap.add_argument("--memory-bandwidth", type=float, help="GB/s one rank's update streams at (10; --deck: 3350)")
    ap.add_argument("--hidden", type=float,
                    help="share of the allreduce backward hides (0-1; default: 0 when the measured run had one "
                         "gradient bucket, which is ready only when backward ends, else 0.5)")
    ap.add_argument("--global-batch", type=int, help="of the planned runs (default: the measured run's)")
    ap.add_argument("--price-per-device-hour", type=float, default=0.0)
    ap.add_argument("--check", help="summary.json of a measured N-rank run: compare")
    ap.add_argument("--layouts", action="store_true", help="--deck: every tp x dp x shard layout, which fit, which is fastest")
    ap.add_argument("--device-memory", type=float, help="--layouts: GiB per device (default: the --gpu's: 80, 139, 80)")
    ap.add_argument("--headroom", type=float, default=0.9, help="--layouts: the share of it a layout may use")
    ap.add_argument("--check-memory", help="--deck: summary.json of a measured run of the deck: its peak memory per rank")
    ap.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args()
    gpu_node = a.deck is not None
    a.ranks_per_node = a.ranks_per_node or (8 if gpu_node else 2)
    a.link = a.link or ("5,300" if gpu_node else "measure")
    a.network = a.network or ("20,50" if gpu_node else "20,10")
    a.memory_bandwidth = a.memory_bandwidth or (3350.0 if gpu_node else 10.0)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    s = deck_summary(root, a) if gpu_node else load_summary(a.summary)
    a.global_batch = a.global_batch or s["global_batch"]
    try:
        ranks = [int(x) for x in a.ranks.split(",")]
    except ValueError:
        fail("--ranks '%s': give a comma-separated list of rank counts" % a.ranks)
    if a.hidden is None:
        a.hidden = 0.0 if s.get("buckets", 1) <= 1 else 0.5
    if not 0 <= a.hidden <= 1:
        fail("--hidden %s: give a share between 0 and 1" % a.hidden)
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
    print("scaling_plan: %s: %d parameters (%.1f MiB of gradients), %s %.0f samples/s on %d rank(s) at "
          "global batch %d; planned global batch %d" % (a.summary or a.deck, s["parameters"], 4 * s["parameters"] / 2**20,
                                                       "predicted" if gpu_node else "measured", s["steady_samples_per_s"], s["ranks"], s["global_batch"],
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
    if a.layouts or a.check_memory:
        plan_layouts(s, a, ranks)
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


def plan_layouts(s, a, ranks):
    """--layouts and --check-memory (tools/layout_plan.py)."""
    if "dry_run" not in s:
        fail("--layouts and --check-memory need --deck (the model's buffers and activations come from its --dry-run)")
    d = layout_plan.DryRun(s["dry_run"], fail)
    if a.check_memory:
        c = load_summary(a.check_memory)
        if "peak_bytes_per_rank" not in c:
            fail("%s: no peak_bytes_per_rank" % a.check_memory)
        shard = c.get("shard") or ("optimizer" if c.get("shard_optimizer") else "none")
        t = c.get("tensor_parallel", 1)  # (data-parallel ranks: the rest)
        dp = c["ranks"] // t
        sp = bool(c.get("sequence_parallel", False))
        mem = layout_plan.memory(d, t, dp, shard, layout_plan.micro_batch(d, dp, c["global_batch"]), sp)
        err = (mem[-1] - c["peak_bytes_per_rank"]) / c["peak_bytes_per_rank"]
        ok = abs(err) <= a.tolerance
        print("check-memory: %d rank(s) (tensor_parallel %d%s), shard %s: predicted %.1f MiB per rank (parameters %.1f, gradients %.1f, copy "
              "%.1f, optimizer %.1f, activations with their gradients and scratch %.1f), measured peak %.1f MiB (%s): %+.1f%% -> %s" %
              ((c["ranks"], t, ", sequence-parallel" if sp else "", shard) + tuple(x / layout_plan.MIB for x in (mem[5],) + mem[:5]) +
               (c["peak_bytes_per_rank"] / layout_plan.MIB, a.check_memory, 100 * err, "PASS" if ok else "FAIL")))
        if not ok:
            sys.exit(1)
    if a.layouts:
        gib = a.device_memory or layout_plan.DEVICE_GIB.get(a.gpu.lower())
        if not gib or gib <= 0:
            fail("--device-memory: give the GiB of one device (--gpu %s has no default)" % a.gpu)
        if not 0 < a.headroom <= 1:
            fail("--headroom %s: give a share between 0 and 1" % a.headroom)
        a.device_bytes = gib * 2.0**30
        rows = layout_plan.table(d, ranks, a, s["compute1"], s["update1"], a.global_batch)
        layout_plan.print_table(rows, s["tokens_per_step"] * a.global_batch / s["global_batch"], a)


if __name__ == "__main__":
    main()
