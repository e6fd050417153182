"""Exported weights in a fresh Python through the model.py tools/torch_export.py wrote beside
them, as a PyTorch user without hpctrain runs it (tests/e2e/exchange.sh runs this with
`python3 -I`: no PYTHONPATH, not even this script's folder, so no hpctrain code can be imported).

    model_py_eval.py EXPORT_DIR WEIGHTS DATA_ROOT [T]

WEIGHTS: the state_dict (.pt) or `trainer --export`'s safetensors file, loaded with
load_state_dict(strict=True): the names must be model.py's. Without T: the test accuracy on
DATA_ROOT/test (samples x scale + offset, as the trainer feeds them), "correct total accuracy".
With T (a language model): the mean loss over the non-overlapping validation windows of T
tokens, as --eval-only takes them.
"""
import glob
import json
import struct
import sys

export_dir, weights, root = sys.argv[1:4]
for name in ("hpctrain_torch", "safetensors_numpy"):  # (the point: none of our tools is reachable)
    try:
        __import__(name)
        sys.exit("model_py_eval: %s is importable: not a fresh Python" % name)
    except ImportError:
        pass
sys.path.insert(0, export_dir)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from model import Model  # noqa: E402


def safetensors(path):
    """{name: tensor} of a safetensors file (F32 only: what --export writes)."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").copy()).view(t["shape"])
    return out


model = Model()
state = safetensors(weights) if weights.endswith(".safetensors") else torch.load(weights)
model.load_state_dict(state)  # strict: every name present, none left over
model.eval()
with torch.no_grad():
    if len(sys.argv) > 4:
        t = int(sys.argv[4])
        tok = np.concatenate([h5py.File(s)["tokens"][...] for s in sorted(glob.glob(root + "/val/*.h5"))])
        tok = tok.astype(np.int64)
        n = (len(tok) - 1) // t
        x = torch.from_numpy(np.stack([tok[w * t:w * t + t] for w in range(n)]))
        y = torch.from_numpy(np.stack([tok[w * t + 1:w * t + t + 1] for w in range(n)]))
        logits = model(x)
        print("%.6f" % torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item())
        sys.exit(0)
    correct = total = 0
    for shard in sorted(glob.glob(root + "/test/*.h5")):
        with h5py.File(shard, "r") as f:
            x = f["samples"][...].astype(np.float32) * float(f.attrs["scale"]) + float(f.attrs["offset"])
            y = f["labels"][...]
        pred = np.concatenate([model(torch.from_numpy(x[i:i + 250])).argmax(dim=1).numpy()
                               for i in range(0, len(x), 250)])
        correct += int((pred == y).sum())
        total += len(y)
print(correct, total, "%.2f" % (100.0 * correct / total))
