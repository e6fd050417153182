// What checkpoint/hf_llama.cpp (the import) and checkpoint/hf_llama_export.cpp share about
// LlamaForCausalLM's layout and its relatives'. Internal to those files.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/checkpoint/hf_layouts.hpp"

namespace hpctrain::hf {

// gemma, gemma2, gemma3_text: the model_types with Gemma's MLP, norms and embedding scale.
bool is_gemma(const std::string& model_type);
// Hugging Face name -> hpctrain name pairs that are the same tensor (shape [out, in] both).
// The norms: before each sublayer (Llama's input_layernorm, post_attention_layernorm), also after
// (sandwich: Gemma 2's and 3's), or after only (post: OLMo 2's post_attention_layernorm,
// post_feedforward_layernorm); q_norm, k_norm with qk_norm_weight; up_proj alone with mlp = relu2
// (Arcee's).
// GLM-4's (`type` glm4) the norms around the MLP under its names: post_self_attn_layernorm after
// attention, post_attention_layernorm before the MLP, post_mlp_layernorm after it.
std::vector<std::pair<std::string, std::string>> direct_names(const ModelConfig& m, const std::string& type);
// glm and glm4 (GlmForCausalLM, Glm4ForCausalLM): models whose rotary pairs interleave.
bool is_glm(const std::string& model_type);

// save_pretrained's order (the modules' order in LlamaForCausalLM): the embedding, the layers by
// number (attention q, k, v (Phi-3: qkv), o, then the MLP's gate, up (Phi-3: gate_up), down, then the
// norms), the final norm, the head; so a sharded export's shards hold whole layers in order (h.10
// after h.9, not h.1).
void order_as_save_pretrained(std::vector<LazyTensor>& tensors);

}  // namespace hpctrain::hf
