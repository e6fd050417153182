#!/usr/bin/python3
"""Compares hpctrain's 3-D networks with the same model in PyTorch (float64), as gpt_vs_torch.py
does for the decoders.

usage: volume_vs_torch.py DUMP.h5 "LAYERS" C D H W mse|mae|huber [DUMP.h5 "LAYERS" C D H W LOSS ...]
(each group of seven one case, all in one process: PyTorch is imported once). DUMP.h5 comes from tests/reference/volume_dump (hpctrain, float32). The PyTorch twin
(tools/hpctrain_torch.py: nn.Conv3d with padding='same', F.max_pool3d, F.leaky_relu, ...) loads
hpctrain's initial parameters and runs the same batch with the same loss (nn.MSELoss, L1Loss,
HuberLoss(delta=0.5), the mean over every element); the checks (float32 against float64):
  outputs             max |hpctrain - torch| <= 1e-5
  loss                |difference| <= 1e-6 * max(1, |loss|)
  every gradient      max |difference| <= 1e-4 * max |torch gradient of that tensor| + 1e-8
Prints one line per check and PASS/FAIL; exits 1 on any failure.
"""
import os
import sys

import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import hpctrain_torch  # noqa: E402

torch.set_default_dtype(torch.float64)
warnings.filterwarnings("ignore", message="Using padding='same'")  # (PyTorch pads a copy for even kernels)
failures = []


def check(what, ok, detail):
    print("%-4s %-44s %s" % ("ok" if ok else "FAIL", what, detail))
    if not ok:
        failures.append(what)


def compare(path, layers, shape, kind):
    f = h5py.File(path, "r")
    model = hpctrain_torch.build(layers, shape)
    params = model.hpctrain_parameters()
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.from_numpy(np.array(f["params"][name], dtype=np.float64)))
    x = torch.from_numpy(np.array(f["x"], dtype=np.float64))
    targets = torch.from_numpy(np.array(f["targets"], dtype=np.float64))
    out = model(x)
    loss_fn = {"mse": torch.nn.MSELoss(), "mae": torch.nn.L1Loss(), "huber": torch.nn.HuberLoss(delta=0.5)}[kind]
    loss = loss_fn(out, targets)  # (hpctrain's: each sample's mean over the targets, averaged over the batch)
    loss.backward()
    theirs = np.array(f["out"], dtype=np.float64)
    d = np.abs(theirs - out.detach().numpy()).max()
    check("outputs", d <= 1e-5, "max |difference| %.3g" % d)
    mine = float(np.array(f["loss"])[0])
    check("loss (%s)" % kind, abs(mine - loss.item()) <= 1e-6 * max(1.0, abs(loss.item())),
          "hpctrain %.8f torch %.8f" % (mine, loss.item()))
    for name, p in params.items():
        g = p.grad.numpy()
        h = np.array(f["grads"][name], dtype=np.float64)
        diff = np.abs(g - h).max()
        tol = 1e-4 * np.abs(g).max() + 1e-8
        check("gradient " + name, diff <= tol, "max |difference| %.3g (tolerance %.3g)" % (diff, tol))


args = sys.argv[1:]
if not args or len(args) % 7:
    sys.exit(__doc__)
for k in range(0, len(args), 7):
    compare(args[k], args[k + 1], tuple(int(v) for v in args[k + 2:k + 6]), args[k + 6])
print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
