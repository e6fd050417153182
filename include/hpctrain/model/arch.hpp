// Typed architectures ([model] arch): a network named by its dimensions. Each builds a layers
// string of the model grammar (layers/registry.hpp), so an architecture and that string are one
// network: the same tensors, initial values and losses (tests/unit/test_arch.cpp, tests/e2e/gpt.sh).
// Adding an architecture: docs/contributing.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/config/rope_scaling.hpp"

namespace hpctrain {

// GPT-2 / nanoGPT's decoder.
struct GptDims {
  std::int64_t n_layer = 0, n_head = 0, n_embd = 0, vocab_size = 0;
  bool bias = true, tie_embeddings = true, gelu_tanh = false;  // gelu_tanh: GPT-2's gelu_new in the MLP
  int dropout_percent = 0;  // after the embeddings, on attention's probabilities, ending each residual branch
};

// Token and position embeddings (then dropout), n_layer pairs of pre-norm residual blocks
// (attention with n_head heads; a 4 x n_embd GELU MLP), a final layer norm and the head (tied to
// the token embedding unless tie_embeddings = false). The two projections into the residual
// stream start with std 0.02 / sqrt(2 n_layer) (GPT-2's scaled initialization), written to 5
// significant digits as the decks in inputs/ write it.
std::string gpt_layers(const GptDims& d);

// A Llama decoder (Llama 2/3, as Hugging Face's LlamaForCausalLM computes it): the token embedding,
// n_layer pairs of pre-norm residual blocks (RMS norm, attention with n_kv_heads key/value heads
// (0: n_head), rotary positions of base rope_theta scaled by rope_scaling (config/rope_scaling.hpp)
// and no biases (qkv_bias: Qwen2's); RMS norm, a SwiGLU MLP of ffn_dim with gate and up fused in one linear), a final
// RMS norm and the head, tied unless tie_embeddings = false. The projections into the residual
// stream start with std 0.02 / sqrt(2 n_layer) as GPT-2's (zero_init: at zero, modded-nanogpt's);
// norm_eps = 10^-norm_eps_exp. modded-nanogpt's options: qk_norm (queries and keys RMS-normalized
// per head), relu2 (a relu(x)^2 MLP of ffn_dim instead of SwiGLU). qkv_bias: Qwen2's biases on the
// query, key and value projections (none on the output projection). Gemma's options below.
struct LlamaDims {
  std::int64_t n_layer = 0, n_head = 0, n_embd = 0, vocab_size = 0, ffn_dim = 0, rope_theta = 10000, n_kv_heads = 0;
  RopeScaling rope_scaling;        // llama3's (Llama 3), linear's (Gemma 3 4B-27B), longrope's (Phi-3.5), yarn's
  std::int64_t rope_dims = 0;      // Phi-4 mini's partial rotary: each head's first rope_dims columns rotate; 0: all
  std::int64_t no_rope_every = 0;  // SmolLM3's: layer i has no rotary positions when (i + 1) % it == 0; 0: none
  int norm_eps_exp = 5;
  bool tie_embeddings = true, qk_norm = false, relu2 = false, zero_init = false, qkv_bias = false;
  bool qk_norm_weight = false;  // Qwen3's: qk_norm with learned weights, eps 10^-norm_eps_exp
  bool qk_norm_whole = false;   // OLMo 2's: that norm over all of a position's query (key) heads at once
  bool post_norm = false;       // OLMo 2's: a norm after attention and after the MLP, none before
  std::int64_t head_dim = 0;    // a head's columns; 0 = n_embd / n_head
  // Gemma's: a GeGLU MLP (gelu_tanh(gate) * up); RMS norms (QK-norms too) scaling by 1 + weight; the
  // token embeddings times sqrt(n_embd) (float32-rounded, as Hugging Face's normalizer); with
  // sandwich_norm (Gemma 2, 3) a norm after attention and after the MLP too, before each residual
  // add. The local layers: every layer but each global_every-th (layer i with (i + 1) % global_every
  // == 0; every layer without global_every): with rope_local_theta (Gemma 3) they rotate with it and
  // no rope scaling, with sliding_window (Mistral, Gemma 3) they attend over the last that many positions.
  bool geglu = false, norm_offset = false, embed_scale = false, sandwich_norm = false;
  std::int64_t rope_local_theta = 0, global_every = 0, sliding_window = 0;
  double attn_softcap = 0, final_softcap = 0;  // Gemma 2's: scores and logits x -> cap tanh(x / cap); 0: none
  double query_scalar = 0;                     // Gemma 2's query_pre_attn_scalar: scores / sqrt(it); 0: head width
  // IBM Granite's (modeling_granite.py; 0: none): the embeddings times embed_mult, each sublayer's output
  // times residual_mult before its residual add, scores q . k times attention_mult (in place of
  // query_scalar's), the logits divided by logits_scaling.
  double embed_mult = 0, residual_mult = 0, attention_mult = 0, logits_scaling = 0;
  std::int64_t head_width() const { return head_dim ? head_dim : n_embd / n_head; }
};
std::string llama_layers(const LlamaDims& d);

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
double gpt_activation_bytes(const GptDims& d, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
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
double llama_activation_bytes(const LlamaDims& d, std::int64_t rows, std::int64_t context, std::int64_t padded_vocab,
                              bool half, ActivationSplit split = {});

}  // namespace hpctrain
