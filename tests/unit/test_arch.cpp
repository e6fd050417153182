// Typed architectures (model/arch.hpp): arch = gpt builds the layers string the example decks
// write by hand, character for character, so it is the same network (tests/e2e/gpt.sh trains both
// and compares losses and parameters). Stated criterion: the baby GPT of inputs/shakespeare_gpt.ini
// and the GPU deck of inputs/shakespeare_gpt_gpu.ini; biases and an untied head spelled as the
// layers take them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "hpctrain/config/config.hpp"
#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/model/arch.hpp"

using namespace hpctrain;

namespace {
ModelConfig dims(std::int64_t n_layer, std::int64_t n_head, std::int64_t n_embd, std::int64_t vocab, bool bias) {
  ModelConfig d;
  d.n_layer = n_layer;
  d.n_head = n_head;
  d.n_embd = n_embd;
  d.vocab_size = vocab;
  d.bias = bias;
  return d;
}
}  // namespace

TEST(Arch, GptIsTheBabyDecksLayersString) {
  EXPECT_EQ(gpt_layers(dims(4, 4, 128, 65, false)),
            "tok_emb:embedding(65, 128) pos_emb:position_embedding repeat(4, h.{}:res(ln_1:layernorm(bias=0) "
            "attn:attention(4, bias=0, proj_std=0.0070711)) h.{}:res(ln_2:layernorm(bias=0) mlp.fc:linear(512, bias=0, "
            "tp=column) "
            "gelu mlp.proj:linear(128, bias=0, std=0.0070711, tp=row))) ln_f:layernorm(bias=0) lm_head:lm_head(65)");
}

TEST(Arch, GptIsTheGpuDecksLayersString) {
  ModelConfig d = dims(6, 6, 384, 65, false);
  d.dropout = 0.2;
  EXPECT_EQ(
      gpt_layers(d),
      "tok_emb:embedding(65, 384) pos_emb:position_embedding dropout(20) repeat(6, h.{}:res(ln_1:layernorm(bias=0) "
      "attn:attention(6, bias=0, dropout=20, proj_std=0.0057735) dropout(20)) h.{}:res(ln_2:layernorm(bias=0) "
      "mlp.fc:linear(1536, bias=0, tp=column) gelu mlp.proj:linear(384, bias=0, std=0.0057735, tp=row) dropout(20))) "
      "ln_f:layernorm(bias=0) lm_head:lm_head(65)");
}

TEST(Arch, GptWithBiasesAndAnUntiedHead) {
  ModelConfig d = dims(2, 2, 8, 11, true);
  d.tie_embeddings = false;
  EXPECT_EQ(gpt_layers(d),
            "tok_emb:embedding(11, 8) pos_emb:position_embedding repeat(2, h.{}:res(ln_1:layernorm attn:attention(2, "
            "proj_std=0.01)) h.{}:res(ln_2:layernorm mlp.fc:linear(32, tp=column) gelu mlp.proj:linear(8, std=0.01, "
            "tp=row))) "
            "ln_f:layernorm lm_head:lm_head(11, tie=0)");
}

// GPT-2's own MLP activation ([model] activation = gelu_tanh: gelu_new), as --import-hf builds it.
TEST(Arch, GptWithGpt2sGeluNew) {
  ModelConfig d = dims(2, 2, 8, 11, true);
  d.activation = GptActivation::gelu_tanh;
  EXPECT_EQ(gpt_layers(d),
            "tok_emb:embedding(11, 8) pos_emb:position_embedding repeat(2, h.{}:res(ln_1:layernorm attn:attention(2, "
            "proj_std=0.01)) h.{}:res(ln_2:layernorm mlp.fc:linear(32, tp=column) gelu_tanh mlp.proj:linear(8, "
            "std=0.01, tp=row))) "
            "ln_f:layernorm lm_head:lm_head(11)");
}

// arch = llama: the pieces checked against PyTorch in tests/e2e/gpt_reference.sh (RMS norms,
// attention with RoPE and no biases, a SwiGLU MLP with gate|up fused), named after Hugging Face's
// LlamaForCausalLM; norm_eps 1e-6 becomes rmsnorm(eps=6); the untied head says tie=0.
TEST(Arch, LlamaLayers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 2, d.n_embd = 32, d.vocab_size = 50257, d.ffn_dim = 48, d.rope_theta = 500000;
  EXPECT_EQ(llama_layers(d),
            "tok_emb:embedding(50257, 32) repeat(2, h.{}:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, "
            "rope=500000, proj_std=0.01)) h.{}:res(post_attention_layernorm:rmsnorm mlp.gate_up:linear(96, bias=0, "
            "tp=column, parts=2) "
            "swiglu mlp.down:linear(32, bias=0, std=0.01, tp=row))) norm:rmsnorm lm_head:lm_head(50257)");
  d.norm_eps = 1e-6;
  d.tie_embeddings = false;
  const std::string untied = llama_layers(d);
  EXPECT_NE(untied.find("input_layernorm:rmsnorm(eps=6) "), std::string::npos) << untied;
  ModelConfig glm = d;  // (an epsilon no power of ten, GLM-4 9B's: written itself, the float to its last bit)
  glm.norm_eps = 1.5625e-07, glm.qk_norm = glm.qk_norm_weight = true;
  char eps[32];
  std::snprintf(eps, sizeof(eps), "%.9g", static_cast<double>(1.5625e-07f));
  const std::string odd = llama_layers(glm);
  EXPECT_NE(odd.find("input_layernorm:rmsnorm(eps=" + std::string(eps) + ") "), std::string::npos) << odd;
  EXPECT_NE(odd.find("qk_eps=" + std::string(eps) + ","), std::string::npos) << odd;
  EXPECT_EQ(std::stof(eps), 1.5625e-07f);
  const std::string tail = "norm:rmsnorm(eps=6) lm_head:lm_head(50257, tie=0)";
  EXPECT_EQ(untied.substr(untied.size() - tail.size()), tail);
  // Grouped-query attention, Llama 3's rope_scaling, and modded-nanogpt's options.
  d.n_kv_heads = 1, d.rope_scaling = rope_scaling_of("llama3(32, 1, 4, 8192)"), d.qk_norm = true, d.mlp = Mlp::relu2;
  d.zero_init = true;
  const std::string modern = llama_layers(d);
  EXPECT_NE(modern.find("self_attn:attention(2, kv_heads=1, bias=0, rope=500000, rope_factor=32, rope_low=1, "
                        "rope_high=4, rope_context=8192, qk_norm=1, proj_std=0)"),
            std::string::npos)
      << modern;
  EXPECT_NE(modern.find("mlp.up:linear(48, bias=0, tp=column) relu2 mlp.down:linear(32, bias=0, std=0, tp=row)"),
            std::string::npos)
      << modern;
}

// Gemma 3's: the embeddings scaled by float32 sqrt(32), norms by 1 + weight after both sublayers too,
// a GeGLU MLP, the weighted QK-norm by 1 + weight, and layers written out: layer 1 (every 2nd) global
// with rope_theta and its scaling, layer 0 local with rope_local_theta and none.
TEST(Arch, GemmaLayers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 2, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48, d.rope_theta = 1000000;
  d.norm_eps = 1e-6, d.rope_scaling = rope_scaling_of("llama3(8, 1, 4, 32)"), d.qk_norm = d.qk_norm_weight = true,
  d.mlp = Mlp::geglu;
  d.norm_offset = d.embed_scale = d.sandwich_norm = true, d.rope_local_theta = 10000, d.global_every = 2;
  const std::string norm = "rmsnorm(eps=6, offset=1)", attention = "self_attn:attention(2, bias=0, rope=";
  const std::string qk = ", qk_norm=1, qk_norm_weight=1, qk_eps=6, qk_offset=1, proj_std=0.01)";
  const std::string mlp =
      "mlp.gate_up:linear(96, bias=0, tp=column, parts=2) geglu mlp.down:linear(32, bias=0, "
      "std=0.01, tp=row)";
  auto layer = [&](int i, const std::string& rope) {
    const std::string h = "h." + std::to_string(i);
    return h + ":res(input_layernorm:" + norm + " " + attention + rope + qk + " post_attention_layernorm:" + norm +
           ") " + h + ":res(pre_feedforward_layernorm:" + norm + " " + mlp + " post_feedforward_layernorm:" + norm +
           ")";
  };
  EXPECT_EQ(llama_layers(d), "tok_emb:embedding(300, 32) scale(5.65685415) " + layer(0, "10000") + " " +
                                 layer(1, "1000000, rope_factor=8, rope_low=1, rope_high=4, rope_context=32") +
                                 " norm:" + norm + " lm_head:lm_head(300)");
  EXPECT_EQ(static_cast<float>(std::stod("5.65685415")), static_cast<float>(std::sqrt(32.0)));
}

// Phi-4 mini's kind: the first 6 of 8 columns rotate, Phi-3.5 mini's longrope factors (each to its
// last bit), context and amplitude on every rotating layer; a NoPE layer takes none of them.
TEST(Arch, PartialRotaryAndLongrope) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 4, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48, d.rope_theta = 10000;
  d.rope_dims = 6, d.rope_scaling = rope_scaling_of("longrope(32, 1.25, 1 1.5 0.1, 1.25 4 9)");
  d.no_rope_every = 2;
  const std::string layers = llama_layers(d);
  EXPECT_NE(layers.find("h.0:res(input_layernorm:rmsnorm self_attn:attention(4, bias=0, rope=10000, rope_dims=6, "
                        "rope_context=32, "
                        "rope_short=1:1.5:0.10000000000000001, rope_long=1.25:4:9, rope_amp=1.25, proj_std"),
            std::string::npos)
      << layers;
  EXPECT_NE(layers.find("h.1:res(input_layernorm:rmsnorm self_attn:attention(4, bias=0, proj_std"), std::string::npos)
      << layers;
}

// yarn on the rotating layers: its factor, bounds, context and amplitude; TRUNCATE 0 written, 1 left out.
TEST(Arch, Yarn) {
  ModelConfig d;
  d.n_layer = 1, d.n_head = 2, d.n_embd = 16, d.vocab_size = 300, d.ffn_dim = 32, d.rope_theta = 1000000;
  d.rope_scaling = rope_scaling_of("yarn(4, 32768, 1.25, 32, 1)");
  EXPECT_NE(llama_layers(d).find("attention(2, bias=0, rope=1000000, rope_context=32768, rope_yarn=4, "
                                 "rope_beta_fast=32, rope_beta_slow=1, rope_amp=1.25, proj_std"),
            std::string::npos)
      << llama_layers(d);
  d.rope_scaling = rope_scaling_of("yarn(4, 32768, 1.25, 32, 1, 0)");
  EXPECT_NE(llama_layers(d).find("rope_beta_slow=1, rope_truncate=0, rope_amp=1.25"), std::string::npos);
}

// IBM Granite's multipliers: scale layers after the embedding, at the end of each residual branch and
// before the head (1 / logits_scaling), the scores' scale as query_scalar = 1 / m^2.
TEST(Arch, GraniteMultipliers) {
  ModelConfig d;
  d.n_layer = 1, d.n_head = 2, d.n_embd = 16, d.vocab_size = 300, d.ffn_dim = 32, d.rope_theta = 10000;
  d.embedding_multiplier = 12, d.residual_multiplier = 0.22, d.attention_multiplier = 0.0625, d.logits_scaling = 16;
  const std::string layers = llama_layers(d);
  EXPECT_EQ(
      layers.rfind("tok_emb:embedding(300, 16) scale(12) repeat(1, h.{}:res(input_layernorm:rmsnorm "
                   "self_attn:attention(2, bias=0, rope=10000, query_scalar=256, proj_std=0.014142) scale(0.22)) ",
                   0),
      0u)
      << layers;
  EXPECT_NE(layers.find("mlp.down:linear(16, bias=0, std=0.014142, tp=row) scale(0.22)))"), std::string::npos)
      << layers;
  EXPECT_NE(layers.find(" norm:rmsnorm scale(0.0625) lm_head:lm_head(300)"), std::string::npos) << layers;
}

// Linear rope scaling (Gemma 3 4B-27B's linear(8)) on the global layer only: the local one rotates
// with its own base, unscaled, as Hugging Face's Gemma 3.
TEST(Arch, LinearRopeScalingOnTheGlobalLayers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 2, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48, d.rope_theta = 1000000;
  d.rope_scaling = rope_scaling_of("linear(8)"), d.rope_local_theta = 10000, d.global_every = 2;
  const std::string layers = llama_layers(d);
  EXPECT_NE(layers.find("attention(2, bias=0, rope=10000, proj_std"), std::string::npos) << layers;
  EXPECT_NE(layers.find("attention(2, bias=0, rope=1000000, rope_linear=8, proj_std"), std::string::npos) << layers;
}

// SmolLM3's NoPE layers: every 2nd layer without rotary positions (no rope=, so none), the layers
// written out.
TEST(Arch, NoRopeLayers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 2, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48, d.no_rope_every = 2;
  const std::string layers = llama_layers(d);
  EXPECT_NE(layers.find("h.0:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, rope=10000, proj_std"),
            std::string::npos)
      << layers;
  EXPECT_NE(layers.find("h.1:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, proj_std"), std::string::npos)
      << layers;
  EXPECT_EQ(layers.find("repeat("), std::string::npos) << layers;
}

// OLMo 2's: no norm before the sublayers, one after each inside its residual branch, and the
// weighted QK-norm over all of a position's heads (qk_whole).
TEST(Arch, Olmo2Layers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 4, d.n_kv_heads = 2, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48;
  d.norm_eps = 1e-6, d.tie_embeddings = false, d.qk_norm = d.qk_norm_weight = d.qk_norm_whole = d.post_norm = true;
  EXPECT_EQ(
      llama_layers(d),
      "tok_emb:embedding(300, 32) repeat(2, h.{}:res(self_attn:attention(4, kv_heads=2, bias=0, rope=10000, "
      "qk_norm=1, qk_norm_weight=1, qk_eps=6, qk_whole=1, proj_std=0.01) post_attention_layernorm:rmsnorm(eps=6)) "
      "h.{}:res(mlp.gate_up:linear(96, bias=0, tp=column, parts=2) swiglu mlp.down:linear(32, bias=0, std=0.01, "
      "tp=row) post_feedforward_layernorm:rmsnorm(eps=6))) norm:rmsnorm(eps=6) lm_head:lm_head(300, tie=0)");
}

// sliding_window: with global_every on the local layers only (Gemma 3's: written out, layer 1 global
// without one); without it on every layer (Mistral's: one repeat body); none without the key.
TEST(Arch, SlidingWindowLayers) {
  ModelConfig d;
  d.n_layer = 2, d.n_head = 2, d.n_embd = 32, d.vocab_size = 300, d.ffn_dim = 48;
  EXPECT_EQ(llama_layers(d).find("window="), std::string::npos);
  d.sliding_window = 16;
  const std::string every = llama_layers(d);
  EXPECT_NE(every.find("repeat(2, h.{}:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, rope=10000, "
                       "window=16, proj_std=0.01)"),
            std::string::npos)
      << every;
  d.global_every = 2;
  const std::string local = llama_layers(d);
  EXPECT_NE(local.find("h.0:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, rope=10000, window=16, "),
            std::string::npos)
      << local;
  EXPECT_NE(local.find("h.1:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, rope=10000, proj_std"),
            std::string::npos)
      << local;
  // FLOPs per token count min(T, W) positions on the windowed layers: (1 x 64 + 1 x 16) / 2 = 40.
  ModelConfig m;
  m.n_layer = 2, m.sliding_window = 16, m.global_every = 2;
  EXPECT_EQ(m.attention_span(64), 40.0);
  EXPECT_EQ(m.attention_span(8), 8.0);  // (shorter than the window: every layer sees all)
  m.global_every = 0;
  EXPECT_EQ(m.attention_span(64), 16.0);
  m.sliding_window = 0;
  EXPECT_EQ(m.attention_span(64), 64.0);
  // Gemma 2's soft-caps: every attention's scores, the head's logits.
  d.attn_softcap = 50, d.final_softcap = 30.5;
  const std::string capped = llama_layers(d);
  EXPECT_NE(capped.find("h.1:res(input_layernorm:rmsnorm self_attn:attention(2, bias=0, rope=10000, softcap=50, "),
            std::string::npos)
      << capped;
  EXPECT_NE(capped.find("lm_head:lm_head(300, softcap=30.5)"), std::string::npos) << capped;
}

// The activation estimate against runs of this build measured 2026-12-04, fused attention (summary.json's
// activation_bytes_per_rank; the runs keep a few bytes more, under 64): fp32 and bf16, one and
// two layers, T = 16 and 32. (tests/e2e/token_streaming.sh checks it against a live run.)
TEST(Arch, GptActivationBytesMatchMeasuredRuns) {
  struct Run {
    std::int64_t layers, heads, width, context, rows;
    bool half;
    double measured;
  };
  const Run runs[] = {{1, 2, 32, 16, 4, false, 13051900}, {2, 2, 32, 16, 4, false, 13200900},
                      {1, 2, 32, 16, 8, false, 26103800}, {1, 2, 32, 32, 4, false, 26103800},
                      {1, 4, 32, 16, 4, false, 13052400}, {1, 2, 64, 16, 4, false, 13223900},
                      {2, 2, 32, 16, 4, true, 13041200},  {1, 2, 64, 32, 8, true, 52207600}};
  for (const Run& r : runs) {
    ModelConfig d;
    d.n_layer = r.layers, d.n_head = r.heads, d.n_embd = r.width;
    const double est = gpt_activation_bytes(d, r.rows, r.context, 50304, r.half);
    EXPECT_NEAR(est, r.measured, 64) << r.layers << " layers, " << r.heads << " heads, " << r.width << " wide, T "
                                     << r.context << ", " << r.rows << " rows" << (r.half ? ", bf16" : "");
  }
}

// llama_activation_bytes against runs of inputs/llama_small.ini's shape (4 heads on 2 key/value
// heads, 128 wide, SwiGLU 384, vocabulary padded to 50304) measured 2026-12-04 (summary.json's
// activation_bytes_per_rank, printed to 6 digits: within 64 bytes): one and two layers, T = 16
// and 32, 4 key/value heads, relu2 with QK-norm, bf16.
TEST(Arch, LlamaActivationBytesMatchMeasuredRuns) {
  struct Run {
    std::int64_t layers, kv, context, rows;
    bool relu2_qk_norm, half;
    double measured;
  };
  const Run runs[] = {{1, 2, 16, 4, false, false, 13535000}, {2, 2, 16, 4, false, false, 14126300},
                      {1, 2, 32, 4, false, false, 27070000}, {1, 4, 16, 4, false, false, 13567700},
                      {1, 2, 16, 4, true, false, 13438200},  {2, 2, 16, 4, false, true, 13503700},
                      {1, 2, 32, 8, true, true, 52638700}};
  for (const Run& r : runs) {
    ModelConfig d;
    d.n_layer = r.layers, d.n_head = 4, d.n_kv_heads = r.kv, d.n_embd = 128, d.ffn_dim = 384;
    d.qk_norm = r.relu2_qk_norm, d.mlp = r.relu2_qk_norm ? Mlp::relu2 : Mlp::swiglu;
    const double est = llama_activation_bytes(d, r.rows, r.context, 50304, r.half);
    EXPECT_NEAR(est, r.measured, 64) << r.layers << " layers, " << r.kv << " key/value heads, T " << r.context << ", "
                                     << r.rows << " rows" << (r.relu2_qk_norm ? ", relu2 + QK-norm" : "")
                                     << (r.half ? ", bf16" : "");
  }
}

// Gemma's options against runs measured 2026-12-07 (2 layers, 4 heads on 2 key/value heads, 128
// wide, SwiGLU/GeGLU 384, T = 16, 4 rows, the byte vocabulary (256); summary.json's
// activation_bytes_per_rank to 6 digits): Llama's, Gemma's (GeGLU, 1 + weight norms, scaled
// embeddings: one more [N, C] output) and Gemma 3's (also the norms after both sublayers and the
// weighted QK-norm with local layers); OLMo 2's (2026-12-07: norms after the sublayers only, the
// weighted QK-norm over all heads: `inputs/llama_small.ini --set model.n_layer=2 --set
// model.block_size=16 --set train.global_batch=4 --set train.loss_chunk=0` and its four keys).
TEST(Arch, GemmaActivationBytesMatchMeasuredRuns) {
  const double measured[] = {1314050, 1346820, 1580290, 1413380};
  for (int kind = 0; kind < 4; ++kind) {
    ModelConfig d;
    d.n_layer = 2, d.n_head = 4, d.n_kv_heads = 2, d.n_embd = 128, d.ffn_dim = 384;
    d.norm_offset = d.embed_scale = kind == 1 || kind == 2;
    if (d.norm_offset) d.mlp = Mlp::geglu;
    d.sandwich_norm = kind == 2;
    d.qk_norm = d.qk_norm_weight = kind > 1;
    d.qk_norm_whole = d.post_norm = kind == 3;
    if (kind == 2) d.rope_local_theta = 10000, d.global_every = 2;
    EXPECT_NEAR(llama_activation_bytes(d, 4, 16, 256, false), measured[kind], 64) << "kind " << kind;
  }
}

// With tensor and sequence parallelism: per-rank activation_bytes_per_rank of runs measured
// 2026-12-04 (2 layers, 4 heads, 128 wide, T = 32, 4 windows per rank, the character vocabulary
// padded to 128: inputs/llama_small.ini and its arch = gpt twin at 1, 2 and 4 ranks with
// tensor_parallel = ranks; printed to 6 digits: within 64 bytes).
TEST(Arch, ActivationBytesSplitByTensorAndSequenceParallelism) {
  struct Run {
    bool llama;
    int tp;
    bool sequence, half;
    double measured;
  };
  const Run runs[] = {
      {false, 1, false, false, 2630660}, {false, 2, false, false, 1809410}, {false, 2, true, false, 1315330},
      {false, 4, false, false, 1398780}, {false, 4, true, false, 657664},   {true, 1, false, false, 2562560},
      {true, 2, false, false, 1741310},  {true, 2, true, false, 1281280},   {true, 2, true, true, 661760}};
  for (const Run& r : runs) {
    const ActivationSplit split{r.tp, r.sequence};
    double est = 0;
    if (r.llama) {
      ModelConfig d;
      d.n_layer = 2, d.n_head = 4, d.n_kv_heads = 2, d.n_embd = 128, d.ffn_dim = 384;
      d.qk_norm = r.half;  // (the bf16 run has QK-norm on)
      est = llama_activation_bytes(d, 4, 32, 128, r.half, split);
    } else {
      ModelConfig d;
      d.n_layer = 2, d.n_head = 4, d.n_embd = 128;
      est = gpt_activation_bytes(d, 4, 32, 128, r.half, split);
    }
    EXPECT_NEAR(est, r.measured, 64) << (r.llama ? "llama" : "gpt") << ", tensor_parallel " << r.tp
                                     << (r.sequence ? ", sequence-parallel" : "") << (r.half ? ", bf16" : "");
  }
}
