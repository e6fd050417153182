"""PyTorch modules equal to hpctrain's layers, built from the trainer's own reading of the model.

The grammar is read once, by the trainer: `build_from_description(describe(trainer, deck))`
builds the twin of a deck (`trainer DECK --describe-model`), `build(layers, sample_shape)` that of
a layers string (`trainer --describe-layers LAYERS --input-shape ...`; the trainer is found by
find_trainer()). Either returns an nn.Module for every layer type the engine has, whose
modules are named by position ("seq.02_res.01_attention.qkv_weight") and hold the tensors in
hpctrain's layouts, so a checkpoint's tensors load as they are. sample_shape is
one sample's shape as the data give it ((28, 28) for MNIST, (T,) token ids for a language model;
an int is taken as (T,)). Inputs are what the trainer feeds the first layer (samples x scale +
offset, as the dataset's attributes say; token ids for language models).

hpctrain_tensors() and hpctrain_parameters() give the tensors under hpctrain's names
("h.0.attn.qkv.weight", "dense.1.bias": layers/registry.hpp layer_names), which are those of
`--describe-model` and of checkpoints (format 2).

Used by tools/torch_export.py, tools/torch_import.py, tests/reference/gpt_vs_torch.py and
tools/bench/torch_gpt.py.
"""
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F


def layer_names(specs):
    """The names of one level's layers, as the trainer's description gives them (registry.cpp's
    layer_names())."""
    return [label for _, _, _, _, label in specs]


def rope_freq(theta, d, scaling=None, device=None):
    """RoPE's inverse frequencies [D/2] in float64; scaling = (factor, low, high, context): Llama 3's
    rope_scaling as Hugging Face's _compute_llama3_parameters computes it."""
    freq = theta ** (-torch.arange(0, d // 2, dtype=torch.float64, device=device) * 2 / d)
    if scaling:
        factor, low, high, context = scaling
        wavelen = 2 * math.pi / freq
        scaled = torch.where(wavelen > context / low, freq / factor, freq)
        smooth = (context / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < context / high) & ~(wavelen > context / low)
        freq = torch.where(medium, smoothed, scaled)
    return freq


def rope(z, theta, scaling=None):
    """Rotary embeddings of z [B, H, T, D], rotate-half pairs (Hugging Face's Llama)."""
    t, d = z.shape[-2], z.shape[-1]
    freq = rope_freq(theta, d, scaling, z.device)
    angle = torch.arange(t, dtype=torch.float64, device=z.device)[:, None] * freq[None, :]
    cos, sin = torch.cat([angle.cos()] * 2, -1).to(z.dtype), torch.cat([angle.sin()] * 2, -1).to(z.dtype)
    a, b = z[..., : d // 2], z[..., d // 2 :]
    return z * cos + torch.cat([-b, a], -1) * sin


class Attention(nn.Module):
    """attention(H, kv_heads=K, rope=THETA, rope_factor.., qk_norm=1, qk_norm_weight=1, qk_eps=E, proj_bias=0): q|k|v
    rows [(H + 2K) D, C]; query head h reads key/value head h // (H / K) (Hugging Face's repeat_kv); with
    qk_norm_weight Qwen3's q_norm and k_norm (Qwen3RMSNorm over D, weighted, before the rotation)."""

    def __init__(s, c, heads, bias, theta=0, kv_heads=0, qk_norm=False, scaling=None, proj_bias=None, qk_weight=False,
                 qk_eps=6, head_dim=0):
        super().__init__()
        s.h, s.kv = heads, kv_heads or heads
        s.theta, s.qk_norm, s.scaling = theta, qk_norm, scaling
        s.d = head_dim or c // heads
        rows = (s.h + 2 * s.kv) * s.d
        s.qkv_weight = nn.Parameter(torch.zeros(rows, c))
        s.qkv_bias = nn.Parameter(torch.zeros(rows)) if bias else None
        s.q_norm_weight = nn.Parameter(torch.ones(s.d)) if qk_weight else None
        s.k_norm_weight = nn.Parameter(torch.ones(s.d)) if qk_weight else None
        s.qk_eps = 10.0 ** -qk_eps if qk_weight else 1e-6
        s.proj_weight = nn.Parameter(torch.zeros(c, s.h * s.d))
        s.proj_bias = nn.Parameter(torch.zeros(c)) if (bias if proj_bias is None else proj_bias) else None

    def forward(s, x):
        b, t, c = x.shape
        d = s.d
        q, k, v = F.linear(x, s.qkv_weight, s.qkv_bias).split([s.h * d, s.kv * d, s.kv * d], dim=2)
        q = q.view(b, t, s.h, d).transpose(1, 2)
        k, v = (z.view(b, t, s.kv, d).transpose(1, 2) for z in (k, v))
        if s.qk_norm:
            q, k = (z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + s.qk_eps) for z in (q, k))
            if s.q_norm_weight is not None:
                q, k = q * s.q_norm_weight, k * s.k_norm_weight
        if s.theta:
            q, k = rope(q, s.theta, s.scaling), rope(k, s.theta, s.scaling)
        if s.h != s.kv:  # Hugging Face's repeat_kv
            k, v = (z[:, :, None].expand(b, s.kv, s.h // s.kv, t, d).reshape(b, s.h, t, d) for z in (k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))  # on the input's device (CUDA)
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, s.h * d)
        return F.linear(y, s.proj_weight, s.proj_bias)


class Seq(nn.Module):
    """Layers in order, named like hpctrain's ("00_embedding"); res() blocks add their input."""

    def __init__(s, specs, shape, root):
        super().__init__()
        s.names, s.kinds, s.hnames, s.vocab = [], [], layer_names(specs), {}
        for i, (kind, pos, named, body, _) in enumerate(specs):
            name = "%02d_%s" % (i, kind)
            bias = named.get("bias", "1") in ("1", "true")
            mod = None
            if kind == "embedding":
                mod = nn.Module()
                mod.weight = nn.Parameter(torch.zeros(root.padded(pos[0]), pos[1]))
                shape = (shape[0], pos[1])
                root.tied = [mod]  # a plain list: not registered twice
            elif kind == "position_embedding":
                mod = nn.Module()
                mod.weight = nn.Parameter(torch.zeros(*shape))
            elif kind == "layernorm":
                mod = nn.Module()
                mod.weight = nn.Parameter(torch.ones(shape[-1]))
                mod.bias = nn.Parameter(torch.zeros(shape[-1])) if bias else None
            elif kind == "rmsnorm":
                mod = nn.Module()
                mod.weight = nn.Parameter(torch.ones(shape[-1]))
                mod.eps = 10.0 ** -int(named.get("eps", "5"))
            elif kind == "linear":
                mod = nn.Linear(shape[-1], pos[0], bias=bias)
                shape = shape[:-1] + (pos[0],)
            elif kind == "attention":
                scaling = None
                if int(named.get("rope_factor", 0)):
                    scaling = tuple(int(named.get(key, dflt)) for key, dflt in
                                    (("rope_factor", 0), ("rope_low", 1), ("rope_high", 4), ("rope_context", 8192)))
                mod = Attention(shape[-1], pos[0], bias, int(named.get("rope", 0)), int(named.get("kv_heads", 0)),
                                named.get("qk_norm", "0") in ("1", "true"), scaling,
                                named.get("proj_bias", "1" if bias else "0") in ("1", "true"),
                                named.get("qk_norm_weight", "0") in ("1", "true"), int(named.get("qk_eps", 6)),
                                int(named.get("head_dim", 0)))
            elif kind == "lm_head":
                s.vocab[name] = pos[0]
                if named.get("tie", "1") in ("0", "false"):
                    mod = nn.Linear(shape[-1], root.padded(pos[0]), bias=False)
                shape = shape[:-1] + (pos[0],)
            elif kind == "res":
                mod = Seq(body, shape, root)
            elif kind == "dense":
                if len(shape) != 1:
                    raise ValueError("%s: dense needs a flat input (flatten first), got %s" % (name, shape))
                mod = nn.Linear(shape[0], pos[0])
                shape = (pos[0],)
            elif kind == "flatten":
                shape = (math.prod(shape),)
            elif kind == "conv":
                c, h, w = (1,) + tuple(shape) if len(shape) == 2 else shape
                k, pad, stride = pos[1], int(named.get("pad", 0)), int(named.get("stride", 1))
                mod = nn.Conv2d(c, pos[0], k, stride=stride, padding=pad)
                shape = (pos[0], (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1)
            elif kind == "conv3d":
                c, d, h, w = shape
                k, stride = pos[1], int(named.get("stride", 1))
                same = named.get("pad") == "same"
                pad = "same" if same else int(named.get("pad", 0))  # (PyTorch's 'same': the odd zero after)
                mod = nn.Conv3d(c, pos[0], k, stride=stride, padding=pad)
                p = 0 if same else pad
                shape = (pos[0],) + tuple(n if same else (n + 2 * p - k) // stride + 1 for n in (d, h, w))
            elif kind in ("maxpool3d", "avgpool3d"):
                k, stride = pos[0], int(named.get("stride", pos[0]))
                s.pools = getattr(s, "pools", {})
                s.pools[name] = (k, stride)
                shape = (shape[0],) + tuple((n - k) // stride + 1 for n in shape[1:])
            elif kind == "gap3d":
                shape = (shape[0],)
            elif kind == "dropout":
                s.dropouts = getattr(s, "dropouts", {})
                s.dropouts[name] = pos[0] / 100.0
            elif kind in ("leaky_relu", "scale"):
                s.factors = getattr(s, "factors", {})
                s.factors[name] = float(pos[0])
            elif kind in ("maxpool", "avgpool"):
                k, stride = pos[0], int(named.get("stride", pos[0]))
                s.pools = getattr(s, "pools", {})
                s.pools[name] = (k, stride)
                shape = (shape[0], (shape[1] - k) // stride + 1, (shape[2] - k) // stride + 1)
            elif kind == "gap":
                shape = (shape[0],)
            elif kind == "swiglu":  # silu(gate) * up of [..., 2F]: [..., F]
                shape = shape[:-1] + (shape[-1] // 2,)
            elif kind == "batchnorm":
                eps = 10.0 ** -int(named.get("eps", 5))
                momentum = int(named.get("momentum", 10)) / 100.0
                mod = (nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d)(shape[0], eps=eps, momentum=momentum)
            elif kind not in ("gelu", "gelu_tanh", "relu", "relu2", "tanh", "dropout"):
                raise ValueError("no PyTorch twin for layer type " + kind)
            if mod is not None:
                s.add_module(name, mod)
            s.names.append(name)
            s.kinds.append(kind)
        s.shape, s.root = shape, [root]

    def hpctrain_names(s, prefix):
        """{module path of a tensor ("seq.02_res.01_attention.qkv_weight"): its hpctrain name
        ("h.0.attn.qkv.weight")} for this block's layers."""
        out = {}
        for name, kind, h in zip(s.names, s.kinds, s.hnames):
            m = getattr(s, name, None)
            if m is None:
                continue
            if kind == "res":
                out.update({k: h + "." + v for k, v in m.hpctrain_names(prefix + name + ".").items()})
                continue
            for leaf, _ in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
                out[prefix + name + "." + leaf] = h + "." + re.sub(r"_(weight|bias)$", r".\1", leaf)
        return out

    def forward(s, x):
        for name, kind in zip(s.names, s.kinds):
            m = getattr(s, name, None)
            if kind == "embedding":
                x = F.embedding(x, m.weight)
            elif kind == "position_embedding":
                x = x + m.weight
            elif kind == "layernorm":
                x = F.layer_norm(x, (x.shape[-1],), m.weight, m.bias, eps=1e-5)
            elif kind == "swiglu":
                a, b = x.chunk(2, dim=-1)
                x = F.silu(a) * b
            elif kind == "rmsnorm":
                x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + m.eps) * m.weight
            elif kind == "lm_head":  # (rows past the vocabulary are [model] vocab_multiple's padding)
                x = (m(x) if m is not None else F.linear(x, s.root[0].tied[0].weight))[..., : s.vocab[name]]
            elif kind == "res":
                x = x + m(x)
            elif kind == "flatten":
                x = x.flatten(1)
            elif kind == "conv":
                x = m(x.unsqueeze(1) if x.dim() == 3 else x)  # [N, H, W] images are one channel
            elif kind == "maxpool":
                x = F.max_pool2d(x, *s.pools[name])
            elif kind == "avgpool":
                x = F.avg_pool2d(x, *s.pools[name])
            elif kind == "gap":
                x = x.mean(dim=(2, 3))
            elif kind == "conv3d":
                x = m(x)
            elif kind == "maxpool3d":
                x = F.max_pool3d(x, *s.pools[name])
            elif kind == "avgpool3d":
                x = F.avg_pool3d(x, *s.pools[name])
            elif kind == "gap3d":
                x = x.mean(dim=(2, 3, 4))
            elif kind == "leaky_relu":
                x = F.leaky_relu(x, s.factors[name])
            elif kind == "scale":
                x = x * s.factors[name]
            elif kind == "gelu":
                x = F.gelu(x)
            elif kind == "relu":
                x = F.relu(x)
            elif kind == "gelu_tanh":
                x = F.gelu(x, approximate="tanh")
            elif kind == "relu2":
                x = F.relu(x).square()
            elif kind == "tanh":
                x = torch.tanh(x)
            elif kind == "dropout":  # off unless the model's dropout_on (a training benchmark) is set
                if s.root[0].dropout_on and s.training:
                    x = F.dropout(x, s.dropouts[name])
            else:
                x = m(x)
        return x


class Model(nn.Module):
    def __init__(s, specs, sample_shape, vocab_multiple=1):
        """specs: the trainer's description of the layers (specs_from_description); embedding and
        lm_head tables hold round_up(V, vocab_multiple) rows ([model] vocab_multiple)."""
        super().__init__()
        s.vocab_multiple = vocab_multiple
        s.dropout_on = False  # dropout layers: identity (the reference tests), unless set
        s.seq = Seq(specs, tuple(sample_shape), s)

    def padded(s, rows):
        return (rows + s.vocab_multiple - 1) // s.vocab_multiple * s.vocab_multiple

    def forward(s, idx):
        return s.seq(idx)

    def hpctrain_parameters(s):
        """{hpctrain name: parameter} (the tied head has none of its own), in hpctrain's order."""
        names = s.seq.hpctrain_names("seq.")
        return {names[n]: p for n, p in s.named_parameters()}


    def hpctrain_tensors(s, legacy=False):
        """{hpctrain name ("h.0.attn.qkv.weight"): tensor}: parameters and batch-norm buffers.
        legacy: under format-1 checkpoints' positional names ("02_res/01_attention/qkv_weight"),
        which are the modules' paths."""
        names = s.seq.hpctrain_names("seq.")
        if legacy:
            names = {k: k[len("seq."):].replace(".", "/") for k in names}
        out = {names[n]: p for n, p in s.named_parameters()}
        for n, b in s.named_buffers():
            if not n.endswith("num_batches_tracked"):
                out[names[n]] = b
        return out


def find_trainer(trainer=None):
    """The trainer that reads the grammar: `trainer`, else $HPCTRAIN_TRAINER, else build/trainer
    beside these tools (or bin/trainer of an installed prefix)."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    for t in (trainer, os.environ.get("HPCTRAIN_TRAINER"), os.path.join(here, "..", "build", "trainer"),
              os.path.join(here, "..", "..", "..", "bin", "trainer")):
        if t and os.path.isfile(t) and os.access(t, os.X_OK):
            return t
    raise FileNotFoundError("no trainer to read the layers string: build hpctrain (tools/quickstart.sh), "
                            "set HPCTRAIN_TRAINER, or pass trainer=")


def run_trainer(args):
    """The trainer's JSON output for `args` (a list), parsed; ValueError with its error line."""
    import json
    import subprocess
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError("%s: %s" % (" ".join(args[:2]), (r.stderr or r.stdout).strip().splitlines()[-1]))
    return json.loads(r.stdout[r.stdout.index("{"):])


def describe_layers(layers, sample_shape, trainer=None, vocab_multiple=1):
    """`trainer --describe-layers LAYERS --input-shape ...`, parsed: the trainer's own reading of a
    layers string (repeat() written out, every layer named)."""
    shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
    return run_trainer([find_trainer(trainer), "--describe-layers", layers, "--input-shape",
                        ",".join(str(d) for d in shape), "--vocab-multiple", str(vocab_multiple)])


def build(layers, sample_shape, trainer=None):
    """The PyTorch twin of [model] layers for samples of sample_shape (an int t: token windows
    (t,)), from the trainer's reading of the string (describe_layers)."""
    return build_from_description(describe_layers(layers, sample_shape, trainer))


def specs_from_description(layers):
    """Specs [(type, positional ints, {named}, body specs, name)] from the "layers" of the trainer's
    description (--describe-model, --describe-layers: its own reading of the grammar)."""
    def number(v):
        return int(v) if v.lstrip("+-").isdigit() else float(v)

    return [(l["type"], [number(v) for v in l.get("numbers", l["positional"])], dict(l["named"]),
             specs_from_description(l["body"]) if "body" in l else "", l["name"]) for l in layers]


def build_from_description(d):
    """The PyTorch twin of the model `trainer DECK --describe-model` printed (its JSON, parsed)."""
    return Model(specs_from_description(d["layers"]), tuple(d["sample_shape"]), int(d.get("vocab_multiple", 1)))


def describe(trainer, deck, sets=()):
    """`trainer DECK --describe-model` (sets: "section.key=value" overrides), parsed; reads the dataset."""
    return run_trainer([find_trainer(trainer), deck, "--describe-model"] + sum((["--set", s] for s in sets), []))


def deck_settings(ini_text):
    """{"section.key": value} of an INI text (a deck, or a checkpoint's stored configuration)."""
    out, section = {}, ""
    for line in ini_text.splitlines():
        line = line.strip()
        if line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif "=" in line:
            k, v = line.split("=", 1)
            out[section + "." + k.strip()] = v.strip()
    return out


def block_size_of(deck):
    """[model] block_size of deck_settings() (or the old [data] block_size); 0 when unset."""
    return int(deck.get("model.block_size", deck.get("data.block_size", "0")) or 0)


def sample_shape_of(data_root, block_size=0):
    """One sample's shape from a dataset's train shards (token datasets: (block_size,))."""
    import glob
    import h5py
    shards = sorted(glob.glob(data_root + "/train/*.h5"))
    if not shards:
        raise ValueError("no shards in %s/train" % data_root)
    with h5py.File(shards[0], "r") as f:
        if "tokens" in f:
            return (int(block_size),)
        return tuple(f["samples"].shape[1:])
