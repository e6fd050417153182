// Implementation of model/arch.hpp.
#include "hpctrain/model/arch.hpp"

#include <cmath>
#include <cstdio>

#include "hpctrain/layers/rope.hpp"

namespace hpctrain {

std::string gpt_layers(const GptDims& d) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.5g", 0.02 / std::sqrt(2.0 * static_cast<double>(d.n_layer)));
  const std::string c = std::to_string(d.n_embd), v = std::to_string(d.vocab_size), proj_std(s);
  const std::string nobias = d.bias ? "" : ", bias=0", norm = d.bias ? "layernorm" : "layernorm(bias=0)";
  // Named as GPT-2's tensors are (Hugging Face's names map onto them by a table: docs/models.md).
  const std::string p = std::to_string(d.dropout_percent);
  const std::string drop = d.dropout_percent ? " dropout(" + p + ")" : "";
  const std::string attention = "attn:attention(" + std::to_string(d.n_head) + nobias +
                                (d.dropout_percent ? ", dropout=" + p : "") + ", proj_std=" + proj_std + ")";
  // (tp: how [parallel] tensor_parallel splits the pair, Megatron's column- then row-parallel)
  const std::string mlp = "mlp.fc:linear(" + std::to_string(4 * d.n_embd) + nobias + ", tp=column) " +
                          (d.gelu_tanh ? "gelu_tanh" : "gelu") + " mlp.proj:linear(" + c + nobias +
                          ", std=" + proj_std + ", tp=row)";
  return "tok_emb:embedding(" + v + ", " + c + ") pos_emb:position_embedding" + drop + " repeat(" +
         std::to_string(d.n_layer) + ", h.{}:res(ln_1:" + norm + " " + attention + drop + ") h.{}:res(ln_2:" + norm +
         " " + mlp + drop + ")) ln_f:" + norm + " lm_head:lm_head(" + v + (d.tie_embeddings ? "" : ", tie=0") + ")";
}

namespace {
// A layer argument that round-trips a float (Gemma 2's caps: "50").
std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.9g", v);
  return s;
}

// Layer i's attention arguments after the head count: biases, RoPE, QK-norm, head width.
std::string llama_attention_args(const LlamaDims& d, std::int64_t i) {
  std::string a = std::to_string(d.n_head);
  if (d.n_kv_heads && d.n_kv_heads != d.n_head) a += ", kv_heads=" + std::to_string(d.n_kv_heads);
  const bool local = d.global_every == 0 || (i + 1) % d.global_every != 0;  // (Gemma 3's sliding layers)
  const bool local_rope = local && d.rope_local_theta > 0;
  const bool nope = d.no_rope_every > 0 && (i + 1) % d.no_rope_every == 0;  // (SmolLM3's: no rotary positions)
  a += d.qkv_bias ? ", proj_bias=0" : ", bias=0";
  if (!nope) {
    Rotary r;
    r.theta = static_cast<double>(local_rope ? d.rope_local_theta : d.rope_theta), r.dims = d.rope_dims;
    if (!local_rope) r.scaling = d.rope_scaling;  // (Gemma 3's local layers scale nothing)
    a += ", " + r.args();
  }
  if (d.qk_norm) a += ", qk_norm=1";
  if (d.qk_norm_weight) a += ", qk_norm_weight=1, qk_eps=" + std::to_string(d.norm_eps_exp);
  if (d.qk_norm_weight && d.norm_offset) a += ", qk_offset=1";
  if (d.qk_norm_whole) a += ", qk_whole=1";
  if (d.head_width() * d.n_head != d.n_embd) a += ", head_dim=" + std::to_string(d.head_width());
  if (local && d.sliding_window > 0) a += ", window=" + std::to_string(d.sliding_window);
  if (d.attn_softcap > 0) a += ", softcap=" + number(d.attn_softcap);
  if (d.attention_mult > 0)  // (Granite's: scores times it, q . k / sqrt(1 / m^2))
    a += ", query_scalar=" + number(1 / (d.attention_mult * d.attention_mult));
  else if (d.query_scalar > 0 && d.query_scalar != static_cast<double>(d.head_width()))
    a += ", query_scalar=" + number(d.query_scalar);
  return a;
}
}  // namespace

std::string llama_layers(const LlamaDims& d) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.5g", 0.02 / std::sqrt(2.0 * static_cast<double>(d.n_layer)));
  const std::string c = std::to_string(d.n_embd), v = std::to_string(d.vocab_size);
  const std::string proj_std = d.zero_init ? "0" : s;
  std::string norm_args;
  if (d.norm_eps_exp != 5) norm_args += "eps=" + std::to_string(d.norm_eps_exp);
  if (d.norm_offset) norm_args += std::string(norm_args.empty() ? "" : ", ") + "offset=1";
  const std::string norm = norm_args.empty() ? "rmsnorm" : "rmsnorm(" + norm_args + ")";
  const std::string down = "mlp.down:linear(" + c + ", bias=0, std=" + proj_std + ", tp=row)";
  const std::string mlp = d.relu2 ? "mlp.up:linear(" + std::to_string(d.ffn_dim) + ", bias=0, tp=column) relu2 " + down
                                  : "mlp.gate_up:linear(" + std::to_string(2 * d.ffn_dim) +
                                        ", bias=0, tp=column, parts=2) " + (d.geglu ? "geglu " : "swiglu ") + down;
  // Named after Hugging Face's LlamaForCausalLM (Gemma2/3ForCausalLM's with sandwich_norm, Olmo2's with post_norm)
  // where a name carries over; h: "h.{}" in repeat(), else the layer's name.
  // (Granite's residual_multiplier: each sublayer's output scaled before its residual add)
  const std::string end = d.residual_mult > 0 ? " scale(" + number(d.residual_mult) + "))" : ")";
  auto block = [&](const std::string& h, const std::string& attention_args) {
    const std::string attention = "self_attn:attention(" + attention_args + ", proj_std=" + proj_std + ")";
    if (d.sandwich_norm)
      return h + ":res(input_layernorm:" + norm + " " + attention + " post_attention_layernorm:" + norm + end + " " +
             h + ":res(pre_feedforward_layernorm:" + norm + " " + mlp + " post_feedforward_layernorm:" + norm + end;
    if (d.post_norm)  // (OLMo 2's)
      return h + ":res(" + attention + " post_attention_layernorm:" + norm + end + " " + h + ":res(" + mlp +
             " post_feedforward_layernorm:" + norm + end;
    return h + ":res(input_layernorm:" + norm + " " + attention + end + " " + h +
           ":res(post_attention_layernorm:" + norm + " " + mlp + end;
  };
  std::string layers;
  if (d.global_every > 0 || d.no_rope_every > 0) {  // (the layers differ: each written out)
    for (std::int64_t i = 0; i < d.n_layer; ++i)
      layers += (i ? " " : "") + block("h." + std::to_string(i), llama_attention_args(d, i));
  } else {
    layers = "repeat(" + std::to_string(d.n_layer) + ", " + block("h.{}", llama_attention_args(d, 0)) + ")";
  }
  char root[32];  // (Gemma's normalizer: sqrt(n_embd) rounded to float32, printed to round-trip)
  std::snprintf(root, sizeof(root), "%.9g",
                static_cast<double>(static_cast<float>(std::sqrt(static_cast<double>(d.n_embd)))));
  const std::string embed_mult = d.embed_mult > 0 ? " scale(" + number(d.embed_mult) + ")" : "";
  const std::string logits = d.logits_scaling > 0 ? " scale(" + number(1 / d.logits_scaling) + ")" : "";
  return "tok_emb:embedding(" + v + ", " + c + ")" + (d.embed_scale ? std::string(" scale(") + root + ")" : "") +
         embed_mult + " " + layers + " norm:" + norm + logits + " lm_head:lm_head(" + v +
         (d.tie_embeddings ? "" : ", tie=0") + (d.final_softcap > 0 ? ", softcap=" + number(d.final_softcap) : "") +
         ")";
}

double gpt_flops_per_token(std::int64_t parameters, std::int64_t n_layer, std::int64_t n_embd, double span) {
  return 6.0 * static_cast<double>(parameters) +
         12.0 * static_cast<double>(n_layer) * static_cast<double>(n_embd) * span;
}

double gpt_activation_bytes(const GptDims& d, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                            bool half, ActivationSplit split) {
  const double n = static_cast<double>(rows * context), c = static_cast<double>(d.n_embd);
  const double l = static_cast<double>(d.n_layer), s = half ? 2 : 4;
  const double t = static_cast<double>(context), tp = split.tp, sp = split.sequence ? tp : 1;
  const double saved = l * (12 / tp + 4 / sp) * n * c * s + l * static_cast<double>(rows * d.n_head) / tp * t * 4 +
                       (4 * l + 2) * n * 4 / sp;
  const double outputs = (3 + 2 * l) * n * c * s / sp + n * static_cast<double>(padded_vocab) / tp * 4;
  return saved + outputs;
}

double llama_activation_bytes(const LlamaDims& d, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                              bool half, ActivationSplit split) {
  const double n = static_cast<double>(rows * context), c = static_cast<double>(d.n_embd);
  const double l = static_cast<double>(d.n_layer), s = half ? 2 : 4;
  const double tp = split.tp, sp = split.sequence ? tp : 1;
  const std::int64_t kv = d.n_kv_heads ? d.n_kv_heads : d.n_head;
  const double q = static_cast<double>((d.n_head + 2 * kv) * d.head_width());
  const double hd = static_cast<double>(d.n_head * d.head_width());  // (the heads' output)
  const double m = static_cast<double>((d.relu2 ? 2 : 3) * d.ffn_dim);
  double saved = l * ((hd + q + m) / tp + 4 * c / sp) * n * s + l * n * static_cast<double>(d.n_head) / tp * 4 +
                 (2 * l + 1) * n * 4 / sp;
  if (d.qk_norm) saved += l * n * static_cast<double>(d.qk_norm_whole ? 2 : d.n_head + kv) / tp * 4;
  if (d.qk_norm_weight) saved += l * n * static_cast<double>((d.n_head + kv) * d.head_width()) / tp * 4;
  double outputs = (2 + 2 * l) * n * c * s / sp + n * static_cast<double>(padded_vocab) / tp * 4;
  if (d.embed_scale) outputs += n * c * s / sp;
  if (d.sandwich_norm) outputs += l * (2 * n * c * s + 2 * n * 4) / sp;
  outputs += ((d.embed_mult > 0) + (d.logits_scaling > 0) + (d.residual_mult > 0) * 2 * l) * n * c * s / sp;
  return saved + outputs;
}

}  // namespace hpctrain
