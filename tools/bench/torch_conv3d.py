#!/usr/bin/python3
"""PyTorch's Conv3d (padding='same', kernel 2) forward + backward at inputs/cosmoflow_32.ini's five
shapes, one thread, best of --repeats after a warm-up, as tools/bench/conv_bench.cpp --volumes
times hpctrain's (the input gradient except for the first layer). Prints one line per case:
"name batch ms".
"""
import argparse
import time
import warnings

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--repeats", type=int, default=3)
a = ap.parse_args()
torch.set_num_threads(1)
warnings.filterwarnings("ignore", message="Using padding=.same.")
cases = [(0, 1, 32, 8), (1, 8, 16, 16), (2, 16, 8, 32), (3, 32, 4, 64), (4, 64, 2, 128)]
for i, c, hw, out in cases:
    conv = torch.nn.Conv3d(c, out, 2, padding="same")
    for n in (16, 32):
        x = torch.rand(n, c, hw, hw, hw, requires_grad=i > 0)
        best = 1e30
        for k in range(a.repeats + 1):
            conv.zero_grad()
            t0 = time.perf_counter()
            y = conv(x)
            y.backward(torch.ones_like(y) * 0.01)
            ms = (time.perf_counter() - t0) * 1e3
            if k > 0:
                best = min(best, ms)
        print("conv3d_%d %d %.3f" % (i, n, best))
