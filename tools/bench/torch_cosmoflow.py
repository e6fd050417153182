#!/usr/bin/python3
"""A volume-regression deck's model (inputs/cosmoflow_32.ini) trained in PyTorch eager on the CPU
on the same HDF5 shards, for tools/bench/cosmoflow_vs_torch.sh: the model is the PyTorch twin of
the deck's layers string (tools/hpctrain_torch.py, dropout on), He-normal weights and zero biases
(hpctrain's initialization scheme, other draws), SGD with momentum, hpctrain's linear warm-up,
MSE, batches drawn from a seeded permutation per epoch.

usage: torch_cosmoflow.py DECK DATA_ROOT --steps N [--threads K] [--batch B] [--lr LR] [--warmup W]
prints JSON: {"samples_per_s": ..., "test_mae": ..., "test_mae_per_target": [...]}
(samples/s over the steps after the first two)
"""
import argparse
import warnings
import glob
import json
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hpctrain_torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("deck")
ap.add_argument("data")
ap.add_argument("--steps", type=int, required=True)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--lr", type=float, default=0.004)
ap.add_argument("--warmup", type=int, default=64)
a = ap.parse_args()
torch.set_num_threads(a.threads)
warnings.filterwarnings("ignore", message="Using padding=.same.")
torch.manual_seed(0)


def split(name):
    xs, ys = [], []
    for shard in sorted(glob.glob("%s/%s/*.h5" % (a.data, name))):
        with h5py.File(shard, "r") as f:
            scale, offset = float(np.ravel(f.attrs["scale"])[0]), float(np.ravel(f.attrs["offset"])[0])
            xs.append(f["samples"][...].astype(np.float32) * scale + offset)
            ys.append(f["labels"][...].astype(np.float32))
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))


x, y = split("train")
tx, ty = split("test")
model = hpctrain_torch.build_from_description(hpctrain_torch.describe(None, a.deck, ["data.path=" + a.data]))
model.dropout_on = True
with torch.no_grad():
    for p in model.parameters():
        if p.dim() > 1:
            torch.nn.init.kaiming_normal_(p, nonlinearity="relu")  # std sqrt(2 / fan_in), as hpctrain's
        else:
            p.zero_()
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
order, at, t0 = torch.randperm(len(x)), 0, None
model.train()
for step in range(a.steps):
    if step == 2:
        t0 = time.perf_counter()
    if at + a.batch > len(x):
        order, at = torch.randperm(len(x)), 0
    idx = order[at:at + a.batch]
    at += a.batch
    for g in opt.param_groups:
        g["lr"] = a.lr * min(1.0, (step + 1) / a.warmup) if a.warmup > 0 else a.lr
    opt.zero_grad()
    loss = F.mse_loss(model(x[idx]), y[idx])
    loss.backward()
    opt.step()
elapsed = time.perf_counter() - t0
model.eval()
with torch.no_grad():
    err = torch.cat([(model(tx[i:i + 64]) - ty[i:i + 64]).abs() for i in range(0, len(tx), 64)]).mean(0)
print(json.dumps({"samples_per_s": (a.steps - 2) * a.batch / elapsed, "test_mae": float(err.mean()),
                  "test_mae_per_target": [round(float(e), 4) for e in err]}))
