// --export-hf of an arch = llama checkpoint (checkpoint/hf_layouts.hpp): the Hugging Face class whose
// model the deck is (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
// GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Olmo2ForCausalLM, SmolLM3ForCausalLM,
// Phi3ForCausalLM), its config.json and the tensors under its names; checkpoint/hf_llama.cpp reads them back.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "hf_llama_names.hpp"
#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::hf {

namespace {
// EXAONE 4 (modular_exaone4.py): post_norm with Qwen3's per-head weighted QK-norm; with a
// sliding_window its full layers (every global_every-th) have no rotary positions, so no_rope_every
// is global_every; without one every layer rotates.
template <class Refuse>
std::string exaone4_type(const ModelConfig& m, bool gemma, const Refuse& refuse) {
  if (!m.qk_norm_weight || gemma || m.qkv_bias || m.rope_local_theta > 0 || m.rope_dims > 0)
    refuse(
        "post_norm without qk_norm_weight, or with Gemma's keys, qkv_bias, rope_local_theta or rope_dims "
        "(EXAONE 4's: post_norm with qk_norm_weight)");
  const std::int64_t nope = m.sliding_window > 0 ? m.global_every : 0;  // (every layer sliding: none)
  if (m.no_rope_every != nope)
    refuse("post_norm with qk_norm_weight and no_rope_every " + std::to_string(m.no_rope_every) +
           " (EXAONE 4's full layers, and those alone, have no rotary positions: no_rope_every = global_every with "
           "a sliding_window, else 0)");
  return "exaone4";
}

// The model_type whose class computes deck `m` (arch = llama): llama, mistral (a window on every
// layer), qwen2, qwen3, gemma, gemma2, gemma3_text, olmo2, olmo3 (olmo2 with windows), smollm3, granite or
// phi3 (rope_dims or longrope);
// bad_input naming the keys when no class does.
std::string export_type(const ModelConfig& m, bool longrope) {
  const bool gemma = m.mlp == Mlp::geglu || m.norm_offset || m.embed_scale;
  const bool capped = m.attn_softcap > 0 || m.final_softcap > 0;
  const bool multipliers =  // (Granite's)
      m.embedding_multiplier > 0 || m.residual_multiplier > 0 || m.attention_multiplier > 0 || m.logits_scaling > 0;
  const bool gemma2 = gemma && m.sandwich_norm && !m.qk_norm_weight;
  const auto refuse = [](const std::string& what) {
    throw bad_input(
        "--export-hf: [model] " + what +
        " is the model of no Hugging Face class (Qwen2: qkv_bias; Qwen3: qk_norm with qk_norm_weight; "
        "Gemma: mlp = geglu, norm_offset, embed_scale; Gemma 2: those with sandwich_norm and the "
        "soft-caps; Gemma 3: those with sandwich_norm and the weighted QK-norm; OLMo 2: post_norm with "
        "qk_norm_weight and qk_norm_whole; OLMo 3: those with sliding_window; EXAONE 4: post_norm with "
        "qk_norm_weight; Arcee: mlp = relu2; GLM: qkv_bias with rope_dims; GLM-4: those with sandwich_norm; SmolLM3: "
        "no_rope_every; "
        "Phi-3: rope_dims, longrope; Granite: the "
        "multipliers)");
  };
  if (m.qk_norm && !m.qk_norm_weight) refuse("qk_norm without qk_norm_weight (modded-nanogpt's)");
  if (m.mlp == Mlp::relu2) {  // (Arcee's AFM: Llama's with a relu(x)^2 MLP of up_proj, down_proj)
    if (gemma || m.qkv_bias || m.qk_norm_weight || m.post_norm || m.no_rope_every > 0 || m.rope_dims > 0 || longrope ||
        m.sliding_window > 0 || multipliers)
      refuse("mlp = relu2 with another family's keys or a sliding_window (Arcee's is Llama's)");
    return "arcee";
  }
  if (m.qkv_bias && (m.rope_dims > 0 || (m.sandwich_norm && !gemma))) {  // (GLM's: biased q, k, v, half rotating)
    if (gemma || m.qk_norm_weight || m.post_norm || m.no_rope_every > 0 || longrope || m.sliding_window > 0 ||
        m.rope_local_theta > 0 || multipliers)
      refuse(
          "qkv_bias with rope_dims or sandwich_norm, and another family's keys or a sliding_window (GLM's and "
          "GLM-4's)");
    return m.sandwich_norm ? "glm4" : "glm";
  }
  if (m.qkv_bias && (m.qk_norm_weight || gemma)) refuse("qkv_bias with qk_norm_weight or Gemma's keys");
  if (gemma && !(m.mlp == Mlp::geglu && m.norm_offset && m.embed_scale))
    refuse("mlp = geglu, norm_offset and embed_scale not all together (Gemma's three)");
  if ((m.sandwich_norm || capped) && !gemma)
    refuse("sandwich_norm, attn_softcap or final_softcap without Gemma's keys");
  if (m.rope_local_theta > 0 && !gemma && !m.post_norm) refuse("rope_local_theta outside Gemma 3 and OLMo 3");
  if (gemma && m.qk_norm_weight && !m.sandwich_norm) refuse("Gemma's keys and qk_norm_weight without sandwich_norm");
  if (gemma2 && m.rope_local_theta > 0) refuse("rope_local_theta without qk_norm_weight (Gemma 2 has one rotary base)");
  if (capped && !gemma2) refuse("attn_softcap or final_softcap outside Gemma 2");
  if (m.query_pre_attn_scalar > 0 && !(gemma && m.sandwich_norm)) refuse("query_pre_attn_scalar outside Gemma 2 and 3");
  if (m.sliding_window > 0 && m.global_every > 0 && !(gemma && m.sandwich_norm) && !m.post_norm)
    refuse(
        "sliding_window with global_every outside Gemma 2 and 3 and OLMo 3 (Mistral's and Qwen's windows are on "
        "every layer)");
  if (m.sliding_window > 0 && gemma && !m.sandwich_norm) refuse("sliding_window with Gemma's keys (Gemma 2's and 3's)");
  if (m.post_norm && !m.qk_norm_whole) return exaone4_type(m, gemma, refuse);
  if (m.post_norm || m.qk_norm_whole) {
    if (!(m.post_norm && m.qk_norm_whole && m.qk_norm_weight))
      refuse("post_norm or qk_norm_whole without the other and qk_norm_weight (OLMo 2's three)");
    if (gemma || m.qkv_bias || m.no_rope_every > 0) refuse("post_norm with Gemma's keys, qkv_bias or no_rope_every");
    if (m.sliding_window == 0 && m.rope_local_theta > 0)
      refuse("post_norm and rope_local_theta without sliding_window");
    // (OLMo 3's sliding layers: unscaled at rope_theta, or the base of their own transformers 5 gives them)
    if (m.sliding_window > 0 && m.rope_scaling.scaled() && m.rope_local_theta == 0)
      refuse(
          "post_norm and sliding_window with a scaled rotation on every layer (OLMo 3 scales its full layers "
          "alone: rope_local_theta = rope_theta)");
    if (m.rope_local_theta > 0 && m.rope_local_theta != m.rope_theta)
      refuse("post_norm with a rope_local_theta other than rope_theta (OLMo 3's sliding layers turn at rope_theta)");
    return m.sliding_window > 0 ? "olmo3" : "olmo2";
  }
  if (m.no_rope_every > 0) {
    if (gemma || m.qkv_bias || m.qk_norm_weight || m.sliding_window > 0)
      refuse("no_rope_every with Gemma's keys, qkv_bias, qk_norm_weight or sliding_window (SmolLM3's is Llama's)");
    return "smollm3";
  }
  if (multipliers) {
    if (gemma || m.qkv_bias || m.qk_norm_weight || m.post_norm || m.no_rope_every > 0 || m.rope_dims > 0 || longrope ||
        m.sliding_window > 0 || m.attention_width() != m.n_embd)
      refuse("Granite's multipliers with another family's keys, a sliding_window or head_dim (Granite's is Llama's)");
    return "granite";
  }
  if (m.rope_dims > 0 || longrope) {
    if (gemma || m.qkv_bias || m.qk_norm_weight || m.global_every > 0 || m.attention_width() != m.n_embd)
      refuse(
          "rope_dims or longrope with Gemma's keys, qkv_bias, qk_norm_weight, global_every or head_dim (Phi-3's is "
          "Llama's with heads of n_embd / n_head)");
    return "phi3";
  }
  if (gemma) return !m.sandwich_norm ? "gemma" : gemma2 ? "gemma2" : "gemma3_text";
  if (m.qkv_bias) return "qwen2";
  if (m.qk_norm_weight) return "qwen3";
  return m.sliding_window > 0 ? "mistral" : "llama";
}

// config.json's layer_types for the deck's local layers (every layer but each global_every-th; every
// layer without global_every, where the local layers differ: a window or a base of their own) and
// the period of the full ones (n_layer + 1: none).
std::int64_t layer_kinds(const ModelConfig& m, Json& c) {
  const bool differ = m.sliding_window > 0 || m.rope_local_theta > 0;
  const std::int64_t every = m.global_every > 0 ? m.global_every : differ ? m.n_layer + 1 : 1;
  Json kinds = Json::array();
  for (long i = 0; i < m.n_layer; ++i) kinds.push_back((i + 1) % every == 0 ? "full_attention" : "sliding_attention");
  c["layer_types"] = kinds;
  return every;
}

// config.json's keys of Gemma, Gemma 2 and Gemma 3 (modeling_gemma*.py) beside Llama's.
void gemma_config(const ModelConfig& m, const std::string& type, Json& c) {
  c.erase("hidden_act"), c.erase("mlp_bias");
  c["hidden_activation"] = "gelu_pytorch_tanh";
  if (type == "gemma") return;
  c["sliding_window_pattern"] = layer_kinds(m, c);
  // (no window: trained on windows of block_size, so the local layers saw no farther)
  c["sliding_window"] = m.sliding_window > 0 ? m.sliding_window : m.block_size;
  c["rope_local_base_freq"] = static_cast<double>(m.rope_local_theta > 0 ? m.rope_local_theta : m.rope_theta);
  const double scalar =
      m.query_pre_attn_scalar > 0 ? m.query_pre_attn_scalar : static_cast<double>(m.attention_width() / m.n_head);
  c["query_pre_attn_scalar"] =
      scalar == std::floor(scalar) ? Json(static_cast<long>(scalar)) : Json(scalar);  // (144, as Gemma's)
  auto cap = [](double v) { return v > 0 ? Json(v) : Json(nullptr); };  // (null: none; absent: Gemma 2's 50, 30)
  c["attn_logit_softcapping"] = cap(m.attn_softcap), c["final_logit_softcapping"] = cap(m.final_softcap);
  if (type == "gemma2") c.erase("rope_local_base_freq"), c.erase("sliding_window_pattern");  // (Gemma 3's)
}
// Phi-3's and GLM's partial_rotary_factor: the rotated share of each head's columns (rope_dims).
double partial_rotary_factor(const ModelConfig& m) {
  return m.rope_dims > 0 ? static_cast<double>(m.rope_dims) / static_cast<double>(m.attention_width() / m.n_head) : 1.0;
}

// config.json's keys of Phi-3 (modeling_phi3.py) beside Llama's: partial_rotary_factor, longrope's
// factors with the original context at the top level (as Phi-3.5 mini's file) and its
// attention_factor where max_position_embeddings (block_size) / that context would derive another.
void phi3_config(const ModelConfig& m, const RopeScaling& r, Json& c) {
  c.erase("attention_bias"), c.erase("mlp_bias");
  c["partial_rotary_factor"] = partial_rotary_factor(m);
  c["sliding_window"] = m.sliding_window > 0 ? Json(m.sliding_window) : Json(nullptr);
  if (r.short_factor.empty()) return;
  c["original_max_position_embeddings"] = r.original_context;
  c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", r.short_factor}, {"long_factor", r.long_factor}};
  const double context = static_cast<double>(r.original_context), f = static_cast<double>(m.block_size) / context;
  const double derived = f <= 1 ? 1 : std::sqrt(1 + std::log(f) / std::log(context));
  if (std::fabs(derived - r.amplitude) > 1e-12 * r.amplitude) c["rope_scaling"]["attention_factor"] = r.amplitude;
}
// config.json's keys of IBM Granite (modeling_granite.py) beside Llama's: the four multipliers, 1 (none)
// where the deck has none, attention_multiplier 1 / sqrt(head width).
void granite_config(const ModelConfig& m, Json& c) {
  const auto or_one = [](double v) { return v > 0 ? v : 1.0; };
  c["embedding_multiplier"] = or_one(m.embedding_multiplier);
  c["residual_multiplier"] = or_one(m.residual_multiplier);
  c["logits_scaling"] = or_one(m.logits_scaling);
  c["attention_multiplier"] = m.attention_multiplier > 0
                                  ? m.attention_multiplier
                                  : 1 / std::sqrt(static_cast<double>(m.attention_width() / m.n_head));
}
// config.json's keys of the class `type` beside Llama's.
void family_config(const ModelConfig& m, const std::string& type, Json& c) {
  if (type == "qwen2" || type == "qwen3") {  // (a window: on every layer, from max_window_layers 0 on)
    c["use_sliding_window"] = m.sliding_window > 0, c["max_window_layers"] = 0;
    c["sliding_window"] = m.sliding_window > 0 ? Json(m.sliding_window) : Json(nullptr);
  }
  if (type == "mistral") c["sliding_window"] = m.sliding_window;
  if (type == "qwen2" || type == "mistral")  // (their configurations have neither)
    c.erase("attention_bias"), c.erase("mlp_bias");
  if (type == "olmo2" || type == "olmo3") c.erase("mlp_bias");  // (Olmo2Config has attention_bias alone)
  if (type == "olmo3") layer_kinds(m, c), c["sliding_window"] = m.sliding_window;
  if (type == "exaone4") {  // (no sliding_window: null, every layer full and rotating)
    c.erase("attention_bias"), c.erase("mlp_bias");
    c["sliding_window"] = m.sliding_window > 0 ? Json(m.sliding_window) : Json(nullptr);
    if (m.sliding_window > 0) c["sliding_window_pattern"] = layer_kinds(m, c);
  }
  if (type == "smollm3") {  // (1: the layer rotates; the interval too, for readers of the older key)
    Json layers = Json::array();
    for (long i = 0; i < m.n_layer; ++i) layers.push_back((i + 1) % m.no_rope_every == 0 ? 0 : 1);
    c["no_rope_layers"] = layers, c["no_rope_layer_interval"] = m.no_rope_every;
    c["use_sliding_window"] = false, c["sliding_window"] = nullptr;
  }
  if (is_gemma(type)) gemma_config(m, type, c);
  if (type == "phi3") phi3_config(m, m.rope_scaling, c);
  if (type == "granite") granite_config(m, c);
  if (type == "arcee") c["hidden_act"] = "relu2";
  if (is_glm(type)) {  // (GlmConfig: attention_bias on q, k and v; the rotated part of each head)
    c.erase("mlp_bias"), c["attention_bias"] = true;
    c["partial_rotary_factor"] = partial_rotary_factor(m);
  }
}

// config.json's rope_scaling for llama3's, linear's and yarn's (longrope's: phi3_config); null: none.
Json rope_scaling_json(const RopeScaling& r) {
  if (r.linear > 0) return {{"rope_type", "linear"}, {"factor", r.linear}};
  if (r.yarn > 0) {  // (transformers 5's and vLLM's reading: the factor as given)
    Json y = {{"rope_type", "yarn"},
              {"factor", r.yarn},
              {"original_max_position_embeddings", r.original_context},
              {"beta_fast", r.beta_fast},
              {"beta_slow", r.beta_slow},
              {"attention_factor", r.amplitude}};
    if (!r.truncate) y["truncate"] = false;
    return y;
  }
  if (r.factor > 0)
    return {{"rope_type", "llama3"},
            {"factor", r.factor},
            {"low_freq_factor", r.low_freq_factor},
            {"high_freq_factor", r.high_freq_factor},
            {"original_max_position_embeddings", r.original_context}};
  return nullptr;
}
}  // namespace

Exported llama_export(const std::vector<LazyTensor>& ours, const ModelConfig& m, std::int64_t vocab) {
  Exported out;
  out.config = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"hidden_act", "silu"},
                {"attention_bias", false},
                {"mlp_bias", false},
                {"num_hidden_layers", m.n_layer},
                {"num_attention_heads", m.n_head},
                {"num_key_value_heads", m.n_kv_heads ? m.n_kv_heads : m.n_head},
                {"hidden_size", m.n_embd},
                {"head_dim", m.attention_width() / m.n_head},
                {"intermediate_size", m.ffn_dim},
                {"rms_norm_eps", m.norm_eps},
                {"rope_theta", static_cast<double>(m.rope_theta)},
                {"max_position_embeddings", m.block_size},
                {"vocab_size", vocab},
                {"tie_word_embeddings", m.tie_embeddings},
                {"torch_dtype", "float32"}};
  const RopeScaling& r = m.rope_scaling;
  const std::string type = export_type(m, !r.short_factor.empty());
  out.config["architectures"] = {llama_class(type)}, out.config["model_type"] = type;
  out.config["rope_scaling"] = rope_scaling_json(r);
  family_config(m, type, out.config);
  std::map<std::string, std::string> to_hf;
  for (const auto& [theirs, mine] : direct_names(m, type)) to_hf[mine] = theirs;
  const std::int64_t q = m.attention_width(), d = q / m.n_head, kv = (m.n_kv_heads ? m.n_kv_heads : m.n_head) * d;
  for (const LazyTensor& t : ours) {
    if (const auto it = to_hf.find(t.name); it != to_hf.end()) {
      out.tensors.push_back(renamed(t, it->second));
      continue;
    }
    const std::string layer = "model.layers." + t.name.substr(2, t.name.find('.', 2) - 2) + ".";
    const bool glm = is_glm(type);
    if (type == "phi3" && t.name.find("self_attn.qkv.weight") != std::string::npos) {  // (fused, in this order)
      out.tensors.push_back(renamed(t, layer + "self_attn.qkv_proj.weight"));
    } else if ((type == "phi3" || glm) && t.name.find("mlp.gate_up.weight") != std::string::npos) {
      out.tensors.push_back(renamed(t, layer + "mlp.gate_up_proj.weight"));
    } else if (t.name.find("self_attn.qkv.") != std::string::npos) {  // (the weight, and Qwen2's and GLM's bias)
      const std::string leaf = t.name.substr(t.name.rfind('.'));
      const auto turned = [&](const LazyTensor& rows, std::int64_t heads) {  // (GLM's interleaved pairs)
        return glm ? rows_ordered(rows, rows.name, glm_rows(heads, d, m.rope_dims ? m.rope_dims : d, true)) : rows;
      };
      out.tensors.push_back(turned(rows_slice(t, layer + "self_attn.q_proj" + leaf, 0, q), m.n_head));
      out.tensors.push_back(turned(rows_slice(t, layer + "self_attn.k_proj" + leaf, q, kv), kv / d));
      out.tensors.push_back(rows_slice(t, layer + "self_attn.v_proj" + leaf, q + kv, kv));
    } else if (t.name.find("mlp.gate_up.weight") != std::string::npos) {
      out.tensors.push_back(rows_slice(t, layer + "mlp.gate_proj.weight", 0, m.ffn_dim));
      out.tensors.push_back(rows_slice(t, layer + "mlp.up_proj.weight", m.ffn_dim, m.ffn_dim));
    } else {
      throw bad_input("--export-hf: the checkpoint's tensor " + t.name + " has no place in LlamaForCausalLM");
    }
  }
  order_as_save_pretrained(out.tensors);
  return out;
}

}  // namespace hpctrain::hf
