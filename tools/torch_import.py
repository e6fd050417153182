#!/usr/bin/python3
"""Turns PyTorch weights into an hpctrain checkpoint, for [checkpoint] init_from (fine-tuning) or
--eval-only (with [checkpoint] resume = the file).

    tools/torch_import.py WEIGHTS DECK.ini --out imported.h5 [--map names.json]
                          [--sample-shape 28,28] [--set section.key=value ...] [--trainer build/trainer]

WEIGHTS: a state_dict saved with torch.save (a dict of tensors; {"state_dict": ...} too), or a
safetensors file. The deck's [model] layers (after --set) says what the tensors must fit; its
parameters and batch-norm buffers are tools/hpctrain_torch.py's twin's, in the same layouts as
PyTorch's (nn.Linear [out, in], nn.Conv2d [out, in, kh, kw], nn.BatchNorm running_mean/var).

Names are mapped by position: the state_dict's modules (the keys' prefixes before the last '.',
in file order: "0", "3", "7" of an nn.Sequential, "features.0", ...) are paired in order with
the deck's layers that have parameters, and inside a module by the last part of the name
(weight, bias, running_mean, running_var; num_batches_tracked is dropped). For other models (the
GPT of the transformer decks, nanoGPT's names) --map gives a JSON object {"their name": "our
name"} ("transformer.wte.weight": "tok_emb.weight"; our names: `trainer DECK --describe-model`); every tensor of the deck must then be
named. A count or shape that does not fit is one line naming both sides.

The checkpoint records the deck's full configuration (`trainer --print-ini`, so --trainer must
run here: default build/trainer of this tree, else `trainer` on PATH) and step 0; it has no optimizer state (a run that resumes from it starts its
optimizer from zero, with a warning).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpctrain_torch  # noqa: E402
import safetensors_numpy  # noqa: E402


def their_tensors(path):
    """{name: float32 ndarray} in file order."""
    if path.endswith(".safetensors"):
        tensors, _ = safetensors_numpy.load(path)
    else:
        import torch
        obj = torch.load(path, map_location="cpu")
        if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
            obj = obj["state_dict"]
        if not isinstance(obj, dict):
            raise ValueError("%s holds a %s, not a state_dict (save model.state_dict())" % (path, type(obj).__name__))
        tensors = {k: v.detach().cpu().numpy() for k, v in obj.items()}
    return {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items() if not k.endswith("num_batches_tracked")}


def by_position(theirs, ours):
    """{our name: their name}, pairing modules in order and names inside a module by their last part."""
    def modules(names, sep):
        out = {}
        for n in names:
            out.setdefault(n.rsplit(sep, 1)[0], []).append(n)
        return list(out.items())
    t, o = modules(theirs, "."), modules(ours, ".")
    if len(t) != len(o):
        raise ValueError("the weights have %d modules with tensors (%s), the deck %d layers with parameters (%s): "
                         "give --map" % (len(t), ", ".join(m for m, _ in t), len(o), ", ".join(m for m, _ in o)))
    out = {}
    for (tm, tn), (om, on) in zip(t, o):
        leaves = {n.rsplit(".", 1)[-1]: n for n in tn}
        for n in on:
            leaf = n.rsplit(".", 1)[-1]
            if leaf not in leaves:
                raise ValueError("layer %s needs %s, module %s has %s" % (om, leaf, tm, ", ".join(sorted(leaves))))
            out[n] = leaves.pop(leaf)
        if leaves:
            raise ValueError("module %s has %s, which layer %s does not" % (tm, ", ".join(sorted(leaves)), om))
    return out


def write_checkpoint(path, tensors, ini, source):
    """An hpctrain checkpoint of format 2 (docs/checkpoints.md): root attributes, model/<tensor name>, state."""
    import h5py
    tmp = path + ".partial"
    with h5py.File(tmp, "w") as f:
        attrs = {"format": "hpctrain-checkpoint", "format_version": 2, "step": 0, "epoch": 0, "epoch_step": 0,
                 "samples": 0, "global_batch": 0, "seed": 0, "world_size": 1, "data_parallel": 1,
                 "model_parallel": 1, "last_loss": 0.0, "train_seconds": 0.0, "optimizer": "none",
                 "optimizer_steps": 0, "ini": ini, "ini_file": source, "model_summary": "imported from " + source,
                 "written_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "software": "tools/torch_import.py"}
        for k, v in attrs.items():
            f.attrs[k] = np.int64(v) if isinstance(v, int) else v
        for name, a in tensors.items():
            f.create_dataset("model/" + name, data=a, fletcher32=True)
        f.create_dataset("state/interval_sums", data=np.zeros((1, 3)))
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights")
    p.add_argument("deck")
    p.add_argument("--out", required=True)
    p.add_argument("--map", help="JSON {their name: our name}")
    p.add_argument("--sample-shape", help="one sample's shape, e.g. 28,28 (default: from the deck's dataset)")
    p.add_argument("--set", action="append", default=[], help="override a deck key, as the trainer's --set")
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "build", "trainer")  # a source tree's build, else an installed trainer
    p.add_argument("--trainer", default=built if os.path.exists(built) else (shutil.which("trainer") or built))
    a = p.parse_args()
    try:
        sets = sum((["--set", s] for s in a.set), [])
        r = subprocess.run([a.trainer, a.deck, "--print-ini"] + sets, capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError("%s --print-ini: %s" % (a.trainer, (r.stderr or r.stdout).strip().splitlines()[-1]))
        ini = r.stdout
        deck = hpctrain_torch.deck_settings(ini)
        shape = (tuple(int(v) for v in a.sample_shape.split(",")) if a.sample_shape else
                 hpctrain_torch.sample_shape_of(deck["data.path"], hpctrain_torch.block_size_of(deck)))
        if deck.get("model.layers"):
            twin = hpctrain_torch.build(deck["model.layers"], shape, a.trainer)
        else:  # [model] arch: the trainer builds the layers
            twin = hpctrain_torch.build_from_description(hpctrain_torch.describe(a.trainer, a.deck, a.set))
        ours = {n: tuple(t.shape) for n, t in twin.hpctrain_tensors().items()}
        theirs = their_tensors(a.weights)
        if a.map:
            mapping = {v: k for k, v in json.load(open(a.map)).items()}
            missing = [n for n in ours if n not in mapping]
            if missing:
                raise ValueError("%s names no tensor for %s" % (a.map, ", ".join(missing[:3])))
            unknown = [k for k in mapping.values() if k not in theirs]
            if unknown:
                raise ValueError("%s maps %s, which %s does not have" % (a.map, unknown[0], a.weights))
        else:
            mapping = by_position(list(theirs), list(ours))
        out = {}
        for n, shape_ours in ours.items():
            t = theirs[mapping[n]]
            if tuple(t.shape) != shape_ours:
                raise ValueError("%s is %s in %s but the deck's %s is %s" % (mapping[n], tuple(t.shape), a.weights, n,
                                                                            shape_ours))
            out[n] = t
        write_checkpoint(a.out, out, ini, os.path.abspath(a.weights))
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        sys.exit("torch_import: %s" % e)
    print("torch_import: %d tensors from %s into %s" % (len(out), a.weights, a.out))


if __name__ == "__main__":
    main()
