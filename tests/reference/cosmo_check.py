#!/usr/bin/python3
"""The synthetic cosmology set (hpctrain-data generate --kind cosmo, src/data/cosmo.cpp) against an
independent float64 implementation of its documented generator (data/cosmo.hpp) with numpy's FFT.

usage: cosmo_check.py ROOT SEED    (ROOT made with --size N --seed SEED --dtype float16)
For the first samples of train/: the four targets (the parameters mapped to [-1, 1]) equal to
1e-6, and the stored log-field within float16's rounding (|difference| <= 2e-3 x max(1, |value|)).
Prints one line per sample and PASS/FAIL; exits 1 on any failure.
"""
import sys

import h5py
import numpy as np

M = (1 << 64) - 1
RANGES = [("amplitude", 0.5, 2.0), ("slope", 1.0, 3.0), ("cutoff", 0.2, 0.8), ("lognormal", 0.2, 1.0)]


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def uniform(key, i):
    return (splitmix64((key + splitmix64(i)) & M) >> 11) * (1.0 / 9007199254740992.0)


def params(seed, index):
    key = splitmix64(seed ^ splitmix64(index))
    return [lo + (hi - lo) * uniform(key, 1000 + j) for j, (_, lo, hi) in enumerate(RANGES)]


def field(p, n, key):
    amplitude, slope, cutoff, lognormal = p
    total = n ** 3
    u = np.array([uniform(key, i) for i in range(total)])
    u1, u2 = 1.0 - u[0::2], u[1::2]
    r = np.sqrt(-2.0 * np.log(u1))
    noise = np.empty(total)
    noise[0::2], noise[1::2] = r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)
    cube = np.fft.fftn(noise.reshape(n, n, n))  # [z, y, x], x fastest as stored
    f = np.fft.fftfreq(n) * 2.0  # in units of the Nyquist frequency
    k = np.sqrt(f[:, None, None] ** 2 + f[None, :, None] ** 2 + f[None, None, :] ** 2)
    with np.errstate(divide="ignore"):
        power = np.where(k > 0, k ** -slope * np.exp(-(k / cutoff) ** 2), 0.0)
    g = np.fft.ifftn(cube * np.sqrt(power)).real
    g = (g - g.mean()) / g.std()
    return np.log(amplitude) + lognormal * g - lognormal ** 2 / 2


root, seed = sys.argv[1], int(sys.argv[2])
f = h5py.File(root + "/train/part-00000.h5", "r")
x, y = f["samples"], f["labels"]
names = f.attrs["target_names"]
names = names.decode() if isinstance(names, bytes) else str(names)
ok = names == ", ".join(n for n, _, _ in RANGES)
print("%-4s target_names %r" % ("ok" if ok else "FAIL", names))
n = x.shape[2]
for index in range(min(3, x.shape[0])):
    p = params(seed, index)
    want_t = np.array([2 * (v - lo) / (hi - lo) - 1 for v, (_, lo, hi) in zip(p, RANGES)])
    dt = np.abs(np.array(y[index], dtype=np.float64) - want_t).max()
    worst = 0.0
    for c in range(x.shape[1]):
        key = splitmix64(seed ^ splitmix64(index) ^ splitmix64(0x5EED0000 + c))
        want = field(p, n, key)
        got = np.array(x[index, c], dtype=np.float64)
        worst = max(worst, float((np.abs(got - want) / np.maximum(1.0, np.abs(want))).max()))
    good = dt <= 1e-6 and worst <= 2e-3
    ok = ok and good
    print("%-4s sample %d: targets |difference| %.2g, field |difference| %.2g (of 2e-3)" %
          ("ok" if good else "FAIL", index, dt, worst))
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
