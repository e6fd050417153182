// [model]'s configuration keys (config/schema.hpp; the table's other sections: schema.cpp).
#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/core/error.hpp"
#include "schema_section.hpp"

namespace hpctrain::schema {

namespace {
// [model] rope_scaling: the text rope_scaling_of reads.
void check_rope_scaling(const std::string& v) {
  try {
    rope_scaling_of(v);
  } catch (const Error& e) {
    throw std::invalid_argument(e.what());
  }
}

// [model] dropout: a whole percent, as the layers string's dropout(p) takes it.
void check_whole_percent(const std::string& v) {
  const double percent = std::stod(v) * 100;
  if (std::fabs(percent - std::round(percent)) > 1e-9)
    throw std::invalid_argument("expected a whole percent (0.2 or 0.25, not 0.125)");
}

}  // namespace

void model_keys(std::vector<KeySpec>& k) {
  Section<ModelConfig> s(k, "model", &Config::model);
  s.key("layers", &ModelConfig::layers, "the layers in order, e.g. \"dense(128) relu dense(10)\"");
  s.key(
      "arch", &ModelConfig::arch,
      "the network: layers = the [model] layers string; gpt = GPT-2's decoder from n_layer, n_head, n_embd, "
      "vocab_size, bias, tie_embeddings, dropout; llama = a Llama decoder (RMS norms, rotary positions, SwiGLU, "
      "no biases but qkv_bias) from n_layer, n_head, n_embd, ffn_dim, rope_theta, norm_eps, vocab_size, tie_embeddings "
      "(docs/language-models.md)");
  s.key("n_layer", &ModelConfig::n_layer, "arch = gpt or llama: transformer blocks")
      .range(0, 1 << 20)
      .of_archs("gpt llama");
  s.key("n_head", &ModelConfig::n_head, "arch = gpt or llama: attention heads").range(0, 1 << 20).of_archs("gpt llama");
  s.key("n_embd", &ModelConfig::n_embd, "arch = gpt or llama: the width (a multiple of n_head)")
      .range(0, 1 << 20)
      .of_archs("gpt llama");
  s.auto_count(
       "vocab_size", &ModelConfig::vocab_size,
       "arch = gpt or llama: rows of the token embedding and head; auto = the token dataset's vocabulary (a number "
       "may be larger: rows no token uses, as Qwen2's checkpoints have; or smaller, down to one past the largest id "
       "the dataset's shards record, as Gemma 3 1B's for its tokenizer's <image_soft_token>)")
      .of_archs("gpt llama");
  s.key("bias", &ModelConfig::bias, "arch = gpt: biases in the linear layers and layer norms").of_archs("gpt");
  s.key("tie_embeddings", &ModelConfig::tie_embeddings,
        "arch = gpt or llama: the output head shares the token embedding's weight")
      .of_archs("gpt llama");
  s.key("activation", &ModelConfig::activation,
        "arch = gpt: the MLP's GELU, exact (gelu: nanoGPT's) or its tanh approximation (gelu_tanh: GPT-2's "
        "gelu_new, llm.c's)")
      .of_archs("gpt");
  KeySpec& dropout = s.key("dropout", &ModelConfig::dropout,
                           "arch = gpt: dropout probability after the embeddings, on attention's probabilities and at "
                           "the end of every residual branch (a whole percent, e.g. 0.2)")
                         .range(0, 0.99)
                         .of_archs("gpt");
  dropout.check = check_whole_percent;
  s.key("ffn_dim", &ModelConfig::ffn_dim, "arch = llama: the gated MLP's hidden width (Llama 3.2 1B: 8192)")
      .range(0, 1 << 24)
      .of_archs("llama");
  s.key("rope_theta", &ModelConfig::rope_theta,
        "arch = llama: rotary embeddings' base (Llama 3: 500000; Gemma 3: its global layers')")
      .range(1, kMaxCount)
      .of_archs("llama");
  s.key("norm_eps", &ModelConfig::norm_eps, "arch = llama: the RMS norms' epsilon (1e-5, 1e-6; GLM-4 9B's 1.5625e-07)")
      .range(1e-12, 0.1)
      .of_archs("llama");
  s.key("n_kv_heads", &ModelConfig::n_kv_heads,
        "arch = llama: key/value heads, dividing n_head (grouped-query attention; Llama 3.2 1B: 8); 0 = n_head")
      .range(0, 1 << 20)
      .of_archs("llama");
  KeySpec& scaling =
      s.key("rope_scaling", &ModelConfig::rope_scaling,
            "arch = llama: none, Llama 3's llama3(FACTOR, LOW, HIGH, CONTEXT) in whole numbers (Llama 3.2: "
            "llama3(32, 1, 4, 8192)): factor, low and high frequency factors, original context; linear(FACTOR), "
            "every frequency FACTOR times lower (Gemma 3 4B-27B: linear(8), on the global layers); or "
            "longrope(CONTEXT, AMPLITUDE, SHORT FACTORS, LONG FACTORS) (Phi-3.5 mini's: each rotated pair's "
            "frequency divided by its short factor, by its long one in passes past CONTEXT positions, the rotated "
            "columns times AMPLITUDE)")
          .of_archs("llama");
  scaling.check = check_rope_scaling;
  s.key("mlp", &ModelConfig::mlp,
        "arch = llama: swiglu (Llama's gated MLP of ffn_dim), geglu (Gemma's: gelu_tanh(gate) * up) or relu2 "
        "(modded-nanogpt's relu(x)^2 MLP of ffn_dim)")
      .of_archs("llama");
  s.key("qk_norm", &ModelConfig::qk_norm,
        "arch = llama: RMS-normalize every query and key head before the rotation (modded-nanogpt, OLMo 2)")
      .of_archs("llama");
  s.key("zero_init", &ModelConfig::zero_init,
        "arch = llama: the attention output and MLP down projections start at zero (modded-nanogpt)")
      .of_archs("llama");
  s.key("qk_norm_weight", &ModelConfig::qk_norm_weight,
        "arch = llama: with qk_norm, each query and key head's norm scaled by a learned weight of its width and "
        "its epsilon norm_eps (Qwen3's q_norm and k_norm)")
      .of_archs("llama");
  s.key("qk_norm_whole", &ModelConfig::qk_norm_whole,
        "arch = llama: with qk_norm_weight, a position's queries normalized together over all their heads (a "
        "weight of n_head x head width), likewise its keys (OLMo 2's q_norm and k_norm), not head by head")
      .of_archs("llama");
  s.key("head_dim", &ModelConfig::head_dim,
        "arch = llama: a head's columns when not n_embd / n_head (Qwen3 0.6B: 128 at n_embd 1024 with 16 heads); "
        "0 = n_embd / n_head")
      .range(0, 4096)
      .of_archs("llama");
  s.key("qkv_bias", &ModelConfig::qkv_bias,
        "arch = llama: biases on the query, key and value projections, none on the others (Qwen2, Qwen2.5)")
      .of_archs("llama");
  s.key("norm_offset", &ModelConfig::norm_offset,
        "arch = llama: the RMS norms (and weighted QK-norms) scale by 1 + weight, the weights starting at 0 (Gemma's)")
      .of_archs("llama");
  s.key("embed_scale", &ModelConfig::embed_scale,
        "arch = llama: the token embeddings times sqrt(n_embd), rounded to float32 (Gemma's)")
      .of_archs("llama");
  s.key("sandwich_norm", &ModelConfig::sandwich_norm,
        "arch = llama: a norm after attention and after the MLP too, before each residual add (Gemma 2 and 3)")
      .of_archs("llama");
  s.key("post_norm", &ModelConfig::post_norm,
        "arch = llama: the norms after attention and after the MLP, inside each residual branch, and none before "
        "them (OLMo 2's post_attention_layernorm and post_feedforward_layernorm)")
      .of_archs("llama");
  s.key("rope_local_theta", &ModelConfig::rope_local_theta,
        "arch = llama: with global_every, the rotary base of the local layers, every layer but each global_every-th "
        "(Gemma 3: 10000; those layers take no rope_scaling); 0 = none")
      .range(0, kMaxCount)
      .of_archs("llama");
  s.key("global_every", &ModelConfig::global_every,
        "arch = llama: with rope_local_theta or sliding_window, layer i is global (rope_theta, every position) when "
        "i + 1 is a multiple of this, the others local (Gemma 3: 6); 0 = every layer local")
      .range(0, 1 << 20)
      .of_archs("llama");
  s.key("no_rope_every", &ModelConfig::no_rope_every,
        "arch = llama: layer i has no rotary positions (a NoPE layer: causal attention alone tells positions apart) "
        "when i + 1 is a multiple of this (SmolLM3: 4); 0 = every layer rotates")
      .range(0, 1 << 20)
      .of_archs("llama");
  s.key("rope_dims", &ModelConfig::rope_dims,
        "arch = llama: only the first this many columns of each head rotate, the rest pass as they are (Phi-4 "
        "mini's partial_rotary_factor 0.75: 96 of 128); 0 = every column")
      .range(0, 4096)
      .of_archs("llama");
  s.key("attn_softcap", &ModelConfig::attn_softcap,
        "arch = llama: attention's scaled scores s become this x tanh(s / this) before the softmax (Gemma 2's "
        "attn_logit_softcapping, 50); 0 = none")
      .range(0, 1e6)
      .of_archs("llama");
  s.key("query_pre_attn_scalar", &ModelConfig::query_pre_attn_scalar,
        "arch = llama: attention's scores q . k are divided by the square root of this (Gemma 2's "
        "query_pre_attn_scalar: 144 in Gemma 2 27B, whose heads are 128 wide); 0 = the head width")
      .range(0, 1e9)
      .of_archs("llama");
  const auto granite = [&](const char* key, double ModelConfig::*field, const std::string& help) {
    const std::string text = "arch = llama: " + help + " (IBM Granite's " + key + "); 0 = none";
    s.key(key, field, text.c_str())  // (KeySpec copies it)
        .range(0, 1e6)
        .of_archs("llama");
  };
  granite("embedding_multiplier", &ModelConfig::embedding_multiplier, "the token embeddings times this (12 in 3.x)");
  granite("residual_multiplier", &ModelConfig::residual_multiplier,
          "each attention and MLP output times this before its residual add (0.22 in 3.x)");
  granite("attention_multiplier", &ModelConfig::attention_multiplier,
          "the scores q . k times this in place of 1 / sqrt(head width) (1/128 in 3.x 8B)");
  granite("logits_scaling", &ModelConfig::logits_scaling, "the logits divided by this (16 in 3.x 8B)");
  s.key("final_softcap", &ModelConfig::final_softcap,
        "arch = llama: the logits x become this x tanh(x / this) (Gemma 2's final_logit_softcapping, 30); 0 = none")
      .range(0, 1e6)
      .of_archs("llama");
  s.key("sliding_window", &ModelConfig::sliding_window,
        "arch = llama: the local layers' queries attend over the last this many positions, their own included "
        "(Hugging Face's sliding_window: Mistral 7B v0.1's 4096 on every layer, Gemma 3's 512 with global_every); "
        "0 = every earlier position")
      .range(0, 1 << 30)
      .of_archs("llama");
  s.key("attention_mask", &ModelConfig::attention_mask,
        "language models: causal, or document (no attention across the tokenizer's document separator, "
        "<|endoftext|>, in packed windows; needs fused attention: no attention dropout)");
  s.key("block_size", &ModelConfig::block_size,
        "token datasets: tokens per training window (the model's context length T); 0 for image datasets")
      .range(0, 1 << 20);
  s.key("groups", &ModelConfig::groups, "model-parallel layer groups: auto or explicit layer ranges");
  s.key("vocab_multiple", &ModelConfig::vocab_multiple,
        "embedding and lm_head rows padded up to a multiple of this (64: GPT-2's 50257 -> 50304); the padding is "
        "zero, never a token, and left out of --export")
      .range(1, 1 << 16);
}

}  // namespace hpctrain::schema
