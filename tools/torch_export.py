#!/usr/bin/python3
"""Writes an hpctrain checkpoint's weights as a PyTorch state_dict, and beside it model.py, a
plain nn.Module that loads them with torch alone (no hpctrain code).

    tools/torch_export.py runs/mnist_cnn/checkpoints/ckpt-00000095.h5 --out cnn/weights.pt
                          [--sample-shape 28,28] [--layers "..."]

The state_dict's keys are hpctrain's tensor names ("conv.0.weight", "h.3.attn.qkv.weight"), the
same as in `trainer --export`'s safetensors file and in the checkpoint; every tensor is copied as
it is (batch-norm running statistics included). One sample's shape comes from --sample-shape,
else from the dataset the checkpoint's configuration names ([data] path; [model] block_size for
language models). In PyTorch, anywhere:

    import torch; from model import Model        # (cnn/model.py)
    model = Model(); model.load_state_dict(torch.load("cnn/weights.pt")); model.eval()
    logits = model(x)   # x: samples x scale + offset, as the trainer feeds them; token ids for LMs

Needs python3-torch and python3-h5py (tools/setup.sh installs both).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpctrain_torch  # noqa: E402


def twin_of_checkpoint(path, layers=None, sample_shape=None):
    """(model with the checkpoint's weights, layers, sample shape, the trainer's description of it)."""
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
    multiple = int(deck.get("model.vocab_multiple", "1") or 1)
    description = hpctrain_torch.describe_layers(layers, sample_shape, vocab_multiple=multiple)
    model = hpctrain_torch.build_from_description(description)
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
    return model, layers, tuple(sample_shape), description


def model_py(description):
    """model.py's text: tools/model_template.py with the description of this network."""
    import json
    here = os.path.dirname(os.path.abspath(__file__))
    text = open(os.path.join(here, "model_template.py")).read()
    body = json.dumps({k: description[k] for k in ("layers", "tensors", "buffers") if k in description}, indent=1)
    text = text.replace("DESCRIPTION = None  # (torch_export.py writes it here)", "DESCRIPTION = " + body, 1)
    return text.replace("INPUT = None", "INPUT = %r  # sample shape %s" % (description.get("input", ""),
                                                                        description.get("sample_shape")), 1)


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
        model, layers, shape, description = twin_of_checkpoint(a.checkpoint, a.layers, shape)
    except (OSError, KeyError, ValueError) as e:
        sys.exit("torch_export: %s" % e)
    state = {name: t.detach().clone() for name, t in model.hpctrain_tensors().items()}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    torch.save(state, a.out)
    module = os.path.join(os.path.dirname(os.path.abspath(a.out)), "model.py")
    with open(module, "w") as f:
        f.write(model_py(description))
    print("%d tensors written to %s, the module that loads them to %s:" % (len(state), a.out, module))
    print("import torch; from model import Model")
    print("model = Model(); model.load_state_dict(torch.load(%r)); model.eval()" % a.out)


if __name__ == "__main__":
    main()
