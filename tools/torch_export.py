#!/usr/bin/python3
"""Writes an hpctrain checkpoint's weights as a PyTorch state_dict, and prints the nn.Module that
loads it.

    tools/torch_export.py runs/mnist_cnn/checkpoints/ckpt-00000095.h5 --out cnn.pt
                          [--sample-shape 28,28] [--layers "..."]

The module is tools/hpctrain_torch.py's twin of the checkpoint's [model] layers (stored in the
checkpoint), for every layer type the engine has, with the same names and layouts, so every
tensor is copied as it is (batch-norm running statistics included). One sample's shape comes
from --sample-shape, else from the dataset the checkpoint's configuration names ([data] path;
[model] block_size for language models). In PyTorch:

    import sys, torch; sys.path.insert(0, "tools"); import hpctrain_torch
    model = hpctrain_torch.build(LAYERS, SAMPLE_SHAPE)
    model.load_state_dict(torch.load("cnn.pt")); model.eval()
    logits = model(x)   # x: samples x scale + offset, as the trainer feeds them

Needs python3-torch and python3-h5py (tools/setup.sh installs both).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpctrain_torch  # noqa: E402


def twin_of_checkpoint(path, layers=None, sample_shape=None):
    """(model with the checkpoint's weights, layers, sample shape)."""
    import h5py
    import torch
    f = h5py.File(path, "r")
    if f.attrs.get("format", b"") not in (b"hpctrain-checkpoint", "hpctrain-checkpoint"):
        raise ValueError("%s is not an hpctrain checkpoint" % path)
    ini = f.attrs["ini"]
    deck = hpctrain_torch.deck_settings(ini.decode() if isinstance(ini, bytes) else ini)
    layers = layers or deck["model.layers"]
    if sample_shape is None:
        root = deck.get("data.path", "")
        if not root or not os.path.isdir(root):
            raise ValueError("the checkpoint's [data] path (%r) is not here: give --sample-shape" % root)
        sample_shape = hpctrain_torch.sample_shape_of(root, hpctrain_torch.block_size_of(deck))
    model = hpctrain_torch.build(layers, sample_shape)
    ours = model.hpctrain_tensors(legacy=int(f.attrs.get("format_version", 1)) < 2)  # format 1: positional names
    theirs = []
    f["model"].visititems(lambda n, o: theirs.append(n) if isinstance(o, h5py.Dataset) else None)
    extra = sorted(set(theirs) - set(ours))
    if extra:
        raise ValueError("%s holds %s, which %s does not have" % (path, extra[0], layers))
    with torch.no_grad():
        for name, t in ours.items():
            if name not in theirs:
                raise ValueError("%s has no model/%s" % (path, name))
            ds = f["model/" + name]
            if tuple(ds.shape) != tuple(t.shape):
                raise ValueError("model/%s is %s in %s, %s in the module" % (name, ds.shape, path, tuple(t.shape)))
            t.copy_(torch.from_numpy(ds[...]))
    return model, layers, tuple(sample_shape)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("--out", required=True, help="the state_dict file (torch.save)")
    p.add_argument("--sample-shape", help="one sample's shape, e.g. 28,28 (default: from the dataset)")
    p.add_argument("--layers", help="[model] layers (default: the checkpoint's)")
    a = p.parse_args()
    import torch
    shape = tuple(int(v) for v in a.sample_shape.split(",")) if a.sample_shape else None
    try:
        model, layers, shape = twin_of_checkpoint(a.checkpoint, a.layers, shape)
    except (OSError, KeyError, ValueError) as e:
        sys.exit("torch_export: %s" % e)
    torch.save(model.state_dict(), a.out)
    print(model)
    print("\n# %d tensors written to %s; to load them:" % (len(model.state_dict()), a.out))
    print("import sys, torch; sys.path.insert(0, %r); import hpctrain_torch" % os.path.dirname(os.path.abspath(__file__)))
    print("model = hpctrain_torch.build(%r, %r)" % (layers, shape))
    print("model.load_state_dict(torch.load(%r)); model.eval()" % a.out)


if __name__ == "__main__":
    main()
