"""A small CNN trained in PyTorch on the shipped MNIST subset, for the import round trip
(tests/e2e/exchange.sh): conv 16 + batch norm + relu + max pool, then dense 10, written as
nested nn.Sequential modules ("features.0.weight", "classifier.1.weight"), so the importer's
pairing by position is what maps the names. The same model as the deck layers
"conv(16,3,pad=1) batchnorm relu maxpool(2) flatten dense(10)".

    torch_train.py DATA_ROOT OUT_PREFIX  ->  OUT_PREFIX.pt, OUT_PREFIX.safetensors;
                                             prints "correct total accuracy" on the test split
"""
import glob
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import safetensors_numpy  # noqa: E402


def split(root, name):
    xs, ys = [], []
    for shard in sorted(glob.glob("%s/%s/*.h5" % (root, name))):
        with h5py.File(shard, "r") as f:
            xs.append(f["samples"][...].astype(np.float32) * float(f.attrs["scale"]) + float(f.attrs["offset"]))
            ys.append(f["labels"][...].astype(np.int64))
    return torch.from_numpy(np.concatenate(xs)).unsqueeze(1), torch.from_numpy(np.concatenate(ys))


root, prefix = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = nn.Module()
model.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
model.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 14 * 14, 10))
net = nn.Sequential(model.features, model.classifier)
x, y = split(root, "train")
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(60):
    i = torch.randint(0, len(y), (128,))
    opt.zero_grad()
    nn.functional.cross_entropy(net(x[i]), y[i]).backward()
    opt.step()
net.eval()
tx, ty = split(root, "test")
with torch.no_grad():
    correct = int((net(tx).argmax(1) == ty).sum())
state = model.state_dict()
torch.save(state, prefix + ".pt")
safetensors_numpy.save(prefix + ".safetensors",
                       {k: v.numpy() for k, v in state.items() if not k.endswith("num_batches_tracked")})
print(correct, len(ty), "%.2f" % (100.0 * correct / len(ty)))
