#!/usr/bin/python3
"""tests/reference/hf_llama.py: a Llama in Hugging Face's layout, written and evaluated as
transformers' LlamaForCausalLM does, without transformers (Debian does not package it):

  make DIR              a tiny LlamaForCausalLM folder: config.json (grouped-query attention, llama3
                        rope_scaling, untied head) and two safetensors shards listed by
                        model.safetensors.index.json, one BF16 and one F32, with the
                        rotary_emb.inv_freq buffers older files carry
  loss DIR DATA T       the mean cross-entropy over DATA's val split in non-overlapping windows of
                        T (as --eval-only takes them), in float64, printed with 8 decimals
  serve                 answer `loss DIR DATA T` lines from stdin, one loss line each (torch imported once)
  same DIR1 DIR2        exit 0 when both folders hold the same tensors with the same float32 values
  mistral DIR           make the folder a MistralForCausalLM's (model_type mistral, sliding_window 32:
                        Llama's tensors, every layer attending over the last 32 positions)
  qwen2 DIR             make the folder a Qwen2ForCausalLM's (model_type qwen2: Llama's tensors and biases
                        on q_proj, k_proj and v_proj, in a third shard; rope_theta 1e6, no attention_bias
                        key, a tied head (lm_head.weight gone), 16 embedding rows past the byte tokens
                        (vocab_size 272), a sliding_window that use_sliding_window false leaves off)
  qwen3 DIR [HEAD_DIM]  make the folder a Qwen3ForCausalLM's (model_type qwen3: Llama's tensors and the
                        QK-norm's weights q_norm and k_norm, in a third shard; rms_norm_eps 1e-6); with
                        HEAD_DIM, heads that wide (new q, k, v and o projections, one file), as Qwen3
                        0.6B's 128 at hidden_size 1024 with 16 heads
  gemma DIR             make the folder a GemmaForCausalLM's (model_type gemma: Llama's tensors, norm
                        weights around 0 (Gemma's scale by 1 + weight), a tied head, hidden_act "gelu" with
                        hidden_activation "gelu_pytorch_tanh", rms_norm_eps 1e-6; one F32 file)
  gemma2 DIR            make the folder a Gemma2ForCausalLM's (model_type gemma2: Gemma's, the norms after
                        attention and the MLP, attn_logit_softcapping 1 and final_logit_softcapping 2 (small,
                        so that they bend this model's scores and logits), sliding_window 32 on layer 0, no
                        layer_types (older files: every other layer from 0 slides), query_pre_attn_scalar 4
                        for heads of 8)
  gemma3 DIR            make the folder a Gemma3ForCausalLM's (model_type gemma3_text: Gemma's and the
                        weighted QK-norm's q_norm, k_norm, the norms after attention and the MLP, heads 16
                        wide at hidden_size 32 (Gemma 3 1B's 4 x 256 at 1152), layer_types sliding then
                        full: layer 0 rotates with rope_local_base_freq 10000, layer 1 with rope_theta and
                        llama3's scaling; sliding_window 32)
  gemma3_image_text DIR make a gemma3 folder a Gemma3ForConditionalGeneration's (model_type gemma3: the text
                        model's keys in text_config, less those at Gemma3TextConfig's defaults; rope_scaling
                        linear 8; tensors under language_model.model., a vision tower's beside them)
  smollm3 DIR           make the folder a SmolLM3ForCausalLM's (model_type smollm3: Llama's tensors, layer 1
                        of 2 without rotary positions, no_rope_layers [1, 0]; rope_theta 5e6, no scaling)
  olmo2 DIR             make the folder an Olmo2ForCausalLM's (model_type olmo2: no input_layernorm, norms
                        after attention and the MLP only, q_norm and k_norm over the projections' whole
                        width, rms_norm_eps 1e-6; one F32 file)
  olmo3 DIR             make the folder an Olmo3ForCausalLM's (model_type olmo3: olmo2's, layer_types sliding
                        then full, sliding_window 32, yarn's rope_scaling on the full layer alone)
  arcee DIR             make the folder Arcee's ArceeForCausalLM (model_type arcee: Llama's tensors with
                        up_proj alone in the MLP, relu(x)^2 between it and down_proj; one F32 file)
  exaone4 DIR           make the folder LG's Exaone4ForCausalLM (model_type exaone4: OLMo 2's norms after the
                        sublayers alone, Qwen3's per-head q_norm and k_norm, layer_types sliding then full,
                        sliding_window 32, rotary positions on the sliding layer alone; one F32 file)
  glm DIR, glm4 DIR     make the folder THUDM's GlmForCausalLM (model_type glm: biases on q, k and v, half of
                        each head rotating in interleaved pairs, gate|up fused in gate_up_proj; one F32
                        file) or Glm4ForCausalLM (glm4: those with norms after attention and the MLP too)
  phi3 DIR              make the folder a Phi3ForCausalLM's (model_type phi3: q|k|v fused in qkv_proj and
                        gate|up in gate_up_proj, one F32 file; sliding_window 63 on every layer)
  granite DIR           make the folder IBM Granite's GraniteForCausalLM (model_type granite: Llama's tensors,
                        embedding_multiplier 12, residual_multiplier 0.22, attention_multiplier 0.0625,
                        logits_scaling 2, rope_theta 1e7, a tied head)
  yarn DIR              give the folder yarn's rope_scaling: factor 4 over an original context of 16,
                        beta_fast 8 (transformers 5's reading)
  phi4 DIR              make a phi3 folder Phi-4 mini's kind: partial_rotary_factor 0.75 (the first 6 of 8
                        columns rotate), Phi-3.5 mini's longrope (3 short, 3 long factors; original context 32
                        of 64), no window
  transformers5 DIR [GLOBAL LOCAL]
                        rewrite config.json in transformers 5's layout (standardize_rope_params): rope_theta,
                        rope_scaling and Phi-3's partial_rotary_factor inside rope_parameters; a Gemma 3's (its text_config's too) one
                        section per layer kind, full_attention with the scaling, sliding_attention default
                        with rope_local_base_freq (Gemma3TextConfig's defaults where the file leaves them
                        out); with GLOBAL and LOCAL, those bases in place of the folder's
  (the commands that make another class's folder, transformers5 and break: tests/reference/hf_llama_variants.py)
  break DIR KIND        spoil a folder: missing (a tensor gone), shape (k_proj's rows), arch
                        (model_type gpt_neox), heads (num_key_value_heads 3), scaling (rope_type dynamic),
                        window (a Mistral's sliding_window 0), max_window (a Qwen2 windowed from layer 1
                        of 2: use_sliding_window, max_window_layers 1), partial (partial_rotary_factor 0.75),
                        head_dim (twice hidden_size / num_attention_heads, the tensors left as they are),
                        type (tie_word_embeddings 1, a number where a boolean belongs), attention_multiplier (a Granite's 0), yarn_factor (a yarn folder's factor gone), partial_odd (a Phi-3's
                        partial_rotary_factor 0.375: 3 columns), longrope_count (a phi4 folder's 2 short factors), softcap (a Gemma 3's
                        attn_logit_softcapping 50, Gemma 2's), layer_types (a Gemma 3's full layer first),
                        scalar (a Gemma 3's query_pre_attn_scalar 0), no_text_config (a
                        Gemma3ForConditionalGeneration's text_config gone), no_rope (a SmolLM3's no_rope_layers
                        [0, 1]), olmo2_norm (an OLMo 2's q_norm one head wide); of a transformers5 folder:
                        v5_both (a rope_scaling linear 2 beside rope_parameters), v5_dynamic (rope_type dynamic), v5_partial (partial_rotary_factor 0.75 inside), v5_kinds (a Llama's
                        sliding_attention section of another base), v5_local_scaled (a Gemma 3's
                        sliding_attention section scaled linear 2)

The forward follows modeling_llama.py: RMSNorm as weight * (x * rsqrt(mean(x^2) + eps)), RoPE with
rotate_half on q and k after the projections (inv_freq from rope_theta, then llama3's scaling),
repeat_kv for the key/value heads, causal softmax(q k^T / sqrt(head_dim)), SiLU(gate) * up; the
q, k and v projections add their biases where the folder has them (Qwen2's modeling_qwen2.py), and
each query and key head is RMS-normalized over head_dim and weighted by q_norm / k_norm where the
folder has them, before the rotation (Qwen3's modeling_qwen3.py). Gemma (modeling_gemma.py,
modeling_gemma3.py): the embeddings times sqrt(hidden_size) rounded to float32 (the normalizer in
the weights' dtype), every RMS norm (q_norm, k_norm too) scaled by 1 + weight, GELU's tanh form for
SiLU; Gemma 2 and 3 add a norm on attention's output and on the MLP's before each residual add, scores
scaled by query_pre_attn_scalar^-1/2 (Gemma 2: soft-capped scores and logits, cap tanh(x / cap)), and sliding layers that rotate with rope_local_base_freq (no
scaling). A sliding layer (Gemma 3's, Mistral's, Phi-3's; Qwen's with use_sliding_window) attends over
the last sliding_window positions only, its own included (masking_utils' kv_idx > q_idx - sliding_window).
"""
import glob
import json
import math
import os
import struct
import sys

import numpy as np

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
          "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 32},
          "vocab_size": 256, "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
          "torch_dtype": "bfloat16"}


# Gemma3TextConfig's defaults (configuration_gemma3.py), which a Gemma3ForConditionalGeneration's
# text_config leaves out.
GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                        "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                        "query_pre_attn_scalar": 256, "sliding_window": 4096, "rope_local_base_freq": 10000.0,
                        "sliding_window_pattern": 6, "tie_word_embeddings": True, "attn_logit_softcapping": None,
                        "final_logit_softcapping": None, "rope_scaling": None}


def write_safetensors(path, tensors, dtype):
    """tensors {name: float32 array} as dtype F32 or BF16 (the upper halves of float32: exact for values
    that are bf16 already)."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        raw = (a.view(np.uint32) >> 16).astype("<u2").tobytes() if dtype == "BF16" else a.astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header, body, out = json.loads(data[8:8 + n]), data[8 + n:], {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(body[b:e], "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(body[b:e], {"F32": "<f4", "F16": "<f2"}[t["dtype"]]).astype(np.float32)
        out[name] = a.reshape(t["shape"])
    return out


def load(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else [
        "model.safetensors"]
    w = {}
    for f in files:
        w.update(read_safetensors(os.path.join(folder, f)))
    if cfg.get("model_type") == "gemma3":  # (Gemma3ForConditionalGeneration: the text model, as transformers reads it)
        cfg = dict(GEMMA3_TEXT_DEFAULTS, **cfg["text_config"])
        cfg["model_type"] = "gemma3_text"
        w = {"model." + k[len("language_model.model."):]: v for k, v in w.items() if k.startswith("language_model.model.")}
    elif cfg.get("model_type") == "gemma3_text":  # (the keys a file leaves out at the defaults)
        cfg = dict(GEMMA3_TEXT_DEFAULTS, **cfg)
    if cfg.get("model_type") in ("phi3", "glm", "glm4"):  # (Phi3MLP: gate, up row blocks; Phi-3's q, k, v too)
        d = cfg["hidden_size"] // cfg["num_attention_heads"]
        q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
        for k in [k for k in w if k.endswith("qkv_proj.weight") or k.endswith("gate_up_proj.weight")]:
            p, t = k.rsplit(".", 2)[0] + ".", w.pop(k)
            if "qkv_proj" in k:
                w.update({p + "q_proj.weight": t[:q], p + "k_proj.weight": t[q:q + kv], p + "v_proj.weight": t[q + kv:]})
            else:
                half = t.shape[0] // 2
                w.update({p + "gate_proj.weight": t[:half], p + "up_proj.weight": t[half:]})
    return cfg, w


def make(folder):
    os.makedirs(folder, exist_ok=True)
    c, g = CONFIG, np.random.default_rng(34)
    d, kv = c["hidden_size"] // c["num_attention_heads"], c["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], c["hidden_size"]), "model.norm.weight": (32,),
              "lm_head.weight": (c["vocab_size"], c["hidden_size"])}
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        shapes.update({p + "input_layernorm.weight": (32,), p + "post_attention_layernorm.weight": (32,),
                       p + "self_attn.q_proj.weight": (32, 32), p + "self_attn.k_proj.weight": (kv * d, 32),
                       p + "self_attn.v_proj.weight": (kv * d, 32), p + "self_attn.o_proj.weight": (32, 32),
                       p + "mlp.gate_proj.weight": (48, 32), p + "mlp.up_proj.weight": (48, 32),
                       p + "mlp.down_proj.weight": (32, 48)})
    w = {}
    for name, s in shapes.items():
        w[name] = (1.0 + 0.1 * g.standard_normal(s) if "norm" in name else 0.2 * g.standard_normal(s)).astype(np.float32)
    w = {k: ((v.view(np.uint32) >> 16) << 16).view(np.float32) for k, v in w.items()}  # bf16 values throughout
    first = {k: v for k, v in w.items() if ".layers.0." in k or "embed" in k}
    second = {k: v for k, v in w.items() if k not in first}
    inv = np.ones(d // 2, np.float32)
    first["model.layers.0.self_attn.rotary_emb.inv_freq"] = inv  # a buffer, as older files carry
    write_safetensors(os.path.join(folder, "model-00001-of-00002.safetensors"), first, "BF16")
    write_safetensors(os.path.join(folder, "model-00002-of-00002.safetensors"), second, "F32")
    wm = {k: "model-00001-of-00002.safetensors" for k in first}
    wm.update({k: "model-00002-of-00002.safetensors" for k in second})
    json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(os.path.join(folder, "model.safetensors.index.json"), "w"))
    json.dump(c, open(os.path.join(folder, "config.json"), "w"), indent=2)


def rotary(cfg, d, t):
    """A layer's inv_freq, amplitude and rotated columns in a forward over t positions: the first
    int(d * partial_rotary_factor) columns of each head (Phi-4 mini's 0.75), longrope's
    (_compute_longrope_parameters, Phi-3.5 mini's) short or long factors (dynamic_rope_update: the long
    ones when t passes the original context) and attention_factor."""
    import torch
    rot = int(d * cfg.get("partial_rotary_factor", 1.0))
    s = cfg.get("rope_scaling") or {}
    if s.get("rope_type", s.get("type")) == "yarn":
        return yarn(cfg, s, rot) + (rot,)
    if s.get("rope_type", s.get("type")) != "longrope":
        return inv_freq(cfg, rot), 1.0, rot
    orig = cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])
    factor = cfg["max_position_embeddings"] / orig if "original_max_position_embeddings" in cfg else s.get("factor")
    amp = s.get("attention_factor") or (1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig)))
    ext = torch.tensor(s["long_factor"] if t > orig else s["short_factor"], dtype=torch.float64)
    return inv_freq(dict(cfg, rope_scaling=None), rot) / ext, amp, rot


def yarn(cfg, s, dim):
    """_compute_yarn_parameters as transformers 5 computes it (the factor as given; the context
    original_max_position_embeddings, else max_position_embeddings): inv_freq and attention_factor."""
    import torch
    base, factor = cfg.get("rope_theta", 10000.0), s["factor"]
    orig = s.get("original_max_position_embeddings") or cfg["max_position_embeddings"]

    def mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
    amp = s.get("attention_factor")
    if amp is None:
        amp = mscale(factor, s["mscale"]) / mscale(factor, s["mscale_all_dim"]) if s.get("mscale") and s.get(
            "mscale_all_dim") else mscale(factor)

    def correction(turns):
        return (dim * math.log(orig / (turns * 2 * math.pi))) / (2 * math.log(base))
    low, high = correction(s.get("beta_fast") or 32), correction(s.get("beta_slow") or 1)
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
    pos = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    kept = 1 - ramp
    return (1 / (factor * pos)) * (1 - kept) + (1 / pos) * kept, amp


def inv_freq(cfg, d):
    import torch
    f = cfg.get("rope_theta", 10000.0) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    s = cfg.get("rope_scaling")
    if s and s.get("rope_type") == "linear":  # (_compute_linear_scaling_rope_parameters)
        return f / s["factor"]
    if s:
        factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s[
            "original_max_position_embeddings"]
        wavelen = 2 * math.pi / f
        scaled = torch.where(wavelen > old / low, f / factor, f)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        f = torch.where(medium, smoothed, scaled)
    return f


def rotates(cfg, i):
    """Whether layer i turns its queries and keys: every layer but SmolLM3's NoPE layers (no_rope_layers
    0, or every no_rope_layer_interval-th, 4, without the list: SmolLM3Config's) and EXAONE 4's full
    layers where it has sliding ones (Exaone4Attention: global NoPE)."""
    if cfg.get("model_type") == "exaone4":
        return cfg.get("sliding_window") is None or sliding(cfg, i)
    if cfg.get("model_type") != "smollm3":
        return True
    listed = cfg.get("no_rope_layers")
    return bool(listed[i]) if listed is not None else (i + 1) % cfg.get("no_rope_layer_interval", 4) != 0


def sliding(cfg, i):
    """Whether layer i attends over the last sliding_window positions only, as each *Config decides:
    Mistral's and Phi-3's every layer; Qwen2's and Qwen3's with use_sliding_window, from layer
    max_window_layers on; Gemma 3's and OLMo 3's local layers; layer_types where a folder lists them."""
    kind = cfg.get("model_type")
    if cfg.get("sliding_window") is None or (kind in ("qwen2", "qwen3") and not cfg.get("use_sliding_window")):
        return False
    if cfg.get("layer_types"):
        return cfg["layer_types"][i] == "sliding_attention"
    if kind == "gemma3_text":
        return (i + 1) % cfg.get("sliding_window_pattern", 6) != 0
    if kind == "olmo3":  # (Olmo3Config's default: every 4th layer full)
        return (i + 1) % 4 != 0
    if kind == "exaone4":  # (Exaone4Config's sliding_window_pattern, 4: every 4th layer full)
        return (i + 1) % cfg.get("sliding_window_pattern", 4) != 0
    if kind == "gemma2":  # (older files: layer 0 sliding, then every other one)
        return i % 2 == 0
    if kind in ("qwen2", "qwen3"):
        return i >= cfg.get("max_window_layers", 28)
    return kind in ("mistral", "phi3")


def forward(cfg, w, ids):
    import torch
    W = {k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()}
    h, kv, eps = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"]), cfg["rms_norm_eps"]
    c = cfg["hidden_size"]
    d = cfg.get("head_dim") or c // h
    b, t = ids.shape
    gemma = cfg.get("model_type") in ("gemma", "gemma2", "gemma3_text")
    gemma3 = cfg.get("model_type") == "gemma3_text"
    sandwich = cfg.get("model_type") in ("gemma2", "gemma3_text")  # (and query_pre_attn_scalar)
    olmo2 = cfg.get("model_type") in ("olmo2", "olmo3")  # (norms after the sublayers alone; QK-norm over all heads)
    post = olmo2 or cfg.get("model_type") == "exaone4"  # (EXAONE 4: Olmo2DecoderLayer, Qwen3's per-head QK-norm)
    glm = cfg.get("model_type") in ("glm", "glm4")  # (interleaved rotary pairs; GLM-4: norms after both sublayers)
    glm4 = cfg.get("model_type") == "glm4"
    olmo3 = cfg.get("model_type") == "olmo3"
    attn_cap, final_cap = cfg.get("attn_logit_softcapping"), cfg.get("final_logit_softcapping")
    granite = cfg.get("model_type") == "granite"  # (modeling_granite.py's multipliers; 1 when absent)
    residual = cfg.get("residual_multiplier", 1.0) if granite else 1.0

    def rms(x, weight):
        return (1 + weight if gemma else weight) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def angles(local):  # (Gemma 3's and OLMo 3's sliding layers: unscaled, at rope_local_base_freq or rope_theta)
        base = cfg.get("rope_local_base_freq", 10000.0) if gemma3 else cfg.get("rope_theta", 10000.0)
        f, amp, rot = rotary(dict(cfg, rope_theta=base, rope_scaling=None) if local else cfg, d, t)
        ang = torch.arange(t, dtype=torch.float64)[:, None] * f[None, :]
        emb = torch.cat((ang, ang), dim=-1)
        return emb.cos() * amp, emb.sin() * amp, rot

    def turn(x, cos, sin, rot):  # (Phi-3's apply_rotary_pos_emb: the columns from rot on pass)
        if glm:  # (modeling_glm.py: pairs (2i, 2i + 1) at frequency i, rotate_half over them)
            c, s = cos[..., : rot // 2].repeat_interleave(2, dim=-1), sin[..., : rot // 2].repeat_interleave(2, dim=-1)
            r = x[..., :rot]
            pairs = torch.stack((-r[..., 1::2], r[..., 0::2]), dim=-1).flatten(-2)
            return torch.cat((r * c + pairs * s, x[..., rot:]), dim=-1)
        return torch.cat((x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin, x[..., rot:]), dim=-1)

    x = W["model.embed_tokens.weight"][ids]
    if gemma:
        x = x * float(np.float32(math.sqrt(c)))
    if granite:
        x = x * cfg.get("embedding_multiplier", 1.0)
    pos = torch.arange(t)
    causal = pos[None, :] <= pos[:, None]
    scale = cfg["query_pre_attn_scalar"] ** -0.5 if sandwich else 1 / math.sqrt(d)
    if granite:
        scale = cfg.get("attention_multiplier", 1.0)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        local = sliding(cfg, i)
        cos, sin, rot = angles(local and (gemma3 or olmo3))
        mask = causal & (pos[:, None] - pos[None, :] < cfg["sliding_window"]) if local else causal
        y = x if post else rms(x, W[p + "input_layernorm.weight"])
        def proj(name, heads):
            z = y @ W[p + "self_attn.%s.weight" % name].T
            if p + "self_attn.%s.bias" % name in W:
                z = z + W[p + "self_attn.%s.bias" % name]
            norm = p + "self_attn.%s_norm.weight" % name[0]
            if olmo2 and name != "v_proj":  # (Olmo2Attention: q_norm(q_proj(x)) over every head's columns)
                z = rms(z, W[norm])
            z = z.view(b, t, heads, d)
            if not olmo2 and norm in W:
                z = rms(z, W[norm])
            return z.transpose(1, 2)
        q, k, v = proj("q_proj", h), proj("k_proj", kv), proj("v_proj", kv)
        if rotates(cfg, i):
            q, k = turn(q, cos, sin, rot), turn(k, cos, sin, rot)
        k, v = (z[:, :, None].expand(b, kv, h // kv, t, d).reshape(b, h, t, d) for z in (k, v))  # repeat_kv
        a = (q @ k.transpose(-2, -1)) * scale
        if attn_cap:  # (Gemma 2's soft-capping, before the mask)
            a = torch.tanh(a / attn_cap) * attn_cap
        a = torch.softmax(a.masked_fill(~mask, float("-inf")), dim=-1)
        o = (a @ v).transpose(1, 2).reshape(b, t, h * d) @ W[p + "self_attn.o_proj.weight"].T
        if sandwich or post:
            o = rms(o, W[p + "post_attention_layernorm.weight"])
        if glm4:  # (Glm4DecoderLayer: post_self_attn_layernorm, then post_attention_layernorm before the MLP)
            o = rms(o, W[p + "post_self_attn_layernorm.weight"])
        x = x + o * residual
        y = x if post else rms(x, W[p + ("pre_feedforward_layernorm.weight" if sandwich else "post_attention_layernorm.weight")])
        if cfg.get("model_type") == "arcee":  # (ArceeMLP: down_proj(relu(up_proj(y))^2), no gate)
            m = torch.relu(y @ W[p + "mlp.up_proj.weight"].T).pow(2) @ W[p + "mlp.down_proj.weight"].T
        else:
            g = y @ W[p + "mlp.gate_proj.weight"].T
            act = torch.nn.functional.gelu(g, approximate="tanh") if gemma else torch.nn.functional.silu(g)
            m = (act * (y @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        if sandwich or post:
            m = rms(m, W[p + "post_feedforward_layernorm.weight"])
        if glm4:
            m = rms(m, W[p + "post_mlp_layernorm.weight"])
        x = x + m * residual
    x = rms(x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", gemma) else W["lm_head.weight"]
    logits = x @ head.T
    if granite:
        logits = logits / cfg.get("logits_scaling", 1.0)
    return torch.tanh(logits / final_cap) * final_cap if final_cap else logits


def windows(data, t):
    """DATA's val split in non-overlapping windows of T (as --eval-only takes them): inputs, targets."""
    import h5py
    import torch
    tok = np.concatenate([h5py.File(s)["tokens"][...] for s in sorted(glob.glob(data + "/val/*.h5"))]).astype(np.int64)
    n = (len(tok) - 1) // t
    x = torch.from_numpy(np.stack([tok[i * t:i * t + t] for i in range(n)]))
    y = torch.from_numpy(np.stack([tok[i * t + 1:i * t + t + 1] for i in range(n)]))
    return x, y


def loss(folder, data, t):
    import torch
    cfg, w = load(folder)
    x, y = windows(data, t)
    logits = forward(cfg, w, x)
    print("%.8f" % torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item(),
          flush=True)


def serve():
    """`loss DIR DATA T` lines on stdin, each answered by its loss line (or "error: ..."), so that a test
    imports torch once (about 1.2 s a process here) for all of its losses."""
    for line in sys.stdin:
        try:
            cmd, folder, data, t = line.split()
            assert cmd == "loss", line
            loss(folder, data, int(t))
        except Exception as e:  # (one line back whatever went wrong: the test fails on it, never hangs)
            print("error: %s" % str(e).replace("\n", " "), flush=True)


def same(a, b, read=load):
    """Both folders' parameters, as `read` gives them, have the same names and float32 bits."""
    _, wa = read(a)
    _, wb = read(b)
    wa = {k: v for k, v in wa.items() if "rotary_emb" not in k}
    if sorted(wa) != sorted(wb):
        print("different names:", sorted(set(wa) ^ set(wb)))
        return 1
    bad = [k for k in wa if wa[k].shape != wb[k].shape or not np.array_equal(wa[k].view(np.uint32), wb[k].view(np.uint32))]
    print("%d tensors, %d differ %s" % (len(wa), len(bad), bad[:3]))
    return 1 if bad else 0


if __name__ == "__main__":
    import hf_llama_variants as v  # (the folders of the other classes, and the spoiled ones)
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "loss":
        loss(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "serve":
        serve()
    elif cmd == "same":
        sys.exit(same(sys.argv[2], sys.argv[3]))
    elif cmd == "mistral":
        v.edit_config(sys.argv[2], architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=32)
    elif cmd == "qwen3":
        v.qwen3(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)
    elif cmd in ("gemma", "gemma2", "gemma3"):
        v.gemma(sys.argv[2], {"gemma": 1, "gemma2": 2, "gemma3": 3}[cmd])
    elif cmd == "transformers5":
        v.transformers5(sys.argv[2], [float(b) for b in sys.argv[3:5]] if len(sys.argv) > 4 else None)
    elif cmd in ("phi3", "phi4", "granite", "olmo2", "olmo3", "arcee", "exaone4", "smollm3", "gemma3_image_text",
                 "qwen2", "glm", "glm4"):
        getattr(v, cmd)(sys.argv[2])
    elif cmd == "yarn":
        v.yarn_folder(sys.argv[2])
    elif cmd == "break":
        v.spoil(sys.argv[2], sys.argv[3])
