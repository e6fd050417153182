#!/usr/bin/python3
"""tests/reference/hf_llama_variants.py: the tiny Llama folder of tests/reference/hf_llama.py made into
the other classes' folders (Qwen2, Qwen3, OLMo 2, SmolLM3, Gemma 1-3, Phi-3 and Phi-4 mini's kind,
Granite, yarn's scaling), rewritten in transformers 5's layout, or spoiled; hf_llama.py's command line
(its docstring) runs them."""
import json
import os

import numpy as np

from hf_llama import GEMMA3_TEXT_DEFAULTS, load, read_safetensors, write_safetensors


def edit_config(folder, **keys):
    """The folder's config.json with `keys` set."""
    path = os.path.join(folder, "config.json")
    cfg = dict(json.load(open(path)), **keys)
    json.dump(cfg, open(path, "w"), indent=2)


def one_file(folder, w, cfg=None):
    """The folder's shards and index replaced by one F32 model.safetensors of `w`; config.json `cfg`
    where given."""
    for f in os.listdir(folder):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(folder, f))
    write_safetensors(os.path.join(folder, "model.safetensors"), w, "F32")
    if cfg is not None:
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"), indent=2)


def gemma3_image_text(folder):
    """The gemma3 folder as a Gemma3ForConditionalGeneration's (model_type gemma3, Gemma 3 4B-27B's):
    config.json's text_config holds the text model's keys less those at Gemma3TextConfig's defaults
    (rms_norm_eps, rope_local_base_freq), rope_scaling linear with factor 8 (4B-27B's) in place of
    llama3's, the tensors under language_model.model., a vision tower's and a projector's tensors beside
    them (random, unread)."""
    cfg, w = load(folder)
    text = {k: v for k, v in cfg.items() if k not in ("architectures", "rms_norm_eps", "rope_local_base_freq",
                                                     "torch_dtype")}
    text["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}
    g = np.random.default_rng(6)
    w = {"language_model.model." + k[len("model."):]: v for k, v in w.items() if k.startswith("model.")}
    w["vision_tower.vision_model.embeddings.patch_embedding.weight"] = g.standard_normal((8, 3, 2, 2)).astype(np.float32)
    w["multi_modal_projector.mm_input_projection_weight"] = g.standard_normal((8, 32)).astype(np.float32)
    out = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "text_config": text,
           "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8}, "mm_tokens_per_image": 256}
    one_file(folder, w, out)


def smollm3(folder):
    """The Llama folder as a SmolLM3ForCausalLM's (model_type smollm3, modeling_smollm3.py: Llama's with
    no rotary positions on the layers no_rope_layers marks 0): layer 1 of 2 a NoPE layer, rope_theta
    5e6 without scaling, the head untied."""
    edit_config(folder, architectures=["SmolLM3ForCausalLM"], model_type="smollm3", rope_theta=5000000.0,
                rope_scaling=None, no_rope_layers=[1, 0], no_rope_layer_interval=4, use_sliding_window=False,
                sliding_window=None, tie_word_embeddings=False)


def qwen2(folder):
    path = os.path.join(folder, "config.json")
    cfg = json.load(open(path))
    for key in ("attention_bias", "mlp_bias"):
        del cfg[key]
    cfg.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2", rope_theta=1000000.0, rope_scaling=None,
               sliding_window=16, use_sliding_window=False, max_window_layers=2, tie_word_embeddings=True)
    json.dump(cfg, open(path, "w"), indent=2)
    g, d, kv = np.random.default_rng(2), cfg["hidden_size"] // cfg["num_attention_heads"], cfg["num_key_value_heads"]
    biases = {}
    for i in range(cfg["num_hidden_layers"]):
        for name, rows in (("q_proj", cfg["hidden_size"]), ("k_proj", kv * d), ("v_proj", kv * d)):
            biases["model.layers.%d.self_attn.%s.bias" % (i, name)] = (0.5 * g.standard_normal(rows)).astype(np.float32)
    write_safetensors(os.path.join(folder, "model-00003-of-00003.safetensors"), biases, "F32")
    index = os.path.join(folder, "model.safetensors.index.json")
    wm = json.load(open(index))["weight_map"]
    wm.update({k: "model-00003-of-00003.safetensors" for k in biases})
    second = os.path.join(folder, wm.pop("lm_head.weight"))  # (tied: the head is the embedding)
    write_safetensors(second, {k: v for k, v in read_safetensors(second).items() if k != "lm_head.weight"}, "F32")
    # 16 more embedding rows than the byte tokens, as Qwen2's 151,936 rows hold 151,665 tokens
    first = os.path.join(folder, wm["model.embed_tokens.weight"])
    w = read_safetensors(first)
    extra = (0.2 * g.standard_normal((16, cfg["hidden_size"]))).astype(np.float32)
    w["model.embed_tokens.weight"] = np.concatenate([w["model.embed_tokens.weight"], extra])
    write_safetensors(first, {k: v for k, v in w.items() if "rotary_emb" not in k}, "F32")
    cfg["vocab_size"] += 16
    json.dump(cfg, open(path, "w"), indent=2)
    json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(index, "w"))


def olmo2(folder):
    """The Llama folder as an Olmo2ForCausalLM's (modeling_olmo2.py): no input_layernorm, a norm after
    attention (post_attention_layernorm) and after the MLP (post_feedforward_layernorm) inside each
    residual branch, q_norm over the q projection's whole width and k_norm over the k projection's
    (one weight per column), rms_norm_eps 1e-6; one F32 file."""
    cfg, w = load(folder)
    g, c, h, kv = np.random.default_rng(5), cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = c // h
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        del w[p + "input_layernorm.weight"]
        for name, n in (("self_attn.q_norm", h * d), ("self_attn.k_norm", kv * d), ("post_feedforward_layernorm", c)):
            w[p + name + ".weight"] = (1 + 0.3 * g.standard_normal(n)).astype(np.float32)
    w = {k: v for k, v in w.items() if "rotary_emb" not in k}
    cfg.update(architectures=["Olmo2ForCausalLM"], model_type="olmo2", rms_norm_eps=1e-06)
    one_file(folder, w, cfg)


def olmo3(folder):
    """The Llama folder as an Olmo3ForCausalLM's (modeling_olmo3.py, transformers 4.57): OLMo 2's tensors
    and norms, layer_types sliding then full (sliding_window 32 on layer 0), yarn's rope_scaling (factor
    4 over an original context of 16, beta_fast 8) on the full layer alone: the sliding one rotates
    unscaled at rope_theta."""
    olmo2(folder)
    edit_config(folder, architectures=["Olmo3ForCausalLM"], model_type="olmo3", sliding_window=32,
                layer_types=["sliding_attention", "full_attention"],
                rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                              "beta_fast": 8})


def arcee(folder):
    """The Llama folder as Arcee's ArceeForCausalLM (AFM-4.5B's kind, modular_arcee.py): Llama's tensors
    without gate_proj, the MLP down_proj(relu(up_proj(x))^2) (hidden_act relu2); one F32 file."""
    cfg, w = load(folder)
    w = {k: v for k, v in w.items() if "rotary_emb" not in k and "mlp.gate_proj" not in k}
    cfg.update(architectures=["ArceeForCausalLM"], model_type="arcee", hidden_act="relu2")
    one_file(folder, w, cfg)


def exaone4(folder):
    """The Llama folder as LG's Exaone4ForCausalLM (modular_exaone4.py): no input_layernorm, norms after
    attention and after the MLP (Olmo2DecoderLayer), q_norm and k_norm one head wide (Qwen3's), layer_types
    sliding then full with sliding_window 32; the full layer has no rotary positions (global NoPE), the
    sliding one takes the folder's llama3 scaling; one F32 file."""
    cfg, w = load(folder)
    g, c, h = np.random.default_rng(7), cfg["hidden_size"], cfg["num_attention_heads"]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        del w[p + "input_layernorm.weight"]
        for name, n in (("self_attn.q_norm", c // h), ("self_attn.k_norm", c // h), ("post_feedforward_layernorm", c)):
            w[p + name + ".weight"] = (1 + 0.3 * g.standard_normal(n)).astype(np.float32)
    w = {k: v for k, v in w.items() if "rotary_emb" not in k}
    cfg.update(architectures=["Exaone4ForCausalLM"], model_type="exaone4", sliding_window=32,
               sliding_window_pattern=2, layer_types=["sliding_attention", "full_attention"])
    one_file(folder, w, cfg)


def glm(folder, version=1):
    """The Llama folder as THUDM's GlmForCausalLM (modular_glm.py; version 4: Glm4ForCausalLM,
    modular_glm4.py): q, k and v with biases (attention_bias), partial_rotary_factor 0.5 with the
    rotated columns in interleaved pairs (2i, 2i + 1), gate|up fused in gate_up_proj, GLM-4 9B's
    rms_norm_eps 1.5625e-07; GLM-4 adds
    post_self_attn_layernorm after attention and post_mlp_layernorm after the MLP; one F32 file."""
    cfg, w = load(folder)
    g, c = np.random.default_rng(11), cfg["hidden_size"]
    d, h, kv = c // cfg["num_attention_heads"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        for name, n in (("q_proj", h * d), ("k_proj", kv * d), ("v_proj", kv * d)):
            w[p + "self_attn.%s.bias" % name] = (0.5 * g.standard_normal(n)).astype(np.float32)
        w[p + "mlp.gate_up_proj.weight"] = np.concatenate([w.pop(p + "mlp.gate_proj.weight"), w.pop(p + "mlp.up_proj.weight")])
        if version == 4:
            for name in ("post_self_attn_layernorm", "post_mlp_layernorm"):
                w[p + name + ".weight"] = (1 + 0.3 * g.standard_normal(c)).astype(np.float32)
    w = {k: v for k, v in w.items() if "rotary_emb" not in k}
    kind = "glm4" if version == 4 else "glm"
    cfg.update(architectures=["Glm4ForCausalLM" if version == 4 else "GlmForCausalLM"], model_type=kind,
               attention_bias=True, partial_rotary_factor=0.5, head_dim=d, rope_scaling=None)
    if version == 1:  # (GLM-4 9B's, no power of ten)
        cfg["rms_norm_eps"] = 1.5625e-07
    one_file(folder, w, cfg)


def glm4(folder):
    glm(folder, 4)


def qwen3(folder, head_dim=None):
    path = os.path.join(folder, "config.json")
    cfg = json.load(open(path))
    d = head_dim or cfg["hidden_size"] // cfg["num_attention_heads"]
    cfg.update(architectures=["Qwen3ForCausalLM"], model_type="qwen3", rope_theta=1000000.0, rope_scaling=None,
               head_dim=d, rms_norm_eps=1e-06, sliding_window=None, use_sliding_window=False, max_window_layers=2)
    json.dump(cfg, open(path, "w"), indent=2)
    g, norms = np.random.default_rng(3), {}
    for i in range(cfg["num_hidden_layers"]):
        for name in ("q_norm", "k_norm"):
            norms["model.layers.%d.self_attn.%s.weight" % (i, name)] = (1 + 0.3 * g.standard_normal(d)).astype(np.float32)
    if head_dim:  # (one file: the attention's projections made again at this width)
        _, w = load(folder)
        c, h, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d.self_attn." % i
            for name, shape in (("q_proj", (h * d, c)), ("k_proj", (kv * d, c)), ("v_proj", (kv * d, c)),
                                ("o_proj", (c, h * d))):
                w[p + name + ".weight"] = (0.2 * g.standard_normal(shape)).astype(np.float32)
        w.update(norms)
        one_file(folder, w)
        return
    write_safetensors(os.path.join(folder, "model-00003-of-00003.safetensors"), norms, "F32")
    index = os.path.join(folder, "model.safetensors.index.json")
    wm = json.load(open(index))["weight_map"]
    wm.update({k: "model-00003-of-00003.safetensors" for k in norms})
    json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(index, "w"))


def gemma(folder, version):
    """The folder (make's) as GemmaForCausalLM's (version 1), Gemma2ForCausalLM's (2) or Gemma3ForCausalLM's (3),
    in one F32 file."""
    cfg, w = load(folder)
    g, c = np.random.default_rng(5 + version), cfg["hidden_size"]
    h, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    w = {k: v for k, v in w.items() if "rotary_emb" not in k and k != "lm_head.weight"}  # (tied)
    for k in [k for k in w if "norm" in k]:
        w[k] = (0.3 * g.standard_normal(w[k].shape)).astype(np.float32)  # (the scale is 1 + weight)
    for key in ("attention_bias", "mlp_bias", "tie_word_embeddings"):
        del cfg[key]
    cfg.update(architectures=["GemmaForCausalLM"], model_type="gemma", hidden_act="gelu",
               hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-06, rope_theta=10000.0, rope_scaling=None,
               head_dim=c // h)
    if version == 2:  # (no layer_types, as the older files: layer 0 sliding, then every other one)
        for i in range(cfg["num_hidden_layers"]):
            for name in ("pre_feedforward_layernorm", "post_feedforward_layernorm"):
                w["model.layers.%d.%s.weight" % (i, name)] = (0.3 * g.standard_normal(c)).astype(np.float32)
        del cfg["hidden_act"]
        # (query_pre_attn_scalar half the head width: not it, as Gemma 2 27B's 144 for heads of 128)
        cfg.update(architectures=["Gemma2ForCausalLM"], model_type="gemma2", query_pre_attn_scalar=c // h // 2,
                   sliding_window=32, attn_logit_softcapping=1.0, final_logit_softcapping=2.0)
    if version == 3:
        d = 16
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            for name, shape in (("q_proj", (h * d, c)), ("k_proj", (kv * d, c)), ("v_proj", (kv * d, c)),
                                ("o_proj", (c, h * d))):
                w[p + "self_attn." + name + ".weight"] = (0.2 * g.standard_normal(shape)).astype(np.float32)
            for name, n in (("self_attn.q_norm", d), ("self_attn.k_norm", d), ("pre_feedforward_layernorm", c),
                            ("post_feedforward_layernorm", c)):
                w[p + name + ".weight"] = (0.3 * g.standard_normal(n)).astype(np.float32)
        del cfg["hidden_act"]
        cfg.update(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", head_dim=d, query_pre_attn_scalar=d,
                   rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=32, sliding_window_pattern=2,
                   layer_types=["sliding_attention", "full_attention"], attn_logit_softcapping=None,
                   final_logit_softcapping=None,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 32})
    one_file(folder, w, cfg)


def phi3(folder):
    cfg, w = load(folder)
    fused = {k: v for k, v in w.items() if "rotary_emb" not in k and not any(
        s in k for s in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"))}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        fused[p + "self_attn.qkv_proj.weight"] = np.concatenate([w[p + "self_attn.%s_proj.weight" % x] for x in "qkv"])
        fused[p + "mlp.gate_up_proj.weight"] = np.concatenate([w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]])
    for key in ("attention_bias", "mlp_bias"):
        del cfg[key]
    cfg.update(architectures=["Phi3ForCausalLM"], model_type="phi3", sliding_window=63, partial_rotary_factor=1.0,
               original_max_position_embeddings=64, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0)
    one_file(folder, fused, cfg)


def granite(folder):
    """The Llama folder as IBM Granite's GraniteForCausalLM (modeling_granite.py: Llama's tensors, the
    embeddings times embedding_multiplier 12, each sublayer's output times residual_multiplier 0.22
    before its residual add, scores q . k times attention_multiplier 0.0625 (not 1 / sqrt(8)), the logits
    divided by logits_scaling 2), rope_theta 1e7 without scaling, a tied head."""
    edit_config(folder, architectures=["GraniteForCausalLM"], model_type="granite", embedding_multiplier=12.0,
                residual_multiplier=0.22, attention_multiplier=0.0625, logits_scaling=2.0, rope_theta=10000000.0,
                rope_scaling=None, tie_word_embeddings=True)
    index = os.path.join(folder, "model.safetensors.index.json")
    wm = json.load(open(index))["weight_map"]
    shard = os.path.join(folder, wm.pop("lm_head.weight"))  # (tied: the head is the embedding; an F32 shard)
    write_safetensors(shard, {k: v for k, v in read_safetensors(shard).items() if k != "lm_head.weight"}, "F32")
    json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(index, "w"))


def yarn_folder(folder):
    """The Llama folder with yarn's rope_scaling (Qwen's long-context form): factor 4 over an original
    context of 16, beta_fast 8 (pair 0 of 4 kept, the others 4 times slower at rope_theta 500000), the
    amplitude get_mscale's 0.1 ln 4 + 1."""
    edit_config(folder, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                      "beta_fast": 8})


def phi4(folder):
    """The phi3 folder as Phi-4 mini's kind (partial_rotary_factor 0.75: the first 6 of each head's 8
    columns rotate) with Phi-3.5 mini's longrope (3 short and 3 long factors, one a rotated pair;
    original_max_position_embeddings 32 of 64: the amplitude sqrt(1 + ln 2 / ln 32)), no window."""
    edit_config(folder, partial_rotary_factor=0.75, original_max_position_embeddings=32, max_position_embeddings=64,
                sliding_window=None, rope_scaling={"type": "longrope", "short_factor": [1.0, 1.5, 3.0],
                                                   "long_factor": [1.25, 4.0, 9.0]})


def transformers5(folder, bases=None):
    """config.json as transformers 5 saves it (RotaryEmbeddingConfigMixin.standardize_rope_params):
    rope_theta and rope_scaling moved into rope_parameters; a Gemma 3's and an OLMo 3's one section per
    layer kind, full_attention with rope_theta and the scaling, sliding_attention default with
    rope_local_base_freq (Gemma3TextConfig's defaults where the file leaves them out; OLMo 3's: rope_theta). `bases` (global, local): those in
    place of the file's."""
    path = os.path.join(folder, "config.json")
    top = json.load(open(path))
    cfg = top.get("text_config", top)
    gemma3 = top.get("model_type") in ("gemma3", "gemma3_text")
    olmo3 = top.get("model_type") == "olmo3"  # (one section per layer kind, the sliding one's unscaled at rope_theta)
    theta = cfg.pop("rope_theta", GEMMA3_TEXT_DEFAULTS["rope_theta"] if gemma3 else 10000.0)
    full = dict(cfg.pop("rope_scaling", None) or {"rope_type": "default"}, rope_theta=bases[0] if bases else theta)
    if gemma3 or olmo3:
        local = cfg.pop("rope_local_base_freq", GEMMA3_TEXT_DEFAULTS["rope_local_base_freq"]) if gemma3 else theta
        cfg["rope_parameters"] = {"full_attention": full,
                                  "sliding_attention": {"rope_type": "default", "rope_theta": bases[1] if bases else local}}
    else:
        cfg["rope_parameters"] = full
        if "partial_rotary_factor" in cfg:  # (Phi-3's: moved in, as standardize_rope_params does)
            full["partial_rotary_factor"] = cfg.pop("partial_rotary_factor")
        if full.get("type", full.get("rope_type")) == "longrope":  # (the context copied in, the top-level key kept)
            full["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
    json.dump(top, open(path, "w"), indent=2)


def spoil(folder, kind):
    cfg_path = os.path.join(folder, "config.json")
    cfg = json.load(open(cfg_path))
    if kind in ("missing", "shape", "huge"):
        path = os.path.join(folder, "model-00002-of-00002.safetensors")
        w = read_safetensors(path)
        if kind == "missing":
            del w["model.layers.1.mlp.up_proj.weight"]
        elif kind == "huge":  # (a valid folder whose export as float16 is refused: 1e6 > 65504; the
            # first shard's values moved by 1/3, so that an export that wrote it would show)
            w["model.layers.1.mlp.up_proj.weight"] = w["model.layers.1.mlp.up_proj.weight"].copy()
            w["model.layers.1.mlp.up_proj.weight"][0, 0] = 1e6
            first = os.path.join(folder, "model-00001-of-00002.safetensors")
            write_safetensors(first, {k: v + 1 / 3 for k, v in read_safetensors(first).items()}, "F32")
        else:
            w["model.layers.1.self_attn.k_proj.weight"] = w["model.layers.1.self_attn.k_proj.weight"][:8]
        write_safetensors(path, w, "F32")
    elif kind == "arch":
        cfg["model_type"] = "gpt_neox"
    elif kind == "heads":
        cfg["num_key_value_heads"] = 3
    elif kind == "scaling":
        cfg["rope_scaling"] = {"rope_type": "dynamic", "factor": 2.0}
    elif kind == "window":
        cfg["model_type"], cfg["sliding_window"] = "mistral", 0
    elif kind == "max_window":
        cfg.update(model_type="qwen2", sliding_window=16, use_sliding_window=True, max_window_layers=1)
    elif kind == "partial":
        cfg["partial_rotary_factor"] = 0.75
    elif kind == "attention_multiplier":
        cfg["attention_multiplier"] = 0
    elif kind == "partial_odd":  # (3 of 8 columns: no rotate-half pairs)
        cfg["partial_rotary_factor"] = 0.375
    elif kind == "longrope_count":
        cfg["rope_scaling"]["short_factor"] = [1.0, 1.5]
    elif kind == "softcap":
        cfg["attn_logit_softcapping"] = 50.0
    elif kind == "olmo2_norm":  # (q_norm one head wide, as Qwen3's)
        w = read_safetensors(os.path.join(folder, "model.safetensors"))
        w["model.layers.0.self_attn.q_norm.weight"] = w["model.layers.0.self_attn.q_norm.weight"][:8]
        write_safetensors(os.path.join(folder, "model.safetensors"), w, "F32")
    elif kind == "v5_both":
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
    elif kind == "v5_dynamic":
        cfg["rope_parameters"] = {"rope_type": "dynamic", "rope_theta": 500000.0, "factor": 4.0}
    elif kind == "yarn_factor":
        del cfg["rope_scaling"]["factor"]
    elif kind == "v5_partial":
        cfg["rope_parameters"]["partial_rotary_factor"] = 0.75
    elif kind == "v5_kinds":
        full = cfg["rope_parameters"]
        cfg["rope_parameters"] = {"full_attention": full, "sliding_attention": dict(full, rope_theta=10000.0)}
    elif kind == "v5_local_scaled":
        cfg["rope_parameters"]["sliding_attention"].update(rope_type="linear", factor=2.0)
    elif kind == "no_rope":  # (the first layer NoPE, the second not: no period)
        cfg["no_rope_layers"] = [0, 1]
    elif kind == "no_text_config":
        del cfg["text_config"]
    elif kind == "scalar":
        cfg["query_pre_attn_scalar"] = 0
    elif kind == "layer_types":
        cfg["layer_types"] = ["full_attention", "sliding_attention"]
    elif kind == "type":
        cfg["tie_word_embeddings"] = 1
    elif kind == "head_dim":
        cfg["head_dim"] = 2 * cfg["hidden_size"] // cfg["num_attention_heads"]  # (the tensors stay 8 wide)
    json.dump(cfg, open(cfg_path, "w"))
