"""Test accuracy of exported weights in PyTorch (tests/e2e/exchange.sh).

    torch_eval.py WEIGHTS LAYERS SAMPLE_SHAPE DATA_ROOT

WEIGHTS: a state_dict from tools/torch_export.py (.pt), or a safetensors file from
`trainer --export` (read with tools/safetensors_numpy.py, names "conv.0.weight"). The model is
tools/hpctrain_torch.py's twin of LAYERS; the data are DATA_ROOT/test's shards, fed as the
trainer feeds them (samples x scale + offset). Prints "correct total accuracy".
"""
import glob
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import hpctrain_torch  # noqa: E402
import safetensors_numpy  # noqa: E402

weights, layers, shape, root = sys.argv[1], sys.argv[2], tuple(int(v) for v in sys.argv[3].split(",")), sys.argv[4]
model = hpctrain_torch.build(layers, shape)
if weights.endswith(".safetensors"):
    tensors, _ = safetensors_numpy.load(weights)
    with torch.no_grad():  # by hpctrain's names (format 1's exports: the modules' own paths)
        ours = model.hpctrain_tensors()
        if not set(ours) <= set(tensors):
            ours = {k[len("seq."):]: t for k, t in model.state_dict(keep_vars=True).items()
                    if not k.endswith("num_batches_tracked")}
        for name, t in ours.items():
            t.copy_(torch.from_numpy(tensors[name].copy()).view(t.shape))
else:
    model.load_state_dict(torch.load(weights))
model.eval()
correct = total = 0
with torch.no_grad():
    for shard in sorted(glob.glob(root + "/test/*.h5")):
        with h5py.File(shard, "r") as f:
            x = f["samples"][...].astype(np.float32) * float(f.attrs["scale"]) + float(f.attrs["offset"])
            y = f["labels"][...]
        # In blocks: one 2,000-sample batch through the ResNet twin is 4-5x slower on the CPU
        # than the same samples 250 at a time (9.3 s against 2.0 s, 2026-12-02).
        pred = np.concatenate([model(torch.from_numpy(x[i:i + 250])).argmax(dim=1).numpy()
                               for i in range(0, len(x), 250)])
        correct += int((pred == y).sum())
        total += len(y)
print(correct, total, "%.2f" % (100.0 * correct / total))
