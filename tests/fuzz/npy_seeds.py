#!/usr/bin/env python3
"""tests/fuzz/npy_seeds.py OUT_DIR: the seeds of fuzz_npy (tests/fuzz/fuzz_npy.cpp), small arrays
NumPy writes: float32 rows, int64 classes, float64 targets [N, 2], uint8, and format version 2."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
np.save(os.path.join(out, "f4_rows.npy"), rng.standard_normal((6, 3)).astype(np.float32))
np.save(os.path.join(out, "i8_classes.npy"), rng.integers(0, 3, 6).astype(np.int64))
np.save(os.path.join(out, "f8_targets.npy"), rng.standard_normal((6, 2)))
np.save(os.path.join(out, "u1.npy"), rng.integers(0, 256, (4, 2)).astype(np.uint8))
with open(os.path.join(out, "v2.npy"), "wb") as f:
    np.lib.format.write_array(f, rng.integers(0, 5, 5).astype(np.int32), version=(2, 0))
