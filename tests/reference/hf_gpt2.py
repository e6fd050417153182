#!/usr/bin/python3
"""tests/reference/hf_gpt2.py: a GPT-2 in Hugging Face's layout, written and evaluated as
transformers' GPT2LMHeadModel does, without transformers (Debian does not package it):

  make DIR              a tiny GPT2LMHeadModel folder: config.json (gelu_new, tied head) and
                        model.safetensors (F32) naming every tensor with the "transformer." prefix
                        some published files use, with the h.N.attn.bias and h.N.attn.masked_bias
                        buffers older files carry
  loss DIR DATA T       the mean cross-entropy over DATA's val split in non-overlapping windows of
                        T (as --eval-only takes them), in float64, printed with 8 decimals
  same DIR1 DIR2        exit 0 when both folders hold the same parameters (the prefix and the
                        buffers aside) with the same float32 values
  break DIR KIND        spoil a folder: missing (a tensor gone), act (activation_function relu),
                        shape (c_attn's columns)

The forward follows modeling_gpt2.py: wte[ids] + wpe[positions]; per block x += attn(ln_1(x)),
x += mlp(ln_2(x)) with Conv1D layers (x @ weight + bias, weight [in, out]), c_attn's output split
into q, k and v, causal softmax(q k^T / sqrt(head_dim)), gelu_new = 0.5 x (1 + tanh(sqrt(2/pi)
(x + 0.044715 x^3))); ln_f; logits = x @ wte^T (tied).
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_llama import read_safetensors, same, windows, write_safetensors  # noqa: E402

CONFIG = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 32,
          "n_positions": 64, "n_ctx": 64, "n_inner": None, "vocab_size": 256, "activation_function": "gelu_new",
          "layer_norm_epsilon": 1e-05, "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
          "scale_attn_weights": True, "tie_word_embeddings": True}


def params(folder):
    """config.json and the parameters by name without the prefix, buffers left out."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    w = {k[12:] if k.startswith("transformer.") else k: v for k, v in w.items()}
    return cfg, {k: v for k, v in w.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}


def make(folder):
    os.makedirs(folder, exist_ok=True)
    c, g = CONFIG, np.random.default_rng(35)
    e, v, p = c["n_embd"], c["vocab_size"], c["n_positions"]
    shapes = {"wte.weight": (v, e), "wpe.weight": (p, e), "ln_f.weight": (e,), "ln_f.bias": (e,)}
    for i in range(c["n_layer"]):
        h = "h.%d." % i
        shapes.update({h + "ln_1.weight": (e,), h + "ln_1.bias": (e,), h + "ln_2.weight": (e,), h + "ln_2.bias": (e,),
                       h + "attn.c_attn.weight": (e, 3 * e), h + "attn.c_attn.bias": (3 * e,),
                       h + "attn.c_proj.weight": (e, e), h + "attn.c_proj.bias": (e,),
                       h + "mlp.c_fc.weight": (e, 4 * e), h + "mlp.c_fc.bias": (4 * e,),
                       h + "mlp.c_proj.weight": (4 * e, e), h + "mlp.c_proj.bias": (e,)})
    w = {}
    for name, s in shapes.items():
        scale = 0.3 if "weight" in name else 0.1
        w["transformer." + name] = ((1.0 if ".weight" in name and "ln_" in name else 0.0)
                                    + scale * g.standard_normal(s)).astype(np.float32)
    for i in range(c["n_layer"]):  # the buffers of older files
        w["transformer.h.%d.attn.bias" % i] = np.tril(np.ones((p, p), np.float32))[None, None]
        w["transformer.h.%d.attn.masked_bias" % i] = np.array(-1e4, np.float32)
    write_safetensors(os.path.join(folder, "model.safetensors"), w, "F32")
    json.dump(c, open(os.path.join(folder, "config.json"), "w"), indent=2)


def forward(cfg, w, ids):
    import torch
    W = {k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()}
    h, c, eps = cfg["n_head"], cfg["n_embd"], cfg["layer_norm_epsilon"]
    d = c // h
    b, t = ids.shape

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (c,), W[p + ".weight"], W[p + ".bias"], eps)

    def conv1d(x, p):
        return x @ W[p + ".weight"] + W[p + ".bias"]

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    act = gelu_new if cfg.get("activation_function", "gelu_new") != "gelu" else torch.nn.functional.gelu
    x = W["wte.weight"][ids] + W["wpe.weight"][torch.arange(t)]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        p = "h.%d." % i
        q, k, v = conv1d(ln(x, p + "ln_1"), p + "attn.c_attn").split(c, dim=2)
        q, k, v = (z.view(b, t, h, d).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(((q @ k.transpose(-2, -1)) / math.sqrt(d)).masked_fill(~mask, float("-inf")), dim=-1)
        x = x + conv1d((a @ v).transpose(1, 2).reshape(b, t, c), p + "attn.c_proj")
        x = x + conv1d(act(conv1d(ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    x = ln(x, "ln_f")
    head = W["wte.weight"] if cfg.get("tie_word_embeddings", True) else W["lm_head.weight"]
    return x @ head.T


def loss(folder, data, t):
    import torch
    cfg, w = params(folder)
    x, y = windows(data, t)
    logits = forward(cfg, w, x)
    print("%.8f" % torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item())


def spoil(folder, kind):
    cfg_path, st = os.path.join(folder, "config.json"), os.path.join(folder, "model.safetensors")
    cfg, w = json.load(open(cfg_path)), read_safetensors(st)
    if kind == "missing":
        del w["transformer.h.1.mlp.c_fc.bias"]
    elif kind == "shape":
        w["transformer.h.0.attn.c_attn.weight"] = w["transformer.h.0.attn.c_attn.weight"][:, :64]
    elif kind == "act":
        cfg["activation_function"] = "relu"
    write_safetensors(st, w, "F32")
    json.dump(cfg, open(cfg_path, "w"))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "loss":
        loss(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "same":
        sys.exit(same(sys.argv[2], sys.argv[3], params))
    elif cmd == "break":
        spoil(sys.argv[2], sys.argv[3])
