#!/usr/bin/env python3
"""tools/bench/hf_llama_folder.py OUT [--embd 1024 --layers 12 --ffn 2816 --vocab 32000 --heads 16 --kv-heads 4]
A LlamaForCausalLM folder in Hugging Face's layout with random BF16 weights (the norms 1.0), in two
safetensors shards listed by model.safetensors.index.json, and its config.json: what
tools/bench/hf_weights_bench.sh imports and exports. The default is 200,827,904 parameters (an
untied head), the folder 402 MB. Written a tensor at a time (numpy; no torch, no safetensors)."""
import argparse
import json
import os
import struct

import numpy as np


def shapes(a):
    d = a.embd // a.heads
    out = {"model.embed_tokens.weight": (a.vocab, a.embd)}
    for i in range(a.layers):
        p = f"model.layers.{i}."
        out[p + "self_attn.q_proj.weight"] = (a.embd, a.embd)
        out[p + "self_attn.k_proj.weight"] = (a.kv_heads * d, a.embd)
        out[p + "self_attn.v_proj.weight"] = (a.kv_heads * d, a.embd)
        out[p + "self_attn.o_proj.weight"] = (a.embd, a.embd)
        out[p + "mlp.gate_proj.weight"] = (a.ffn, a.embd)
        out[p + "mlp.up_proj.weight"] = (a.ffn, a.embd)
        out[p + "mlp.down_proj.weight"] = (a.embd, a.ffn)
        out[p + "input_layernorm.weight"] = (a.embd,)
        out[p + "post_attention_layernorm.weight"] = (a.embd,)
    out["model.norm.weight"] = (a.embd,)
    out["lm_head.weight"] = (a.vocab, a.embd)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    for name, default in (("embd", 1024), ("layers", 12), ("ffn", 2816), ("vocab", 32000), ("heads", 16),
                          ("kv-heads", 4)):
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    t = shapes(a)
    names = list(t)
    weight_map, total = {}, 0
    for k, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        fname = f"model-{k + 1:05d}-of-00002.safetensors"
        header, at = {"__metadata__": {"format": "pt"}}, 0
        for n in part:
            size = int(np.prod(t[n])) * 2
            header[n] = {"dtype": "BF16", "shape": list(t[n]), "data_offsets": [at, at + size]}
            at += size
            weight_map[n] = fname
        total += at
        text = json.dumps(header).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(os.path.join(a.out, fname), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for n in part:
                if len(t[n]) == 1:
                    f.write(np.full(t[n], 0x3F80, "<u2").tobytes())  # 1.0
                else:
                    w = rng.standard_normal(t[n], dtype=np.float32) * 0.02
                    f.write((w.view(np.uint32) >> 16).astype("<u2").tobytes())
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.embd,
              "intermediate_size": a.ffn, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
              "num_key_value_heads": a.kv_heads, "vocab_size": a.vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "max_position_embeddings": 2048, "tie_word_embeddings": False, "hidden_act": "silu",
              "torch_dtype": "bfloat16"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{a.out}: {sum(int(np.prod(s)) for s in t.values()):,} parameters, {total:,} bytes of BF16 weights")


if __name__ == "__main__":
    main()
