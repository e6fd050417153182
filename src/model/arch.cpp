// Implementation of model/arch.hpp.
#include "hpctrain/model/arch.hpp"

#include <cmath>
#include <cstdio>

#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/rope.hpp"

namespace hpctrain {

namespace {
std::int64_t dropout_percent(const ModelConfig& m) { return std::lround(m.dropout * 100); }
// norm_eps as the norms' eps argument (layers/registry.hpp layer_named_eps): K for 10^-K, else the
// epsilon itself (GLM-4 9B's 1.5625e-07), float-exact.
std::string eps_arg(const ModelConfig& m) {
  const double k = -std::log10(m.norm_eps);
  if (std::fabs(k - std::round(k)) < 1e-9 && k >= 1 && k <= 99) return std::to_string(std::lround(k));
  return float_arg_text(static_cast<float>(m.norm_eps));
}
std::int64_t head_width(const ModelConfig& m) { return m.attention_width() / m.n_head; }
}  // namespace

std::string gpt_layers(const ModelConfig& m) {
  HPCT_CHECK(m.vocab_size > 0 && m.n_layer > 0, "gpt_layers: vocab_size resolved, dimensions set");
  char s[32];
  std::snprintf(s, sizeof(s), "%.5g", 0.02 / std::sqrt(2.0 * static_cast<double>(m.n_layer)));
  const std::string c = std::to_string(m.n_embd), v = std::to_string(m.vocab_size), proj_std(s);
  const std::string nobias = m.bias ? "" : ", bias=0", norm = m.bias ? "layernorm" : "layernorm(bias=0)";
  // Named as GPT-2's tensors are (Hugging Face's names map onto them by a table: docs/models.md).
  const std::string p = std::to_string(dropout_percent(m));
  const std::string drop = dropout_percent(m) ? " dropout(" + p + ")" : "";
  const std::string attention = "attn:attention(" + std::to_string(m.n_head) + nobias +
                                (dropout_percent(m) ? ", dropout=" + p : "") + ", proj_std=" + proj_std + ")";
  // (tp: how [parallel] tensor_parallel splits the pair, Megatron's column- then row-parallel)
  const std::string mlp = "mlp.fc:linear(" + std::to_string(4 * m.n_embd) + nobias + ", tp=column) " +
                          (m.activation == GptActivation::gelu_tanh ? "gelu_tanh" : "gelu") + " mlp.proj:linear(" + c +
                          nobias + ", std=" + proj_std + ", tp=row)";
  return "tok_emb:embedding(" + v + ", " + c + ") pos_emb:position_embedding" + drop + " repeat(" +
         std::to_string(m.n_layer) + ", h.{}:res(ln_1:" + norm + " " + attention + drop + ") h.{}:res(ln_2:" + norm +
         " " + mlp + drop + ")) ln_f:" + norm + " lm_head:lm_head(" + v + (m.tie_embeddings ? "" : ", tie=0") + ")";
}

namespace {
// Layer i's attention arguments after the head count: biases, RoPE, QK-norm, head width.
std::string llama_attention_args(const ModelConfig& m, std::int64_t i) {
  std::string a = std::to_string(m.n_head);
  if (m.n_kv_heads && m.n_kv_heads != m.n_head) a += ", kv_heads=" + std::to_string(m.n_kv_heads);
  const bool local = m.global_every == 0 || (i + 1) % m.global_every != 0;  // (Gemma 3's sliding layers)
  const bool local_rope = local && m.rope_local_theta > 0;
  const bool nope = m.no_rope_every > 0 && (i + 1) % m.no_rope_every == 0;  // (SmolLM3's: no rotary positions)
  a += m.qkv_bias ? ", proj_bias=0" : ", bias=0";
  if (!nope) {
    Rotary r;
    r.theta = static_cast<double>(local_rope ? m.rope_local_theta : m.rope_theta), r.dims = m.rope_dims;
    if (!local_rope) r.scaling = m.rope_scaling;  // (Gemma 3's and OLMo 3's local layers scale nothing)
    a += ", " + r.args();
  }
  if (m.qk_norm) a += ", qk_norm=1";
  if (m.qk_norm_weight) a += ", qk_norm_weight=1, qk_eps=" + eps_arg(m);
  if (m.qk_norm_weight && m.norm_offset) a += ", qk_offset=1";
  if (m.qk_norm_whole) a += ", qk_whole=1";
  if (head_width(m) * m.n_head != m.n_embd) a += ", head_dim=" + std::to_string(head_width(m));
  if (local && m.sliding_window > 0) a += ", window=" + std::to_string(m.sliding_window);
  if (m.attn_softcap > 0) a += ", softcap=" + float_arg_text(m.attn_softcap);
  if (m.attention_multiplier > 0)  // (Granite's: scores times it, q . k / sqrt(1 / m^2))
    a += ", query_scalar=" + float_arg_text(1 / (m.attention_multiplier * m.attention_multiplier));
  else if (m.query_pre_attn_scalar > 0 && m.query_pre_attn_scalar != static_cast<double>(head_width(m)))
    a += ", query_scalar=" + float_arg_text(m.query_pre_attn_scalar);
  return a;
}
}  // namespace

std::string llama_layers(const ModelConfig& m) {
  HPCT_CHECK(m.vocab_size > 0 && m.n_layer > 0 && m.n_head > 0, "llama_layers: vocab_size resolved, dimensions set");
  char s[32];
  std::snprintf(s, sizeof(s), "%.5g", 0.02 / std::sqrt(2.0 * static_cast<double>(m.n_layer)));
  const std::string c = std::to_string(m.n_embd), v = std::to_string(m.vocab_size);
  const std::string proj_std = m.zero_init ? "0" : s;
  std::string norm_args;
  if (eps_arg(m) != "5") norm_args += "eps=" + eps_arg(m);
  if (m.norm_offset) norm_args += std::string(norm_args.empty() ? "" : ", ") + "offset=1";
  const std::string norm = norm_args.empty() ? "rmsnorm" : "rmsnorm(" + norm_args + ")";
  const std::string down = "mlp.down:linear(" + c + ", bias=0, std=" + proj_std + ", tp=row)";
  const std::string mlp =
      m.mlp == Mlp::relu2 ? "mlp.up:linear(" + std::to_string(m.ffn_dim) + ", bias=0, tp=column) relu2 " + down
                          : "mlp.gate_up:linear(" + std::to_string(2 * m.ffn_dim) + ", bias=0, tp=column, parts=2) " +
                                (m.mlp == Mlp::geglu ? "geglu " : "swiglu ") + down;
  // Named after Hugging Face's LlamaForCausalLM (Gemma2/3ForCausalLM's with sandwich_norm, Olmo2's with post_norm)
  // where a name carries over; h: "h.{}" in repeat(), else the layer's name.
  // (Granite's residual_multiplier: each sublayer's output scaled before its residual add)
  const std::string end = m.residual_multiplier > 0 ? " scale(" + float_arg_text(m.residual_multiplier) + "))" : ")";
  auto block = [&](const std::string& h, const std::string& attention_args) {
    const std::string attention = "self_attn:attention(" + attention_args + ", proj_std=" + proj_std + ")";
    if (m.sandwich_norm)
      return h + ":res(input_layernorm:" + norm + " " + attention + " post_attention_layernorm:" + norm + end + " " +
             h + ":res(pre_feedforward_layernorm:" + norm + " " + mlp + " post_feedforward_layernorm:" + norm + end;
    if (m.post_norm)  // (OLMo 2's)
      return h + ":res(" + attention + " post_attention_layernorm:" + norm + end + " " + h + ":res(" + mlp +
             " post_feedforward_layernorm:" + norm + end;
    return h + ":res(input_layernorm:" + norm + " " + attention + end + " " + h +
           ":res(post_attention_layernorm:" + norm + " " + mlp + end;
  };
  std::string layers;
  if (m.global_every > 0 || m.no_rope_every > 0) {  // (the layers differ: each written out)
    for (std::int64_t i = 0; i < m.n_layer; ++i)
      layers += (i ? " " : "") + block("h." + std::to_string(i), llama_attention_args(m, i));
  } else {
    layers = "repeat(" + std::to_string(m.n_layer) + ", " + block("h.{}", llama_attention_args(m, 0)) + ")";
  }
  char root[32];  // (Gemma's normalizer: sqrt(n_embd) rounded to float32, printed to round-trip)
  std::snprintf(root, sizeof(root), "%.9g",
                static_cast<double>(static_cast<float>(std::sqrt(static_cast<double>(m.n_embd)))));
  const std::string embed_mult =
      m.embedding_multiplier > 0 ? " scale(" + float_arg_text(m.embedding_multiplier) + ")" : "";
  const std::string logits = m.logits_scaling > 0 ? " scale(" + float_arg_text(1 / m.logits_scaling) + ")" : "";
  return "tok_emb:embedding(" + v + ", " + c + ")" + (m.embed_scale ? std::string(" scale(") + root + ")" : "") +
         embed_mult + " " + layers + " norm:" + norm + logits + " lm_head:lm_head(" + v +
         (m.tie_embeddings ? "" : ", tie=0") +
         (m.final_softcap > 0 ? ", softcap=" + float_arg_text(m.final_softcap) : "") + ")";
}

std::string arch_layers(const ModelConfig& m) {
  HPCT_CHECK(m.arch != Arch::layers, "arch_layers: a typed architecture");
  return m.arch == Arch::llama ? llama_layers(m) : gpt_layers(m);
}

double gpt_flops_per_token(std::int64_t parameters, std::int64_t n_layer, std::int64_t n_embd, double span) {
  return 6.0 * static_cast<double>(parameters) +
         12.0 * static_cast<double>(n_layer) * static_cast<double>(n_embd) * span;
}

double gpt_activation_bytes(const ModelConfig& m, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                            bool half, ActivationSplit split) {
  const double n = static_cast<double>(rows * context), c = static_cast<double>(m.n_embd);
  const double l = static_cast<double>(m.n_layer), s = half ? 2 : 4;
  const double t = static_cast<double>(context), tp = split.tp, sp = split.sequence ? tp : 1;
  const double saved = l * (12 / tp + 4 / sp) * n * c * s + l * static_cast<double>(rows * m.n_head) / tp * t * 4 +
                       (4 * l + 2) * n * 4 / sp;
  const double outputs = (3 + 2 * l) * n * c * s / sp + n * static_cast<double>(padded_vocab) / tp * 4;
  return saved + outputs;
}

double llama_activation_bytes(const ModelConfig& m, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                              bool half, ActivationSplit split) {
  const double n = static_cast<double>(rows * context), c = static_cast<double>(m.n_embd);
  const double l = static_cast<double>(m.n_layer), s = half ? 2 : 4;
  const double tp = split.tp, sp = split.sequence ? tp : 1;
  const std::int64_t kv = m.n_kv_heads ? m.n_kv_heads : m.n_head;
  const double q = static_cast<double>((m.n_head + 2 * kv) * head_width(m));
  const double hd = static_cast<double>(m.n_head * head_width(m));  // (the heads' output)
  const double mlp = static_cast<double>((m.mlp == Mlp::relu2 ? 2 : 3) * m.ffn_dim);
  double saved = l * ((hd + q + mlp) / tp + 4 * c / sp) * n * s + l * n * static_cast<double>(m.n_head) / tp * 4 +
                 (2 * l + 1) * n * 4 / sp;
  if (m.qk_norm) saved += l * n * static_cast<double>(m.qk_norm_whole ? 2 : m.n_head + kv) / tp * 4;
  if (m.qk_norm_weight) saved += l * n * static_cast<double>((m.n_head + kv) * head_width(m)) / tp * 4;
  double outputs = (2 + 2 * l) * n * c * s / sp + n * static_cast<double>(padded_vocab) / tp * 4;
  if (m.embed_scale) outputs += n * c * s / sp;
  if (m.sandwich_norm) outputs += l * (2 * n * c * s + 2 * n * 4) / sp;
  outputs +=
      ((m.embedding_multiplier > 0) + (m.logits_scaling > 0) + (m.residual_multiplier > 0) * 2 * l) * n * c * s / sp;
  return saved + outputs;
}

}  // namespace hpctrain
