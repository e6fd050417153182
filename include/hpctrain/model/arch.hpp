// Typed architectures ([model] arch): a network named by its dimensions. Each builds a layers
// string of the model grammar (layers/registry.hpp), so an architecture and that string are one
// network: the same tensors, initial values and losses (tests/unit/test_arch.cpp, tests/e2e/gpt.sh).
// Adding an architecture: docs/contributing.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"

namespace hpctrain {

// Each reads its dimensions from [model]'s keys (config/config.hpp ModelConfig, the keys
// docs/language-models.md lists), vocab_size resolved (> 0: train/architecture.cpp takes auto from
// the dataset, an import from config.json).

// GPT-2 / nanoGPT's decoder (arch = gpt): token and position embeddings (then dropout), n_layer
// pairs of pre-norm residual blocks (attention with n_head heads; a 4 x n_embd MLP, GELU or
// activation = gelu_tanh, GPT-2's gelu_new), a final layer norm and the head (tied to the token
// embedding unless tie_embeddings = false); biases unless bias = false; dropout (a whole percent)
// after the embeddings, on attention's probabilities and ending each residual branch. The two
// projections into the residual stream start with std 0.02 / sqrt(2 n_layer) (GPT-2's scaled
// initialization), written to 5 significant digits as the decks in inputs/ write it.
std::string gpt_layers(const ModelConfig& m);

// A Llama decoder (arch = llama; Llama 2/3 as Hugging Face's LlamaForCausalLM computes it): the
// token embedding, n_layer pairs of pre-norm residual blocks (RMS norm, attention with n_kv_heads
// key/value heads (0: n_head), rotary positions of base rope_theta scaled by rope_scaling
// (config/rope_scaling.hpp) on the first rope_dims columns of each head (0: all), no biases; RMS
// norm, a SwiGLU MLP of ffn_dim with gate and up fused in one linear), a final RMS norm and the head,
// tied unless tie_embeddings = false. The projections into the residual stream start with std 0.02
// / sqrt(2 n_layer) as GPT-2's (zero_init: at zero, modded-nanogpt's); norms of epsilon norm_eps.
// modded-nanogpt's options: qk_norm (queries and keys RMS-normalized per head), mlp = relu2 (a
// relu(x)^2 MLP of ffn_dim instead of SwiGLU). Qwen2's qkv_bias (biases on the query, key and value
// projections, none on the output projection); Qwen3's qk_norm_weight (that norm with learned
// weights, eps norm_eps); OLMo 2's qk_norm_whole (over all of a position's query (key) heads at
// once) and post_norm (a norm after attention and after the MLP, none before); SmolLM3's
// no_rope_every (layer i has no rotary positions when (i + 1) % it == 0); head_dim (a head's
// columns; 0: n_embd / n_head).
// Gemma's: mlp = geglu (gelu_tanh(gate) * up); norm_offset (RMS norms, QK-norms too, scaling by 1 +
// weight); embed_scale (the token embeddings times sqrt(n_embd), float32-rounded as Hugging Face's
// normalizer); with sandwich_norm (Gemma 2, 3) a norm after attention and after the MLP too, before
// each residual add. The local layers: every layer but each global_every-th (layer i with (i + 1) %
// global_every == 0; every layer without global_every): with rope_local_theta (Gemma 3) they rotate
// with it and no rope scaling, with sliding_window (Mistral, Gemma 3) they attend over the last that
// many positions. Gemma 2's attn_softcap and final_softcap (scores and logits x -> cap tanh(x / cap))
// and query_pre_attn_scalar (scores / sqrt(it); 0: the head width).
// IBM Granite's (modeling_granite.py; 0: none): the embeddings times embedding_multiplier, each
// sublayer's output times residual_multiplier before its residual add, scores q . k times
// attention_multiplier (in place of query_pre_attn_scalar's), the logits divided by logits_scaling.
std::string llama_layers(const ModelConfig& m);
// gpt_layers or llama_layers, as m.arch says (not arch = layers).
std::string arch_layers(const ModelConfig& m);

// Training FLOPs per token as llm.c and PaLM count them: 6 N (forward and backward through every
// parameter, embeddings included) + 12 n_layer n_embd T (attention's scores and weighted sums
// over a context of T; `span`: the positions attended over, on average over the layers, when
// sliding windows make it less than T: ModelConfig::attention_span).
double gpt_flops_per_token(std::int64_t parameters, std::int64_t n_layer, std::int64_t n_embd, double span);

// The activation memory of one micro-batch of `rows` windows of T tokens as this implementation
// keeps it for backward (summary.json's activation_bytes_per_rank: the saved tensors and the
// layers' outputs), without dropout and activation checkpointing; `half`: bf16/fp16 runs. With
// N = rows x T tokens and s = 4 bytes (2 when half):
//   saved   = n_layer 16 N n_embd s + n_layer rows n_head T 4 + (4 n_layer + 2) N 4   (fused
//             attention's log-sum-exp and the layer norms' statistics stay float32; no T x T)
//   outputs = (3 + 2 n_layer) N n_embd s + N padded_vocab 4                   (the logits in float32)
// Found by measuring runs of this build and checked against one by tests/e2e/token_streaming.sh.
// With tensor parallelism over T ranks (`split`, per rank): the tensors split by heads or by the
// MLP's features (q|k|v, the heads' output, the MLP's hidden 8 n_embd; the log-sum-exp) and the
// logits (vocabulary-parallel) are 1/T; the rest (the block's 4 n_embd of norms' and sublayers'
// outputs, the statistics, the model's outputs) is whole on every rank, or 1/T with
// sequence parallelism: saved = n_layer (12/T + 4/S) N n_embd s + ..., S = T with it, else 1.
struct ActivationSplit {
  int tp = 1;             // [parallel] tensor_parallel
  bool sequence = false;  // [parallel] sequence_parallel
};
double gpt_activation_bytes(const ModelConfig& m, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                            bool half, ActivationSplit split = {});
// The same for arch = llama, with q = (n_head + 2 n_kv_heads) head_dim (the fused q|k|v's width)
// and m = 3 ffn_dim (SwiGLU: gate|up, then its output) or 2 ffn_dim (relu2):
//   saved   = n_layer (5 n_embd + q + m) N s + n_layer rows n_head T 4 + (2 n_layer + 1) N 4
//             [+ n_layer N (n_head + n_kv_heads) 4 with qk_norm]   (RMS norms keep one statistic)
//             [+ n_layer N (n_head + n_kv_heads) D 4 with qk_norm_weight]   (the heads before it)
//   outputs = (2 + 2 n_layer) N n_embd s + N padded_vocab 4
//             [+ N n_embd s with embed_scale]   [+ n_layer (2 N n_embd s + 2 N 4) with sandwich_norm]
//   (qk_norm_whole: 2 statistics a position for n_head + n_kv_heads)
// Split as gpt_activation_bytes says: q, m, the heads' output n_embd, the log-sum-exp, the QK-norm
// statistics and the logits by T; the block's other 4 n_embd, the RMS statistics and the outputs
// by S.
double llama_activation_bytes(const ModelConfig& m, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                              bool half, ActivationSplit split = {});

}  // namespace hpctrain
