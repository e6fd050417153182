// Hugging Face's LlamaForCausalLM layout (checkpoint/hf_layouts.hpp): q_proj, k_proj and v_proj
// are the rows of hpctrain's fused qkv in that order (both rotate-half RoPE, so no permutation),
// gate_proj and up_proj the halves of its fused gate_up, weights [out, in] on both sides; the
// rotary_emb.inv_freq buffers older files carry are skipped. Mistral's MistralForCausalLM and
// Qwen2's Qwen2ForCausalLM are this layout too; Qwen2's q_proj, k_proj and v_proj carry biases, the
// rows of hpctrain's qkv bias ([model] qkv_bias), and no other projection does. Microsoft's
// Phi3ForCausalLM (Phi-3) holds q|k|v already fused (qkv_proj) and gate|up too (gate_up_proj),
// in hpctrain's row order. Qwen3's Qwen3ForCausalLM adds q_norm and k_norm, learned weights of the
// per-head QK-norm ([model] qk_norm_weight), and no biases. Google's GemmaForCausalLM (Gemma) and
// Gemma3ForCausalLM (Gemma 3's text model, model_type gemma3_text) are Llama's tensors with a GeGLU
// MLP, norms by 1 + weight, the embeddings scaled by sqrt(hidden_size) ([model] mlp = geglu,
// norm_offset, embed_scale); Gemma 3 adds the weighted QK-norm, norms after attention and the MLP
// (pre_feedforward_layernorm, post_feedforward_layernorm: [model] sandwich_norm) and local layers
// of another rotary base ([model] rope_local_theta, global_every). Sliding windows ([model]
// sliding_window): Mistral's and Phi-3's on every layer, Gemma 3's and OLMo 3's on their local
// layers, Qwen2's and Qwen3's (use_sliding_window) on the layers from max_window_layers on. AI2's
// Olmo2ForCausalLM (OLMo 2) has no input norm, norms after both sublayers ([model] post_norm) and
// q_norm / k_norm over the projections' whole width ([model] qk_norm_whole); Olmo3ForCausalLM
// (OLMo 3) adds sliding windows on 3 layers of 4 whose rotation is unscaled. The rotation's keys, in
// transformers 4's layout or 5's rope_parameters: checkpoint/hf_rope.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hf_llama_names.hpp"
#include "hf_rope.hpp"
#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::hf {

namespace {
const char* const kLlama = "Llama";

std::int64_t head_width(const ModelConfig& m) { return m.attention_width() / m.n_head; }

// layer_types (newer files: each layer's kind) as the period of the full-attention layers, [model]
// global_every: layer i is full when i + 1 is a multiple of it; one line when the list is no such pattern.
std::int64_t global_period(const Json& kinds, std::int64_t layers, const std::string& file) {
  const std::string what = file + ": \"layer_types\" = " + kinds.dump().substr(0, 200);
  if (!kinds.is_array() || static_cast<std::int64_t>(kinds.size()) != layers)
    throw bad_input(what + " is not a list of num_hidden_layers = " + std::to_string(layers) + " layer kinds");
  std::int64_t period = 0;
  for (std::size_t i = 0; i < kinds.size() && period == 0; ++i)
    if (kinds[i] == "full_attention") period = static_cast<std::int64_t>(i) + 1;
  if (period == 0) period = layers + 1;  // (no full layer: every layer local)
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const bool full = (static_cast<std::int64_t>(i) + 1) % period == 0;
    if (kinds[i] != (full ? "full_attention" : "sliding_attention"))
      throw bad_input(what + ": hpctrain makes layer i full_attention when i + 1 is a multiple of " +
                      std::to_string(period) + " (the first full layer's), the others sliding_attention");
  }
  return period;
}
// SmolLM3's no_rope_layers (1: the layer rotates, 0: a NoPE layer; absent: a NoPE layer every
// no_rope_layer_interval-th, 4) as [model] no_rope_every: the first NoPE layer's number, each one's
// a multiple of it (0: none); one line when the list is no such pattern.
std::int64_t no_rope_period(const Json& c, std::int64_t layers, const std::string& file) {
  if (!c.contains("no_rope_layers") || c["no_rope_layers"].is_null()) {
    const std::int64_t every = whole(c, "no_rope_layer_interval", file, 4);
    return every > layers ? 0 : every;
  }
  const Json& l = c["no_rope_layers"];
  const std::string what = file + ": \"no_rope_layers\" = " + l.dump().substr(0, 200);
  if (!l.is_array() || static_cast<std::int64_t>(l.size()) < layers)
    throw bad_input(what + " is not a list of a 0 or 1 for each of num_hidden_layers = " + std::to_string(layers));
  std::int64_t period = 0;
  for (std::int64_t i = 0; i < layers && period == 0; ++i)
    if (l[static_cast<std::size_t>(i)] == 0) period = i + 1;
  for (std::int64_t i = 0; i < layers; ++i)
    if (l[static_cast<std::size_t>(i)] != ((period > 0 && (i + 1) % period == 0) ? 0 : 1))
      throw bad_input(what + ": hpctrain takes rotary positions off layer i when i + 1 is a multiple of " +
                      std::to_string(period) + " (the first NoPE layer's), no other");
  return period;
}

// The folder's layer_types as global_period reads them, or `fallback` where it lists none.
std::int64_t listed_period(const Json& c, std::int64_t layers, const std::string& file, std::int64_t fallback) {
  if (!c.contains("layer_types") || c["layer_types"].is_null()) return fallback;
  return global_period(c["layer_types"], layers, file);
}

// A soft-capping key of Gemma 2's config.json (null: none), `fallback` when absent.
double softcap(const Json& c, const char* key, double fallback, const std::string& file) {
  if (!c.contains(key)) return fallback;
  if (c[key].is_null()) return 0;
  if (!c[key].is_number() || c[key].get<double>() < 0)
    throw bad_input(file + ": \"" + key + "\" = " + c[key].dump() + " is not a cap (a number >= 0, or null)");
  return c[key].get<double>();
}

// Gemma 2's and Gemma 3's query_pre_attn_scalar (their configs' default: 256): scores q . k / sqrt(it).
double query_scalar(const Json& c, const std::string& file) {
  if (!c.contains("query_pre_attn_scalar")) return 256;
  const Json& v = c["query_pre_attn_scalar"];
  if (!v.is_number() || v.get<double>() <= 0)
    throw bad_input(file + ": \"query_pre_attn_scalar\" = " + v.dump() + " is not a positive number");
  return v.get<double>();
}

// Gemma's, Gemma 2's and Gemma 3's options beside Llama's (modeling_gemma.py, modeling_gemma2.py,
// modeling_gemma3.py).
// `local_theta`: the sliding layers' base the file gives (rope_keys; -1: none, Gemma3TextConfig's 10000).
void gemma_options(const Json& c, const std::string& type, const std::string& file, std::int64_t local_theta,
                   ModelConfig& m) {
  const std::string model = type == "gemma" ? "Gemma" : type == "gemma2" ? "Gemma 2" : "Gemma 3";
  m.mlp = Mlp::geglu, m.norm_offset = m.embed_scale = true;
  expect_value(c, "hidden_activation", "gelu_pytorch_tanh", file, model);  // (its default; hidden_act is legacy)
  if (type == "gemma") return;
  m.sandwich_norm = true;
  const double scalar = query_scalar(c, file);  // (Gemma 2 27B's 144 for heads of 128)
  m.query_pre_attn_scalar = scalar == static_cast<double>(head_width(m)) ? 0 : scalar;
  if (type == "gemma2") {  // (Gemma2Config's defaults: 50 and 30; layer 0 sliding, then every other one)
    m.attn_softcap = softcap(c, "attn_logit_softcapping", 50, file);
    m.final_softcap = softcap(c, "final_logit_softcapping", 30, file);
    m.global_every = listed_period(c, m.n_layer, file, 2);
    return;
  }
  m.qk_norm = m.qk_norm_weight = true;
  for (const char* cap : {"attn_logit_softcapping", "final_logit_softcapping"})  // (Gemma 2's; Gemma 3's are null)
    if (c.contains(cap) && !c[cap].is_null())
      throw bad_input(file + ": \"" + cap + "\" = " + c[cap].dump() + ": hpctrain's " + model +
                      " computes no soft-capping (Gemma 2's)");
  m.rope_local_theta = local_theta >= 0 ? local_theta : 10000;
  m.global_every = listed_period(c, m.n_layer, file, whole(c, "sliding_window_pattern", file, 6));
  if (m.global_every < 1) throw bad_input(file + ": \"sliding_window_pattern\" = 0: no layer would be global");
}

// IBM Granite's multipliers (modeling_granite.py; GraniteConfig's defaults: 1) as [model]
// embedding_multiplier, residual_multiplier, attention_multiplier (the scores' scale, in place of 1 /
// sqrt(head width): 1 when absent) and logits_scaling; 1 is none for the others.
void granite_options(const Json& c, const std::string& file, ModelConfig& m) {
  const auto positive = [&](const char* key) {
    if (!c.contains(key) || c[key].is_null()) return 1.0;
    if (!c[key].is_number() || !(c[key].get<double>() > 0))
      throw bad_input(file + ": \"" + key + "\" = " + c[key].dump() + " is not a positive number");
    return c[key].get<double>();
  };
  const double e = positive("embedding_multiplier"), r = positive("residual_multiplier");
  const double l = positive("logits_scaling");
  m.embedding_multiplier = e == 1 ? 0 : e, m.residual_multiplier = r == 1 ? 0 : r, m.logits_scaling = l == 1 ? 0 : l;
  m.attention_multiplier = positive("attention_multiplier");
}

// EXAONE 4's sliding_window_pattern without layer_types (Exaone4Config's default 4): the period of
// its full layers, a number or "LLLG" (local layers, then the global one); one line for another.
std::int64_t exaone4_pattern(const Json& c, const std::string& file) {
  if (!c.contains("sliding_window_pattern") || c["sliding_window_pattern"].is_null()) return 4;
  const Json& p = c["sliding_window_pattern"];
  if (p.is_string()) {
    const std::string s = p.get<std::string>();
    if (!s.empty() && s.back() == 'G' && s.find_first_not_of('L') == s.size() - 1)
      return static_cast<std::int64_t>(s.size());
  } else if (p.is_number_integer() && p.get<std::int64_t>() >= 1) {
    return p.get<std::int64_t>();
  }
  throw bad_input(file + ": \"sliding_window_pattern\" = " + p.dump().substr(0, 80) +
                  ": hpctrain reads a period (4) or local layers then one global (\"LLLG\")");
}

// Hugging Face's sliding_window, on the layers that take it (each model's *Config and its layer_types).
void window_options(const Json& c, const std::string& type, const std::string& file, ModelConfig& m) {
  const bool qwen = type == "qwen2" || type == "qwen3";
  if (type == "smollm3") expect_value(c, "use_sliding_window", false, file, "SmolLM3");    // (its NoPE layers' window)
  if (type == "llama" || type == "gemma" || type == "olmo2" || type == "smollm3") return;  // (no sliding_window read)
  if (!c.contains("sliding_window") || c["sliding_window"].is_null() || (qwen && !c.value("use_sliding_window", false)))
    return;  // (Qwen's published files leave use_sliding_window false: no window)
  const std::int64_t window = whole(c, "sliding_window", file);
  if (window < 1)
    throw bad_input(file + ": \"sliding_window\" = " + std::to_string(window) +
                    ": a query would attend over no position (null: no window)");
  if (type == "gemma3_text" || type == "gemma2") {  // (its local layers: gemma_options)
    m.sliding_window = window;
    return;
  }
  std::int64_t from = 0;  // the first windowed layer
  const std::int64_t fallback = type == "olmo3" ? 4 : type == "exaone4" ? exaone4_pattern(c, file) : 0;
  if (const std::int64_t period = listed_period(c, m.n_layer, file, fallback); period > 0) {
    from = period == 1 ? m.n_layer : 0;  // (OLMo 3's default without layer_types: every 4th layer full)
    m.global_every = period > m.n_layer ? 0 : period;
  } else if (qwen) {
    from = std::min(whole(c, "max_window_layers", file, 28), m.n_layer);  // (Qwen2Config's default)
    if (from > 0 && from < m.n_layer)
      throw bad_input(file + ": \"max_window_layers\" = " + std::to_string(from) + " of " + std::to_string(m.n_layer) +
                      " layers: hpctrain windows every layer (0) or every layer but " +
                      "each Nth, not the layers from one on");
  }
  if (from < m.n_layer) m.sliding_window = window;
  if (m.global_every == 1) m.global_every = 0;  // (every layer global: no window)
}

// OLMo 3's rotation (modeling_olmo3.py, transformers 4.57: its sliding layers rotate with the default
// rope_type, its full ones with rope_scaling's): the sliding layers as hpctrain's local layers with
// rope_local_theta (the file's sliding_attention base, else rope_theta) where the full ones scale;
// no scaling where every layer slides. `local_theta`: rope_keys' (-1: none).
void olmo3_rotation(std::int64_t local_theta, ModelConfig& m) {
  if (m.sliding_window == 0) return;  // (every layer full)
  if (m.global_every == 0) {
    m.rope_scaling = RopeScaling{};
    if (local_theta >= 0) m.rope_theta = local_theta;
    return;
  }
  const std::int64_t local = local_theta >= 0 ? local_theta : m.rope_theta;
  if (m.rope_scaling.scaled() || local != m.rope_theta) m.rope_local_theta = local;
}

// Phi-3's partial_rotary_factor (Phi-4 mini's 0.75: the first int(0.75 D) columns of each head rotate;
// transformers 5: inside rope_parameters) as [model] rope_dims, and longrope's factors one a pair of them.
void rotated_columns(const Json& c, const std::string& type, const std::string& file, const Rope& rope,
                     ModelConfig& m) {
  Json part = Json::object();
  if (rope.partial >= 0)
    part["partial_rotary_factor"] = rope.partial;
  else if (c.contains("partial_rotary_factor") && !c["partial_rotary_factor"].is_null())
    part["partial_rotary_factor"] = c["partial_rotary_factor"];
  const std::string where = rope.partial >= 0 ? file + " rope_parameters" : file;
  if (type != "phi3" && !is_glm(type))
    expect_value(part, "partial_rotary_factor", 1.0, where, kLlama + std::string("ForCausalLM"));
  const double f = part.value("partial_rotary_factor", is_glm(type) ? 0.5 : 1.0);  // (GlmConfig's default: half)
  const auto rotated = static_cast<std::int64_t>(static_cast<double>(head_width(m)) * f);  // (Python's int())
  if (!(f > 0 && f <= 1) || rotated < 2 || rotated % 2 != 0)
    throw bad_input(where + ": \"partial_rotary_factor\" = " + part["partial_rotary_factor"].dump() + " rotates " +
                    std::to_string(rotated) + " columns of heads of " + std::to_string(head_width(m)) +
                    ": an even number from 2, at most the head's");
  m.rope_dims = rotated == head_width(m) ? 0 : rotated;
  const RopeScaling& s = rope.scaling;
  if (!s.short_factor.empty() && (static_cast<std::int64_t>(s.short_factor.size()) * 2 != rotated ||
                                  s.long_factor.size() != s.short_factor.size()))
    throw bad_input(file + ": longrope's short_factor and long_factor hold " + std::to_string(s.short_factor.size()) +
                    " and " + std::to_string(s.long_factor.size()) + " factors for " + std::to_string(rotated / 2) +
                    " rotated pairs (one each)");
}

// `c`'s [model] keys, arch = llama; block_size left to the caller.
ModelConfig llama_model(const Json& c, const std::string& type, const std::string& file) {
  ModelConfig m;
  m.arch = Arch::llama;
  m.n_layer = whole(c, "num_hidden_layers", file);
  m.n_head = whole(c, "num_attention_heads", file);
  m.n_kv_heads = whole(c, "num_key_value_heads", file, m.n_head);
  m.n_embd = whole(c, "hidden_size", file);
  m.ffn_dim = whole(c, "intermediate_size", file);
  m.vocab_size = whole(c, "vocab_size", file);
  const RopeKeys rope = rope_keys(c, file, type == "gemma3_text" || type == "olmo3");
  m.rope_theta = rope.global.theta >= 0 ? rope.global.theta : type == "smollm3" ? 2000000 : 10000;  // (SmolLM3's)
  m.rope_scaling = rope.global.scaling;
  m.tie_embeddings = c.value("tie_word_embeddings", is_gemma(type));  // (GemmaConfig's default: tied)
  // (Qwen2Attention: bias=True on q, k and v, hard-wired; GlmAttention's attention_bias, True by default)
  m.qkv_bias = type == "qwen2" || (is_glm(type) && c.value("attention_bias", true));
  m.sandwich_norm = type == "glm4";  // (Glm4DecoderLayer: norms after attention and the MLP too)
  const bool olmo = type == "olmo2" || type == "olmo3";
  m.qk_norm = m.qk_norm_weight = type == "qwen3" || olmo || type == "exaone4";  // (Qwen3Attention's q_norm, k_norm)
  m.qk_norm_whole = olmo;                   // (Olmo2Attention's over the projections)
  m.post_norm = olmo || type == "exaone4";  // (Olmo2DecoderLayer: no input norm)
  if (type == "smollm3") m.no_rope_every = no_rope_period(c, m.n_layer, file);
  if (m.n_head < 1 || m.n_embd % m.n_head != 0 || m.n_kv_heads < 1 || m.n_head % m.n_kv_heads != 0)
    throw bad_input(file + ": hidden_size " + std::to_string(m.n_embd) + ", num_attention_heads " +
                    std::to_string(m.n_head) + ", num_key_value_heads " + std::to_string(m.n_kv_heads) +
                    " do not divide into heads");
  const std::int64_t head_dim = whole(c, "head_dim", file, m.n_embd / m.n_head);  // (Qwen3 0.6B's 128 for 64)
  if (head_dim < 2) throw bad_input(file + ": \"head_dim\" = " + std::to_string(head_dim) + " is not a head's width");
  m.head_dim = head_dim == m.n_embd / m.n_head ? 0 : head_dim;
  if (type == "arcee") m.mlp = Mlp::relu2;  // (ArceeMLP, Nemotron's: down_proj(relu(up_proj(x))^2))
  if (!is_gemma(type)) expect_value(c, "hidden_act", type == "arcee" ? "relu2" : "silu", file, kLlama);
  if (!m.qkv_bias) expect_value(c, "attention_bias", false, file, kLlama);
  expect_value(c, "mlp_bias", false, file, kLlama);
  rotated_columns(c, type, file, rope.global, m);
  const double eps = c.value("rms_norm_eps", 1e-6), k = -std::log10(eps);
  if (!(eps >= 1e-12 && eps <= 0.1))
    throw bad_input(file + ": \"rms_norm_eps\" = " + c["rms_norm_eps"].dump() + " is not an epsilon in 1e-12..0.1");
  m.norm_eps = std::fabs(k - std::round(k)) < 1e-9 ? std::stod("1e-" + std::to_string(std::lround(k))) : eps;
  if (is_gemma(type)) gemma_options(c, type, file, rope.local.theta, m);
  if (type == "granite") granite_options(c, file, m);
  window_options(c, type, file, m);
  if (type == "olmo3") olmo3_rotation(rope.local.theta, m);
  if (type == "exaone4" && c.contains("sliding_window") && !c["sliding_window"].is_null()) {
    const std::int64_t period = listed_period(c, m.n_layer, file, exaone4_pattern(c, file));
    if (period <= m.n_layer) m.no_rope_every = period;  // (Exaone4Attention: its full layers' global NoPE)
  }
  if (m.sliding_window == 0 && m.rope_local_theta == 0) m.global_every = 0;  // (no local layer differs)
  return m;
}

// Layer i's tensors that hpctrain fuses: q|k|v (and Qwen2's biases) and gate|up, taken out of
// `hf` into `out`; Phi-3's files hold them fused already (qkv_proj, gate_up_proj).
void take_fused(Tensors& hf, const ModelConfig& m, std::int64_t i, const std::string& type, const std::string& dir,
                std::vector<LazyTensor>& out) {
  const std::string p = "model.layers." + std::to_string(i) + ".", us = "h." + std::to_string(i) + ".";
  const std::int64_t d = head_width(m), q = m.n_head * d, kv = m.n_kv_heads * d, e = m.n_embd, f = m.ffn_dim;
  if (is_glm(type)) {  // (q, k and v apart, q and k turned into hpctrain's pair order; gate|up fused)
    const std::int64_t r = m.rope_dims ? m.rope_dims : d;
    const auto turned = [&](const char* name, const Shape& shape, std::int64_t heads) {
      const LazyTensor t = take(hf, p + "self_attn." + name, shape, dir);
      return rows_ordered(t, t.name, glm_rows(heads, d, r, false));
    };
    out.push_back(rows_of(us + "self_attn.qkv.weight",
                          {turned("q_proj.weight", {q, e}, m.n_head), turned("k_proj.weight", {kv, e}, m.n_kv_heads),
                           take(hf, p + "self_attn.v_proj.weight", {kv, e}, dir)}));
    if (m.qkv_bias)
      out.push_back(rows_of(us + "self_attn.qkv.bias",
                            {turned("q_proj.bias", {q}, m.n_head), turned("k_proj.bias", {kv}, m.n_kv_heads),
                             take(hf, p + "self_attn.v_proj.bias", {kv}, dir)}));
    out.push_back(renamed(take(hf, p + "mlp.gate_up_proj.weight", {2 * f, e}, dir), us + "mlp.gate_up.weight"));
    return;
  }
  if (type == "phi3") {
    out.push_back(
        renamed(take(hf, p + "self_attn.qkv_proj.weight", {q + 2 * kv, e}, dir), us + "self_attn.qkv.weight"));
    out.push_back(renamed(take(hf, p + "mlp.gate_up_proj.weight", {2 * f, e}, dir), us + "mlp.gate_up.weight"));
    return;
  }
  out.push_back(rows_of(us + "self_attn.qkv.weight", {take(hf, p + "self_attn.q_proj.weight", {q, e}, dir),
                                                      take(hf, p + "self_attn.k_proj.weight", {kv, e}, dir),
                                                      take(hf, p + "self_attn.v_proj.weight", {kv, e}, dir)}));
  if (m.qkv_bias)
    out.push_back(rows_of(us + "self_attn.qkv.bias", {take(hf, p + "self_attn.q_proj.bias", {q}, dir),
                                                      take(hf, p + "self_attn.k_proj.bias", {kv}, dir),
                                                      take(hf, p + "self_attn.v_proj.bias", {kv}, dir)}));
  if (m.mlp == Mlp::relu2) return;  // (Arcee's up_proj alone: direct_names)
  out.push_back(rows_of(us + "mlp.gate_up.weight", {take(hf, p + "mlp.gate_proj.weight", {f, e}, dir),
                                                    take(hf, p + "mlp.up_proj.weight", {f, e}, dir)}));
}

Shape direct_shape(const std::string& hf, const ModelConfig& m) {
  if (hf.find("embed_tokens") != std::string::npos || hf == "lm_head.weight") return {m.vocab_size, m.n_embd};
  if (hf.find("o_proj") != std::string::npos) return {m.n_embd, m.n_head * head_width(m)};
  if (hf.find("down_proj") != std::string::npos) return {m.n_embd, m.ffn_dim};
  if (hf.find("up_proj") != std::string::npos) return {m.ffn_dim, m.n_embd};  // (Arcee's, unfused)
  const bool keys = hf.find("self_attn.k_norm") != std::string::npos;
  if (hf.find("self_attn.q_norm") != std::string::npos || keys)  // (OLMo 2's: the projection's width)
    return {m.qk_norm_whole ? (keys ? m.n_kv_heads : m.n_head) * head_width(m) : head_width(m)};
  return {m.n_embd};
}
// A Gemma 3 text model's keys with those the file leaves out at Gemma3TextConfig's defaults
// (configuration_gemma3.py): a gemma3_text config.json's own, or Gemma3ForConditionalGeneration's
// text_config (model_type gemma3: the published 4B, 12B and 27B files give their shape and leave
// eps, bases, heads of 256 and the pattern to the defaults).
Json gemma3_text_config(const Json& c, const std::string& file) {
  const bool image_text = c.value("model_type", "") == "gemma3";
  if (image_text && (!c.contains("text_config") || !c["text_config"].is_object()))
    throw bad_input(file + ": model_type gemma3 (Gemma3ForConditionalGeneration) without a \"text_config\" object");
  Json t = {{"vocab_size", 262208},
            {"hidden_size", 2304},
            {"intermediate_size", 9216},
            {"num_hidden_layers", 26},
            {"num_attention_heads", 8},
            {"num_key_value_heads", 4},
            {"head_dim", 256},
            {"max_position_embeddings", 131072},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1000000.0},
            {"query_pre_attn_scalar", 256},
            {"sliding_window", 4096},
            {"rope_local_base_freq", 10000.0},
            {"sliding_window_pattern", 6},
            {"tie_word_embeddings", true}};
  for (const auto& [key, value] : (image_text ? c["text_config"] : c).items()) t[key] = value;
  t["model_type"] = "gemma3_text";
  return t;
}

// Gemma3ForConditionalGeneration's tensors: the language model's under Gemma3ForCausalLM's names
// (language_model.model.X, or model.language_model.X as newer transformers save them, become
// model.X; language_model.lm_head.weight lm_head.weight), the vision tower's and the projector's
// left out; any other name stays, for the import to refuse.
Tensors language_model(Tensors hf) {
  static const std::pair<const char*, const char*> kMoved[] = {{"language_model.model.", "model."},
                                                               {"model.language_model.", "model."},
                                                               {"language_model.lm_head.", "lm_head."}};
  static const char* const kVision[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                        "model.multi_modal_projector."};
  Tensors out;
  for (auto& [name, t] : hf) {
    const std::string& n = name;  // (a structured binding, which C++17 lambdas cannot capture: clang refuses it)
    if (std::any_of(std::begin(kVision), std::end(kVision), [&](const char* p) { return n.rfind(p, 0) == 0; }))
      continue;
    std::string ours = name;
    for (const auto& [from, to] : kMoved)
      if (name.rfind(from, 0) == 0) ours = to + name.substr(std::string(from).size());
    out.emplace(ours, renamed(std::move(t), ours));
  }
  return out;
}

Imported import_llama_layout(const Json& c, Tensors hf, const std::string& file, const std::string& dir) {
  const std::string type = c.value("model_type", "");
  ModelConfig m = llama_model(c, type, file);
  expect_layers(m.n_layer, hf.size(), file, "num_hidden_layers");
  m.block_size = whole(c, "max_position_embeddings", file, 2048);
  if (m.block_size < 1)
    throw bad_input(file + ": \"max_position_embeddings\" = 0: the model's context would hold no position");
  Imported out{m, {}};
  for (const auto& [theirs, ours] : direct_names(m, type)) {
    out.tensors.push_back(renamed(take(hf, theirs, direct_shape(theirs, m), dir), ours));
  }
  for (std::int64_t i = 0; i < m.n_layer; ++i) take_fused(hf, m, i, type, dir, out.tensors);
  if (m.tie_embeddings) hf.erase("lm_head.weight");  // (some files carry the tied copy)
  for (const auto& [name, t] : hf)
    if (name.find("rotary_emb.inv_freq") == std::string::npos)
      throw bad_input(dir + ": tensor " + name + " " + shape_string(t.shape) + " is not a parameter of " +
                      llama_class(type) + " with this config.json");
  return out;
}

}  // namespace

bool is_glm(const std::string& type) { return type == "glm" || type == "glm4"; }

std::vector<std::int64_t> glm_rows(std::int64_t heads, std::int64_t width, std::int64_t rotated, bool to_hf) {
  std::vector<std::int64_t> order;
  const std::int64_t half = rotated / 2;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < width; ++j) {
      std::int64_t from = j;
      if (j < rotated) from = to_hf ? (j % 2 == 0 ? j / 2 : half + j / 2) : (j < half ? 2 * j : 2 * (j - half) + 1);
      order.push_back(h * width + from);
    }
  return order;
}

bool is_gemma(const std::string& type) { return type == "gemma" || type == "gemma2" || type == "gemma3_text"; }

std::vector<std::pair<std::string, std::string>> direct_names(const ModelConfig& m, const std::string& type) {
  std::vector<std::pair<std::string, std::string>> out{{"model.embed_tokens.weight", "tok_emb.weight"},
                                                       {"model.norm.weight", "norm.weight"}};
  const bool qk_norms = m.qk_norm_weight, sandwich = m.sandwich_norm, post = m.post_norm;
  for (std::int64_t i = 0; i < m.n_layer; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", us = "h." + std::to_string(i) + ".";
    if (!post) out.emplace_back(hf + "input_layernorm.weight", us + "input_layernorm.weight");
    if (type == "glm4") {  // (its names for the sandwich's norms)
      out.emplace_back(hf + "post_self_attn_layernorm.weight", us + "post_attention_layernorm.weight");
      out.emplace_back(hf + "post_attention_layernorm.weight", us + "pre_feedforward_layernorm.weight");
      out.emplace_back(hf + "post_mlp_layernorm.weight", us + "post_feedforward_layernorm.weight");
    } else {
      out.emplace_back(hf + "post_attention_layernorm.weight", us + "post_attention_layernorm.weight");
    }
    out.emplace_back(hf + "self_attn.o_proj.weight", us + "self_attn.proj.weight");
    out.emplace_back(hf + "mlp.down_proj.weight", us + "mlp.down.weight");
    if (m.mlp == Mlp::relu2) out.emplace_back(hf + "mlp.up_proj.weight", us + "mlp.up.weight");  // (Arcee's)
    if (qk_norms) out.emplace_back(hf + "self_attn.q_norm.weight", us + "self_attn.q_norm.weight");
    if (qk_norms) out.emplace_back(hf + "self_attn.k_norm.weight", us + "self_attn.k_norm.weight");
    if (sandwich && type != "glm4")
      out.emplace_back(hf + "pre_feedforward_layernorm.weight", us + "pre_feedforward_layernorm.weight");
    if ((sandwich && type != "glm4") || post)
      out.emplace_back(hf + "post_feedforward_layernorm.weight", us + "post_feedforward_layernorm.weight");
  }
  if (!m.tie_embeddings) out.emplace_back("lm_head.weight", "lm_head.weight");
  return out;
}

void order_as_save_pretrained(std::vector<LazyTensor>& tensors) {
  static const std::vector<std::string> in_layer{"self_attn.q_proj.",
                                                 "self_attn.k_proj.",
                                                 "self_attn.v_proj.",
                                                 "self_attn.qkv_proj.",
                                                 "self_attn.o_proj.",
                                                 "self_attn.q_norm.",
                                                 "self_attn.k_norm.",
                                                 "mlp.gate_proj.",
                                                 "mlp.up_proj.",
                                                 "mlp.gate_up_proj.",
                                                 "mlp.down_proj.",
                                                 "input_layernorm.",
                                                 "post_attention_layernorm.",
                                                 "pre_feedforward_layernorm.",
                                                 "post_feedforward_layernorm.",
                                                 "post_self_attn_layernorm.",
                                                 "post_mlp_layernorm."};
  const std::string layers = "model.layers.";
  const auto key = [&](const std::string& name) {
    if (name.rfind("model.embed_tokens.", 0) == 0) return std::make_tuple(0, std::int64_t{0}, std::size_t{0});
    if (name.rfind(layers, 0) == 0) {
      std::size_t end = 0;
      const std::int64_t layer = std::stoll(name.substr(layers.size()), &end);
      const std::string rest = name.substr(layers.size() + end + 1);
      std::size_t at = 0;
      while (at < in_layer.size() && rest.rfind(in_layer[at], 0) != 0) ++at;
      return std::make_tuple(1, layer, at);
    }
    return std::make_tuple(name.rfind("model.", 0) == 0 ? 2 : 3, std::int64_t{0}, std::size_t{0});
  };
  std::stable_sort(tensors.begin(), tensors.end(),
                   [&](const LazyTensor& a, const LazyTensor& b) { return key(a.name) < key(b.name); });
}

namespace {
// The model_types this file reads and their classes.
const std::pair<const char*, const char*> kLlamaClasses[] = {{"llama", "LlamaForCausalLM"},
                                                             {"mistral", "MistralForCausalLM"},
                                                             {"qwen2", "Qwen2ForCausalLM"},
                                                             {"qwen3", "Qwen3ForCausalLM"},
                                                             {"phi3", "Phi3ForCausalLM"},
                                                             {"gemma", "GemmaForCausalLM"},
                                                             {"gemma2", "Gemma2ForCausalLM"},
                                                             {"gemma3_text", "Gemma3ForCausalLM"},
                                                             {"olmo2", "Olmo2ForCausalLM"},
                                                             {"olmo3", "Olmo3ForCausalLM"},
                                                             {"gemma3", "Gemma3ForConditionalGeneration"},
                                                             {"smollm3", "SmolLM3ForCausalLM"},
                                                             {"granite", "GraniteForCausalLM"},
                                                             {"arcee", "ArceeForCausalLM"},
                                                             {"exaone4", "Exaone4ForCausalLM"},
                                                             {"glm", "GlmForCausalLM"},
                                                             {"glm4", "Glm4ForCausalLM"}};
}  // namespace

std::string llama_class(const std::string& model_type) {
  for (const auto& [type, name] : kLlamaClasses)
    if (model_type == type) return name;
  return "";
}

std::string llama_classes() {
  std::string out;
  for (const auto& [type, name] : kLlamaClasses) out += std::string(out.empty() ? "" : ", ") + type + " (" + name + ")";
  return out;
}

Imported llama_import(const Json& c, Tensors hf, const std::string& file, const std::string& dir) {
  return typed_keys(file, [&] {
    const std::string type = c.value("model_type", "");
    if (type == "gemma3")  // (Gemma 3 4B-27B: the text model of an image-text one)
      return import_llama_layout(gemma3_text_config(c, file), language_model(std::move(hf)), file, dir);
    if (type == "gemma3_text") return import_llama_layout(gemma3_text_config(c, file), std::move(hf), file, dir);
    return import_llama_layout(c, std::move(hf), file, dir);
  });
}

}  // namespace hpctrain::hf
