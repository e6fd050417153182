"""Which parallel layouts of a language-model deck fit a device, and which should be fastest
(tools/scaling_plan.py --layouts; docs/parallelism.md, "Which layout for which model").

From the trainer's --dry-run of the deck on one rank (the whole model's buffers, the activations
of one micro-batch, the layers' parameter counts) it prices, for N ranks, every layout of
T-way tensor parallelism (T dividing N, at most the ranks of a node) times D = N / T data-parallel
ranks with `shard` in none | optimizer | gradients | full (ZeRO 0-3):

  memory per rank = parameters + gradients + 16-bit copy + optimizer state + activations
                    + their gradients between layers + scratch (--dry-run's "Peak per rank")
    "/ T" below applies to every tensor but a GPT's position table (positions x width), which
    stays whole on every tensor-parallel rank, as the trainer keeps it (docs/parallelism.md
    "Tensor parallelism"; the token table and head are vocabulary-parallel)
    parameters, copy   / T; full: / (T D), plus two gathered windows of the largest bucket
    gradients          / T; gradients, full: / (T D), plus two buckets in flight (staging)
                       (a bucket: [parallel] bucket_mb plus the layer that fills it past that, at
                       most the whole gradient; measured against runs: docs/performance.md)
    optimizer state    / T; optimizer and up: / (T D)
    activations        the logits / T; the rest x (10 + 24 / T) / 34 (Megatron's per-layer count
                       without sequence parallelism: the norms' and residuals' stay whole); with
                       sequence parallelism (the "sp" rows, [parallel] sequence_parallel) all / T
    their gradients    the logits' / T; the rest (the residual stream between blocks) whole, / T
                       with sequence parallelism
    scratch            16-bit runs: twice the largest layer's parameters in float32, / T (measured
                       on the small Llama deck; float32 runs: a few MiB, left out); [train]
                       loss_chunk = R: no logits or their gradient above, and lm_head's two
                       float32 chunks of R rows of the vocabulary / T; with sequence parallelism
                       six float32 [positions, width] buffers (attention's backward gathers)
  activations and their gradients scale with the windows of a micro-batch on a rank.
  step = compute / N + update + exposed communication
    data-parallel, G = gradient bytes / T:  none: allreduce 2 (D-1)/D G, hidden as --hidden says;
      optimizer: reduce-scatter (D-1)/D G (hidden) + the parameters' all-gather (D-1)/D G;
      gradients: as optimizer, but one reduce-scatter per micro-batch (nothing accumulates whole);
      full: the reduce-scatter + two all-gathers per micro-batch (forward and backward), hidden as
      the reduce-scatter is (prefetched)
    tensor-parallel: 4 allreduces per layer and micro-batch (2 forward, 2 backward), and 2 for the
      vocabulary-parallel embedding (forward) and head (backward), of the
      micro-batch's activations [tokens, width] in the compute precision, over the node's link,
      not hidden; with sequence parallelism 10 all-gathers or reduce-scatters per layer and
      micro-batch, (T-1)/T of the activations each (forward: a gather and a scatter per split pair;
      backward: the input gathered again, the output gradient gathered, the input gradient
      scattered), and 5 for the embedding and head: (10 L + 5) (T-1)/T where the plain sums move
      (4 L + 2) 2 (T-1)/T, 25% more (summary.json's tp_*_bytes_per_step measure them:
      docs/parallelism.md)
A layout fits when its memory is at most --headroom (0.9) of --device-memory. The trainer runs
every layout whose T divides the attention's query and key/value heads and the vocabulary table's
rows (the table marks the others).
"""
import re

SHARDS = ("none", "optimizer", "gradients", "full")
MIB = 2.0**20
DEVICE_GIB = {"h100": 80.0, "h200": 139.0, "a100": 80.0}


class DryRun:
    """The figures of one --dry-run (one rank, the deck's micro-batch)."""

    def __init__(self, text, fail):
        def need(pattern, what):
            m = re.search(pattern, text, re.M)
            if not m:
                fail("--dry-run printed no %s (a deck of [model] arch = gpt or llama)" % what)
            return m

        m = need(r"^Memory per rank \(model buffers of the largest stage, (\d+) parameters\): parameters ([0-9.]+) MiB, "
                 r"gradients ([0-9.]+) MiB(, reduced-precision copy)?[^,]*, optimizer state ([0-9.]+) MiB", "Memory line")
        self.parameters = int(m.group(1))
        self.param_bytes = float(m.group(2)) * MIB
        self.grad_bytes = float(m.group(3)) * MIB
        self.copy_bytes = self.param_bytes / 2 if m.group(4) else 0.0
        self.state_bytes = float(m.group(5)) * MIB
        m = need(r"^Activations per rank: [0-9.]+ MiB \((\d+) bytes\) for a micro-batch of (\d+) windows of (\d+) tokens",
                 "Activations line")
        self.activation_bytes, self.micro_batch, self.context = float(m.group(1)), int(m.group(2)), int(m.group(3))
        m = need(r"^Peak per rank: .* gradients between layers ([0-9.]+) MiB", "Peak line")
        self.between_bytes = float(m.group(1)) * MIB
        m = need(r"^Compute: .*\(6 x \d+ parameters \+ 12 x (\d+) layers x (\d+) wide", "Compute line")
        self.layers, self.width = int(m.group(1)), int(m.group(2))
        counts = [int(c) for c in re.findall(r"^\S+ +\[[0-9, ]+\] +(\d+)$", text, re.M)]
        self.largest_layer = max(counts) if counts else self.parameters
        emb = re.search(r"embedding\((\d+), (\d+)", text)
        self.vocab = int(emb.group(1)) if emb else 0
        heads = [(int(h), int(k or h)) for h, k in re.findall(r"attention\((\d+)(?:, kv_heads=(\d+))?", text)]
        self.heads = heads[0] if heads else (1, 1)
        m = re.search(r"^model\.vocab_multiple +(\d+)", text, re.M)
        multiple = int(m.group(1)) if m else 1
        self.rows = (self.vocab + multiple - 1) // multiple * multiple  # the token table's rows, padded
        # What every tensor-parallel rank holds whole: a GPT's position table.
        whole = self.context * self.width if "position_embedding" in text else 0
        self.whole_share = min(1.0, whole / self.parameters) if self.parameters else 0.0
        self.sixteen = self.copy_bytes > 0
        m = re.search(r"^train\.loss_chunk +(\d+)", text, re.M)
        self.loss_chunk = int(m.group(1)) if m else 0  # > 0: no logits kept, two [chunk, vocabulary] of scratch
        self.bucket_mb = float(need(r"^parallel\.bucket_mb +([0-9.]+)", "parallel.bucket_mb setting").group(1))

    def largest_bucket(self):
        """A gradient bucket's bytes at most: bucket_mb, and the layer that fills it past that (buckets
        never split a layer), never more than the whole gradient."""
        return min(self.bucket_mb * MIB + 4.0 * self.largest_layer, self.grad_bytes)

    def logits_bytes(self):  # the float32 logits [micro-batch x context, vocabulary] a rank keeps
        return 0.0 if self.loss_chunk else 4.0 * self.micro_batch * self.context * self.vocab

    def chunk_bytes(self, mb, t):  # [train] loss_chunk: lm_head's two float32 chunks, vocabulary / T wide
        return 2 * 4.0 * min(self.loss_chunk, mb * self.context) * self.rows / t if self.loss_chunk else 0.0


def micro_batch(d, dp, global_batch):
    """Windows per micro-batch on a rank: the deck's, or the whole per-rank batch when smaller."""
    return max(1, min(d.micro_batch, global_batch // dp))


def memory(d, t, dp, shard, mb, sp=False):
    """Bytes per rank with micro-batches of `mb` windows (`sp`: sequence parallelism): (parameters,
    gradients, copy, state, activations with their gradients and scratch, total)."""
    full, grads_sharded, state_sharded = shard == "full", shard in ("gradients", "full"), shard != "none"
    # Two buckets in flight: the gradients' staging buffers, and with full the parameters' windows.
    two_buckets = 2 * d.largest_bucket() / t
    window = two_buckets if full else 0.0
    held = d.whole_share + (1 - d.whole_share) / t  # the share of the model a tensor-parallel rank holds
    params = d.param_bytes * held / (dp if full else 1) + window
    copy = d.copy_bytes * held / (dp if full else 1) + (window / 2 if d.sixteen else 0.0)
    buckets = two_buckets if grads_sharded and dp > 1 else 0.0
    grads = d.grad_bytes * held / (dp if grads_sharded else 1) + buckets
    state = d.state_bytes * held / (dp if state_sharded else 1)
    logits = min(d.logits_bytes(), d.activation_bytes)
    whole = 1.0 / t if sp else 1.0  # (what stays whole on every rank without sequence parallelism)
    acts = (logits / t + (d.activation_bytes - logits) * (10 * whole + 24.0 / t) / 34) * mb / d.micro_batch
    between = min(d.logits_bytes(), d.between_bytes)
    acts += (between / t + (d.between_bytes - between) * whole) * mb / d.micro_batch
    acts += 2 * 4.0 * d.largest_layer / t if d.sixteen else 0.0
    acts += d.chunk_bytes(mb, t)
    if sp:  # attention's backward gathers its input and output gradient: six float32 [positions, width]
        acts += 6 * 4.0 * mb * d.context * d.width
    return params, grads, copy, state, acts, params + grads + copy + state + acts


def step_seconds(d, t, dp, shard, mb, a, compute1, update1, global_batch, sp=False):
    """One step's seconds at t x dp ranks with micro-batches of `mb` windows (see the module's
    text); a: alpha/beta, hidden, ranks_per_node."""
    n = t * dp
    micro = max(1, global_batch // (dp * mb))
    g = d.grad_bytes * (d.whole_share + (1 - d.whole_share) / t)
    per_node = max(1, min(a.ranks_per_node, n))
    beta = a.beta if n <= per_node else a.net_beta
    alpha = a.alpha if n <= per_node else a.net_alpha
    dpc = 0.0
    if dp > 1:
        part = (dp - 1) / dp * g * beta + alpha
        if shard == "none":
            dpc = 2 * part * (1 - a.hidden)
        elif shard == "optimizer":
            dpc = part * (1 - a.hidden) + part
        elif shard == "gradients":  # a reduce-scatter per micro-batch (no gradient accumulates whole), then the gather
            dpc = micro * part * (1 - a.hidden) + part
        else:
            dpc = (part + 2 * micro * part) * (1 - a.hidden)
    tpc = 0.0
    if t > 1:
        msg = mb * d.context * d.width * (2 if d.sixteen else 4)
        if sp:
            tpc = (10 * d.layers + 5) * micro * ((t - 1) / t * msg * a.beta + a.alpha)
        else:
            tpc = (4 * d.layers + 2) * micro * (2 * (t - 1) / t * msg * a.beta + a.alpha)
    held = d.whole_share + (1 - d.whole_share) / t
    update = update1 * held / (dp if shard != "none" else 1)
    return compute1 * held / dp + update + dpc + tpc


def table(d, ranks, a, compute1, update1, global_batch):
    """Rows (n, t, dp, shard, memory tuple, fits, step s, runs) of every layout of every n."""
    rows = []
    for n in ranks:
        for t in (1, 2, 4, 8):
            if n % t or t > a.ranks_per_node:
                continue
            dp = n // t
            mb = micro_batch(d, dp, global_batch)
            if global_batch % dp or (global_batch // dp) % mb:
                continue  # (the trainer refuses a batch that does not split evenly)
            for shard in SHARDS:
                if dp == 1 and shard != "none":
                    continue  # nothing to shard over
                for sp in (False, True) if t > 1 else (False,):
                    mem = memory(d, t, dp, shard, mb, sp)
                    step = step_seconds(d, t, dp, shard, mb, a, compute1, update1, global_batch, sp)
                    runs = d.heads[0] % t == 0 and d.heads[1] % t == 0 and d.rows % t == 0
                    rows.append((n, t, dp, shard, mem, mem[-1] <= a.headroom * a.device_bytes, step,
                                 runs and (not sp or d.context % t == 0), sp))
    return rows


def print_table(rows, tokens_per_step, a):
    gib = 2.0**30
    print("layouts on a device of %.0f GiB (fits: at most %.0f%% of it), per rank in GiB:" %
          (a.device_bytes / gib, 100 * a.headroom))
    print("%6s %4s %4s %-10s %7s %7s %7s %7s %7s %5s %10s %12s  %s" %
          ("ranks", "tp", "dp", "shard", "params", "grads", "optim", "acts", "total", "fits", "step ms", "tokens/s",
           "hpctrain"))
    for n in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == n]
        fitting = [r for r in mine if r[5]]
        best = min(fitting, key=lambda r: r[6]) if fitting else None
        running = [r for r in fitting if r[7]]
        best_running = min(running, key=lambda r: r[6]) if running else None
        for r in mine:
            _, t, dp, shard, mem, fits, step, runs, sp = r
            marks = ("runs" if runs else "T does not divide the heads, vocabulary or positions") + (", fastest that fits" if r is best else "") + (
                ", fastest that runs" if r is best_running and r is not best else "")
            print("%6d %4s %4d %-10s %7.2f %7.2f %7.2f %7.2f %7.2f %5s %10.2f %12.0f  %s" %
                  (n, "%d%s" % (t, "sp" if sp else ""), dp, shard, (mem[0] + mem[2]) / gib, mem[1] / gib, mem[3] / gib, mem[4] / gib, mem[5] / gib,
                   "yes" if fits else "no", 1e3 * step, tokens_per_step / step, marks))
        if not fitting:
            print("%6d: no layout fits; add ranks, lower [train] micro_batch, or [train] recompute = blocks" % n)
