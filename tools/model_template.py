"""A network trained by hpctrain, as a plain PyTorch nn.Module: needs torch alone (no hpctrain
code). Written by hpctrain's tools/torch_export.py beside the weights it exported.

    import torch
    from model import Model
    model = Model()
    model.load_state_dict(torch.load("weights.pt"))   # or safetensors.torch.load_file("model.safetensors")
    model.eval()
    y = model(x)

The tensor names are hpctrain's ("h.0.attn.qkv.weight", "dense.1.bias"), the same in the
state_dict, in `trainer --export`'s safetensors file and in hpctrain's checkpoints; the layouts
are PyTorch's ([out, in] weights; attention's q, k and v rows stacked in one qkv.weight).
Inputs are what the trainer feeds the first layer (see INPUT below): float samples x scale +
offset as the dataset's attributes give them, or int64 token ids [batch, T] for a language
model, whose output is the logits [batch, T, vocabulary].
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# The trainer's description of the network (`trainer DECK --describe-model`): every layer with its
# arguments and name, every tensor with its shape.
DESCRIPTION = None  # (torch_export.py writes it here)
INPUT = None


def _flag(named, key, default):
    return named.get(key, default) in ("1", "true")


def _rope(z, theta, scaling):
    """Rotary embeddings of z [B, H, T, D] (rotate-half pairs, Llama 3's scaling when given)."""
    t, d = z.shape[-2], z.shape[-1]
    freq = theta ** (-torch.arange(0, d // 2, dtype=torch.float64, device=z.device) * 2 / d)
    if scaling:
        factor, low, high, context = scaling
        wavelen = 2 * math.pi / freq
        scaled = torch.where(wavelen > context / low, freq / factor, freq)
        smooth = (context / wavelen - low) / (high - low)
        medium = ~(wavelen < context / high) & ~(wavelen > context / low)
        freq = torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)
    angle = torch.arange(t, dtype=torch.float64, device=z.device)[:, None] * freq[None, :]
    cos, sin = torch.cat([angle.cos()] * 2, -1).to(z.dtype), torch.cat([angle.sin()] * 2, -1).to(z.dtype)
    a, b = z[..., : d // 2], z[..., d // 2:]
    return z * cos + torch.cat([-b, a], -1) * sin


def _attention(x, heads, named, qkv_w, qkv_b, proj_w, proj_b, training):
    """Causal self-attention; q|k|v rows [(H + 2K) D, C]; query head h reads key/value head h // (H / K)."""
    b, t, c = x.shape
    d, kv = c // heads, int(named.get("kv_heads", 0)) or heads
    q, k, v = F.linear(x, qkv_w, qkv_b).split([heads * d, kv * d, kv * d], dim=2)
    q = q.view(b, t, heads, d).transpose(1, 2)
    k, v = (z.view(b, t, kv, d).transpose(1, 2) for z in (k, v))
    if _flag(named, "qk_norm", "0"):
        q, k = (z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + 1e-6) for z in (q, k))
    theta = int(named.get("rope", 0))
    if theta:
        scaling = None
        if int(named.get("rope_factor", 0)):
            scaling = tuple(int(named.get(key, dflt)) for key, dflt in
                            (("rope_factor", 0), ("rope_low", 1), ("rope_high", 4), ("rope_context", 8192)))
        q, k = _rope(q, theta, scaling), _rope(k, theta, scaling)
    if kv != heads:
        k, v = (z[:, :, None].expand(b, kv, heads // kv, t, d).reshape(b, heads, t, d) for z in (k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
    att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
    att = F.dropout(att, int(named.get("dropout", 0)) / 100.0, training)
    return F.linear((att @ v).transpose(1, 2).contiguous().view(b, t, c), proj_w, proj_b)


class Model(nn.Module):
    """The exported network. Its parameters and buffers sit under their hpctrain names (modules
    named by the names' parts), so state_dict() and load_state_dict() use those names."""

    def __init__(self, description=None):
        super().__init__()
        d = description or DESCRIPTION
        self._spec = d["layers"]
        for t in d["tensors"]:
            self._put(t["name"], nn.Parameter(torch.zeros(t["shape"])))
        for b in d.get("buffers", []):  # batch norm's running statistics
            self._put(b["name"], (torch.ones if b["name"].endswith("running_var") else torch.zeros)(b["size"]))
        embeddings = [l["name"] + ".weight" for l in self._spec if l["type"] == "embedding"]
        self._tied = embeddings[0] if embeddings else None  # lm_head(V) with tie=1 reads this table

    def _put(self, name, value):
        *path, leaf = name.split(".")
        owner = self
        for part in path:
            if part not in owner._modules:
                owner.add_module(part, nn.Module())
            owner = owner._modules[part]
        if isinstance(value, nn.Parameter):
            owner.register_parameter(leaf, value)
        else:
            owner.register_buffer(leaf, value)

    def _get(self, name):
        """The parameter or buffer `name`, None when the layer has none (bias=0)."""
        *path, leaf = name.split(".")
        owner = self
        for part in path:
            owner = owner._modules.get(part) if owner is not None else None
        if owner is None:
            return None
        return owner._parameters.get(leaf, owner._buffers.get(leaf))

    def forward(self, x):
        return self._run(self._spec, "", x)

    def _run(self, layers, prefix, x):
        for layer in layers:
            x = self._layer(layer, prefix + layer["name"] + ".", x)
        return x

    def _layer(self, layer, n, x):  # noqa: C901 (one branch per layer type)
        kind, pos, named = layer["type"], layer["positional"], layer["named"]
        w, b = self._get(n + "weight"), self._get(n + "bias")
        eps = 10.0 ** -int(named.get("eps", 5))
        if kind == "embedding":
            return F.embedding(x, w)
        if kind == "position_embedding":
            return x + w[: x.shape[-2]]
        if kind == "layernorm":
            return F.layer_norm(x, (x.shape[-1],), w, b, eps=eps)
        if kind == "rmsnorm":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
        if kind in ("linear", "dense"):
            return F.linear(x, w, b)
        if kind == "attention":
            return _attention(x, int(pos[0]), named, self._get(n + "qkv.weight"), self._get(n + "qkv.bias"),
                              self._get(n + "proj.weight"), self._get(n + "proj.bias"), self.training)
        if kind == "lm_head":  # (rows past the vocabulary are padding: dropped)
            return F.linear(x, w if w is not None else self._get(self._tied))[..., : int(pos[0])]
        if kind == "res":
            return x + self._run(layer["body"], n, x)
        if kind == "swiglu":
            gate, up = x.chunk(2, dim=-1)
            return F.silu(gate) * up
        if kind == "flatten":
            return x.flatten(1)
        if kind == "conv":  # [N, H, W] images are one channel
            return F.conv2d(x.unsqueeze(1) if x.dim() == 3 else x, w, b, stride=int(named.get("stride", 1)),
                            padding=int(named.get("pad", 0)))
        if kind in ("maxpool", "avgpool"):
            pool = F.max_pool2d if kind == "maxpool" else F.avg_pool2d
            return pool(x, int(pos[0]), int(named.get("stride", pos[0])))
        if kind == "gap":
            return x.mean(dim=(2, 3))
        if kind == "batchnorm":
            return F.batch_norm(x, self._get(n + "running_mean"), self._get(n + "running_var"), w, b, self.training,
                                int(named.get("momentum", 10)) / 100.0, eps)
        if kind == "dropout":
            return F.dropout(x, int(pos[0]) / 100.0, self.training)
        activations = {"relu": F.relu, "tanh": torch.tanh, "gelu": F.gelu,
                       "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "relu2": lambda v: F.relu(v).square()}
        if kind in activations:
            return activations[kind](x)
        raise ValueError("model.py: no implementation of layer type " + kind)
