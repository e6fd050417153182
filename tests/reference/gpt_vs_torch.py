#!/usr/bin/python3
"""Compares hpctrain's GPT with the same model in PyTorch (llm.c's test_gpt2, for hpctrain).

usage: gpt_vs_torch.py DUMP.h5 "LAYERS" T [muon]
DUMP.h5 comes from tests/reference/gpt_dump (hpctrain, float32). PyTorch (float64) loads
hpctrain's initial parameters, runs the same batch and the same 10 AdamW steps, and the test
checks, with these tolerances (float32 against float64):
  logits              max |hpctrain - torch| <= 1e-5
  loss                |difference| <= 1e-6
  every gradient      max |difference| <= 1e-4 * max |torch gradient of that tensor| + 1e-8
  the 10 step losses  |difference| <= 1e-5 each
(measured 2026-12-01: logits 9e-8, loss 5e-8, gradients 1e-3 of their tolerance, losses 2e-7)
muon: the steps are Muon's for the matrices the dump lists (its attribute "muon": rows of a
tensor each), written here in float64 from Keller Jordan's description (modded-nanogpt: Nesterov
momentum, the quintic Newton-Schulz iteration on the short side, sqrt(max(1, rows/cols))), AdamW
for the rest.
Prints one line per check and PASS/FAIL; exits 1 on any failure.
"""
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "..", "tools"))
import hpctrain_torch  # noqa: E402

path, layers, t = sys.argv[1], sys.argv[2], int(sys.argv[3])
use_muon = len(sys.argv) > 4 and sys.argv[4] == "muon"
torch.set_default_dtype(torch.float64)
f = h5py.File(path, "r")
model = hpctrain_torch.build(layers, t)
params = model.hpctrain_parameters()
stored = {k: np.array(v) for k, v in f["params"].items()}
failures = []


def check(what, ok, detail):
    print("%-4s %-44s %s" % ("ok" if ok else "FAIL", what, detail))
    if not ok:
        failures.append(what)


check("same parameter names", sorted(params) == sorted(stored), "%d tensors" % len(stored))
with torch.no_grad():
    for name, p in params.items():
        p.copy_(torch.from_numpy(stored[name].astype(np.float64)).view(p.shape))
tokens = torch.from_numpy(np.array(f["tokens"])).long()
targets = torch.from_numpy(np.array(f["targets"])).long()
logits = model(tokens)
v = logits.shape[-1]
loss = torch.nn.functional.cross_entropy(logits.view(-1, v), targets.view(-1))
loss.backward()
d = np.abs(logits.detach().numpy() - np.array(f["logits"])).max()
check("logits [B, T, V]", d <= 1e-5, "max |diff| %.2e" % d)
d = abs(loss.item() - float(np.array(f["loss"])[0]))
check("loss (mean over every position)", d <= 1e-6, "torch %.6f, diff %.2e" % (loss.item(), d))
worst, worst_name = 0.0, ""
for name, p in params.items():
    ref = p.grad.numpy()
    diff = np.abs(np.array(f["grads"][name]).reshape(ref.shape) - ref).max()
    ratio = diff / (1e-4 * np.abs(ref).max() + 1e-8)
    if ratio > worst:
        worst, worst_name = ratio, name
check("every gradient (%d tensors)" % len(params), worst <= 1.0, "worst %s at %.3f of the tolerance" % (worst_name, worst))

blocks = []  # Muon's: (tensor, first row, rows, momentum buffer)
if use_muon:
    listed = f.attrs["muon"]
    for item in (listed.decode() if isinstance(listed, bytes) else listed).split(";"):
        if item:
            name, first, rows = item.split()
            blocks.append((params[name], int(first), int(rows)))
    blocks = [(p, a, n, torch.zeros_like(p.data[a:a + n])) for p, a, n in blocks]
muon_ids = {id(p) for p, _, _, _ in blocks}
decay = [p for p in params.values() if p.dim() >= 2 and id(p) not in muon_ids]
rest = [p for p in params.values() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.99), eps=1e-8)


def muon_update(w, g, buf, lr=0.02, mu=0.95, steps=5):
    buf.mul_(mu).add_(g)
    x = g + mu * buf
    x = x / (x.norm() + 1e-7)
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * A @ A) @ x
    if tall:
        x = x.T
    w.add_(x, alpha=-lr * max(1.0, w.shape[0] / w.shape[1]) ** 0.5)
ours = np.array(f["losses"])
theirs = []
for step in range(len(ours)):
    model.zero_grad()  # (every tensor: the Muon blocks are in no torch optimizer)
    out = model(tokens)
    l = torch.nn.functional.cross_entropy(out.view(-1, v), targets.view(-1))
    l.backward()
    torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
    opt.step()
    with torch.no_grad():
        for p, first, rows, buf in blocks:
            muon_update(p.data[first:first + rows], p.grad[first:first + rows], buf)
    theirs.append(l.item())
d = np.abs(ours - np.array(theirs)).max()
check("losses of %d %s steps" % (len(ours), "Muon + AdamW" if use_muon else "AdamW"), d <= 1e-5,
      "max |diff| %.2e (hpctrain %.4f -> %.4f, torch %.4f -> %.4f)" % (d, ours[0], ours[-1], theirs[0], theirs[-1]))
print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
