#!/usr/bin/env python3
"""tests/fuzz/image_seeds.py OUT_DIR: the seeds of fuzz_image (tests/fuzz/fuzz_image.cpp), small
files Pillow writes in the forms import-images meets: PNG as RGB, gray, RGBA, a palette and 16-bit
gray, interlaced; JPEG as RGB, gray and progressive."""
import os
import sys

import numpy as np
from PIL import Image

out = sys.argv[1]
rng = np.random.default_rng(5)
rgb = Image.fromarray(rng.integers(0, 256, (9, 13, 3), dtype=np.uint8), "RGB")
forms = {
    "rgb.png": (rgb, {}),
    "gray.png": (rgb.convert("L"), {}),
    "rgba.png": (rgb.convert("RGBA"), {}),
    "palette.png": (rgb.convert("P"), {}),
    "gray16.png": (Image.fromarray(rng.integers(0, 65536, (5, 6), dtype=np.uint16)), {}),
    "interlaced.png": (rgb, {"interlace": 1}),
    "rgb.jpg": (rgb, {"quality": 80}),
    "gray.jpg": (rgb.convert("L"), {"quality": 80}),
    "progressive.jpg": (rgb, {"quality": 60, "progressive": True}),
}
for name, (image, options) in forms.items():
    image.save(os.path.join(out, name), **options)
