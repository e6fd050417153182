// Model::activation_memory (the memory estimate's activation part, train/memory_estimate.hpp)
// against what a model takes in two training steps: an MLP with dropout, a CNN (im2col, batch
// norm, max pooling), a GPT with unfused attention and dropout, a Llama-style block (RMSNorm,
// grouped-query fused attention with RoPE and QK-norm), and a 3-D CNN, in float32 and bf16, with
// recompute = none and blocks. Stated criteria: the layers' outputs and what they keep are the
// bytes the model's sets hold, exactly; the scratch is the arena's high-water mark within 25%
// and not below it; and the parameter, gradient, copy and input buffers plus the estimate are the
// allocator's peak within 5%. With recompute = blocks what is kept is an upper bound (each distinct
// block's inner tensors; the recompute set reuses buffers across blocks) and the estimate is at
// least the peak and at most 15% over it (the bound for whole decks). Negative control: the
// same comparison with the layers' own account left out (the outputs alone) misses the CNN's and
// the GPT's saved tensors by more than 5%.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

struct Case {
  const char* name;
  const char* layers;
  Shape sample;
  std::int64_t tokens;  // > 0: token ids below it
};

struct Measured {
  double outputs = 0, saved = 0, scratch = 0, peak = 0, buffers = 0;
  Model::ActivationMemory est;
};

// `rows` samples of the case's input: token ids below c.tokens, else values uniform in [-1, 1).
Tensor case_input(const Case& c, std::int64_t rows, Allocator& alloc) {
  Shape batch{rows};
  batch.insert(batch.end(), c.sample.begin(), c.sample.end());
  Tensor x = Tensor::zeros(batch, alloc, c.tokens > 0 ? DType::i32 : DType::f32);
  const auto values = unittest::random_values(x.numel(), 17);
  if (c.tokens > 0) {
    std::vector<std::int32_t> ids(values.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = static_cast<std::int32_t>(
          static_cast<std::int64_t>((values[i] + 1) * 0.5f * static_cast<float>(c.tokens)) % c.tokens);
    upload(ids.data(), ids.size() * sizeof(std::int32_t), x);
  } else {
    upload(values.data(), values.size() * sizeof(float), x);
  }
  return x;
}

// The case's model in `alloc`, its parameters initialized (seed 5).
std::unique_ptr<Model> case_model(const Case& c, Allocator& alloc) {
  LayerRegistry r;
  register_builtin_layers(r);
  auto m = std::make_unique<Model>(c.layers, c.sample, r, alloc);
  m->init_parameters(5);
  return m;
}

Measured run(const Case& c, std::int64_t rows, Precision precision, bool blocks) {
  Allocator alloc;
  const std::unique_ptr<Model> model = case_model(c, alloc);
  Model& m = *model;
  m.set_precision(precision);
  Measured out;
  out.est = m.activation_memory(rows, precision, Device::cpu, blocks);
  const double held = static_cast<double>(alloc.in_use());  // parameters, gradients, the 16-bit copy
  m.set_batch(rows);
  m.set_recompute_blocks(blocks);
  Tensor x = case_input(c, rows, alloc);
  out.buffers = held + static_cast<double>(x.bytes());  // (what the test holds besides the estimate)
  std::vector<std::int64_t> ids(static_cast<std::size_t>(rows), 7);
  StepContext& ctx = m.context();
  ctx.training = true;
  ctx.seed = 3;
  ctx.sample_ids = ids.data();
  for (std::int64_t step = 0; step < 2; ++step) {
    ctx.step = step;
    m.forward(x);
    const auto dy = unittest::random_values(m.dout().numel(), static_cast<std::uint32_t>(29 + step));
    upload(dy.data(), dy.size() * sizeof(float), m.dout());
    m.backward(x, m.dout(), {}, step > 0);
  }
  out.saved = static_cast<double>(m.saved_bytes());
  out.outputs = static_cast<double>(m.activation_bytes()) - out.saved;
  out.scratch = static_cast<double>(m.arena_high_water()) * 4;
  out.peak = static_cast<double>(alloc.peak());
  return out;
}

const Case kCases[] = {
    {"mlp", "flatten dense(64) relu dropout(30) dense(32) gelu dense(10)", {1, 8, 8}, 0},
    {"cnn", "conv(4,3,pad=1) batchnorm relu maxpool(2) conv(6,3) relu flatten dense(5)", {1, 12, 12}, 0},
    {"gpt",
     "embedding(11, 16) position_embedding dropout(10) repeat(2, res(layernorm attention(4, dropout=20) "
     "dropout(20)) res(layernorm linear(64) gelu linear(16))) layernorm lm_head(11)",
     {12},
     11},
    {"llama",
     "embedding(13, 16) repeat(2, res(rmsnorm attention(4, kv_heads=2, rope=10000, qk_norm=1, bias=0)) "
     "res(rmsnorm linear(32, bias=0) relu linear(16, bias=0))) rmsnorm lm_head(13)",
     {10},
     13},
    {"qwen",
     "embedding(13, 16) repeat(2, res(rmsnorm attention(4, kv_heads=2, rope=10000, qk_norm=1, qk_norm_weight=1, "
     "proj_bias=0, head_dim=6)) res(rmsnorm linear(32, bias=0) swiglu linear(16, bias=0))) rmsnorm lm_head(13)",
     {10},
     13},
    {"gemma3",
     "embedding(13, 16) scale(4) repeat(2, res(rmsnorm(offset=1) attention(4, kv_heads=2, rope=10000, qk_norm=1, "
     "qk_norm_weight=1, qk_offset=1, bias=0, head_dim=6) rmsnorm(offset=1)) res(rmsnorm(offset=1) linear(32, bias=0) "
     "geglu linear(16, bias=0) rmsnorm(offset=1))) rmsnorm(offset=1) lm_head(13)",
     {10},
     13},
    {"olmo2",
     "embedding(13, 16) repeat(2, res(attention(4, kv_heads=2, rope=10000, qk_norm=1, qk_norm_weight=1, qk_whole=1, "
     "bias=0) rmsnorm) res(linear(32, bias=0) swiglu linear(16, bias=0) rmsnorm)) rmsnorm lm_head(13)",
     {10},
     13},
    {"cnn3d",
     "conv3d(3,2,pad=same) leaky_relu(0.1) maxpool3d(2) conv3d(4,3,pad=1) avgpool3d(2) gap3d dense(2)",
     {2, 8, 8, 8},
     0},
};

}  // namespace

TEST(MemoryEstimate, ActivationsAreWhatTheModelTakes) {
  for (const Case& c : kCases)
    for (const Precision p : {Precision::fp32, Precision::bf16})
      for (const bool blocks : {false, true}) {
        if (blocks && std::string(c.layers).find("res(") == std::string::npos) continue;
        const Measured m = run(c, 3, p, blocks);
        const std::string what = std::string(c.name) + " " + to_string(p) + (blocks ? " recompute" : "");
        EXPECT_EQ(m.est.outputs, m.outputs) << what;
        EXPECT_GE(m.est.scratch, m.scratch) << what;
        EXPECT_LE(m.est.scratch, 1.25 * m.scratch + 256) << what;
        const double est = m.buffers + m.est.total();
        if (!blocks) {
          EXPECT_EQ(m.est.saved, m.saved) << what;
          EXPECT_NEAR(est, m.peak, 0.05 * m.peak) << what << ": estimate " << est << ", peak " << m.peak;
        } else {  // an upper bound: the recompute set reuses its buffers across blocks, best fit
          EXPECT_GE(m.est.saved, m.saved) << what;
          EXPECT_GE(est, m.peak) << what;
          EXPECT_LE(est, 1.15 * m.peak) << what << ": estimate " << est << ", peak " << m.peak;
        }
      }
}

TEST(MemoryEstimate, WithoutTheLayersOwnAccountItMisses) {  // (the negative control)
  for (const char* name : {"cnn", "gpt"})
    for (const Case& c : kCases) {
      if (std::string(c.name) != name) continue;
      const Measured m = run(c, 3, Precision::fp32, false);
      const double without = m.buffers + m.est.outputs + m.est.gradients;
      EXPECT_GT(m.peak - without, 0.05 * m.peak) << name;
    }
}

// A forward-only model (--eval-only, --generate: Model::set_forward_only) keeps the outputs between
// layers in two buffers taken in turn: for every case, fp32 and bf16, its evaluation forward gives
// the same bits as a training model's evaluation forward, it holds fewer bytes of outputs, and
// Model::activation_memory states them exactly. (Writing each output into the buffer its input is
// in fails the first criterion.) In bf16 it rounds its float32 parameters in place instead of
// widening a 16-bit copy for every layer call: the same bits (unrounded parameters fail the first
// criterion), less scratch, and the estimate still covers it.
TEST(MemoryEstimate, ForwardOnlyOutputsTakeTurns) {
  for (const Case& c : kCases)
    for (const Precision p : {Precision::fp32, Precision::bf16}) {
      const std::string what = std::string(c.name) + " " + to_string(p);
      std::vector<float> outs[2];
      double held[2] = {0, 0}, estimated[2] = {0, 0}, scratch[2] = {0, 0};
      for (const bool only : {false, true}) {
        Allocator alloc;
        const std::unique_ptr<Model> model = case_model(c, alloc);
        Model& m = *model;
        m.set_forward_only(only);
        m.set_precision(p);
        m.set_batch(3);
        const Tensor x = case_input(c, 3, alloc);
        m.context().training = false;
        outs[only] = to_host(m.forward(x));
        held[only] = static_cast<double>(m.activation_bytes() - m.saved_bytes());
        const Model::ActivationMemory est = m.activation_memory(3, p, Device::cpu, false);
        estimated[only] = est.outputs;
        scratch[only] = static_cast<double>(m.arena_high_water()) * 4;
        EXPECT_GE(est.scratch, scratch[only]) << what << (only ? " forward-only" : "");
      }
      EXPECT_EQ(outs[1], outs[0]) << what;
      EXPECT_EQ(estimated[1], held[1]) << what;
      EXPECT_EQ(estimated[0], held[0]) << what;
      EXPECT_LT(held[1], held[0]) << what;
      // bf16: the forward-only model's parameters are rounded in place, not widened into the arena.
      if (p != Precision::fp32) {
        EXPECT_LT(scratch[1], scratch[0]) << what;
      }
    }
}

// Generation's model (forward-only, Model::set_one_output_position): for the token cases, with
// loss_chunk 0 and 5, the output is one position, [1, V], and Model::activation_memory states the
// outputs held exactly; they are fewer bytes than the same model's whole output [T, V] takes.
TEST(MemoryEstimate, GenerationOutputsOnePosition) {
  for (const Case& c : kCases)
    for (const std::int64_t chunk : {0, 5}) {
      if (c.tokens == 0) continue;
      const std::string what = std::string(c.name) + " loss_chunk " + std::to_string(chunk);
      double held[2] = {0, 0};
      for (const bool one : {false, true}) {
        Allocator alloc;
        const std::unique_ptr<Model> model = case_model(c, alloc);
        Model& m = *model;
        m.set_forward_only(true);
        m.set_loss_chunk(chunk);
        if (one) {
          EXPECT_TRUE(m.set_one_output_position()) << what;
        } else {
          EXPECT_EQ(m.output_shape(), (Shape{c.sample[0], c.tokens})) << what;
        }
        m.set_batch(1);
        m.context().output_position = 3;
        const Tensor& out = m.forward(case_input(c, 1, alloc));
        EXPECT_EQ(out.shape()[1], one ? 1 : c.sample[0]) << what;
        held[one] = static_cast<double>(m.activation_bytes() - m.saved_bytes());
        if (one) {
          EXPECT_EQ(m.activation_memory(1, Precision::fp32, Device::cpu, false).outputs, held[1]) << what;
        }
      }
      EXPECT_LT(held[1], held[0]) << what;
    }
}

// Generation's key/value caches (--generate, attention's decode): the bytes the layers keep (their
// own allocators) once two sequences' first cached forward runs side by side are the estimate's
// `cache` for 2 rows, which only a model with one output position (generation) counts.
TEST(MemoryEstimate, GenerationCountsTheKeyValueCaches) {
  for (const Case& c : kCases) {
    if (c.tokens == 0) continue;
    Allocator alloc;
    const std::unique_ptr<Model> model = case_model(c, alloc);
    Model& m = *model;
    m.set_forward_only(true);
    EXPECT_EQ(m.activation_memory(2, Precision::fp32, Device::cpu, false).cache, 0) << c.name << ": training";
    ASSERT_TRUE(m.set_one_output_position());
    m.set_batch(2);
    const Tensor x = case_input(c, 2, alloc);
    m.context().output_position = 3;
    m.forward(x);  // (the whole window first)
    const double before = m.layer_own_bytes();
    m.context().decode_position = 0;
    m.set_length(4);
    m.forward(Tensor::zeros({2, 4}, alloc, DType::i32));
    const double cache = m.layer_own_bytes() - before;
    EXPECT_GT(cache, 0) << c.name;
    EXPECT_EQ(m.activation_memory(2, Precision::fp32, Device::cpu, false).cache, cache) << c.name;
  }
}

// Generation sized for the positions a pass reaches (Model::set_positions): the estimate for half
// the positions has the key/value caches in proportion and fewer bytes of outputs and scratch; a
// pass of those positions holds what it says (outputs and caches to the byte, scratch within it);
// forwards of at most 3 of them (--generate with the cache: set_positions(half, 3)) take the
// outputs and scratch of 3 and the same caches; set back to T, the estimate is T's again.
TEST(MemoryEstimate, GenerationSizedForThePositionsItReaches) {
  for (const Case& c : kCases) {
    if (c.tokens == 0) continue;
    Allocator alloc;
    const std::unique_ptr<Model> model = case_model(c, alloc);
    Model& m = *model;
    m.set_forward_only(true);
    ASSERT_TRUE(m.set_one_output_position());
    const std::int64_t t = c.sample[0], half = t / 2;
    const Model::ActivationMemory whole = m.activation_memory(2, Precision::fp32, Device::cpu, true);
    ASSERT_TRUE(m.set_positions(half));
    const Model::ActivationMemory est = m.activation_memory(2, Precision::fp32, Device::cpu, true);
    EXPECT_DOUBLE_EQ(est.cache, whole.cache * static_cast<double>(half) / static_cast<double>(t)) << c.name;
    EXPECT_LT(est.outputs, whole.outputs) << c.name;
    EXPECT_LT(est.scratch, whole.scratch) << c.name;
    m.set_batch(2);
    const double before = m.layer_own_bytes();
    m.context().decode_position = 0;
    m.context().output_position = half - 1;
    m.forward(Tensor::zeros({2, half}, alloc, DType::i32));
    EXPECT_EQ(m.layer_own_bytes() - before, est.cache) << c.name;
    EXPECT_EQ(static_cast<double>(m.activation_bytes() - m.saved_bytes()), est.outputs) << c.name;
    EXPECT_LE(static_cast<double>(m.arena_high_water()) * 4, est.scratch) << c.name;
    // Forwards of at most 3 positions (a prompt of 3, then one at a time, as --generate with the
    // cache): the caches for half as before, the outputs and scratch for 3; a pass to half holds
    // the caches it says (those the pass above made, kept) and its outputs to the byte.
    ASSERT_TRUE(m.set_positions(half, 3));
    const Model::ActivationMemory few = m.activation_memory(2, Precision::fp32, Device::cpu, true);
    EXPECT_EQ(few.cache, est.cache) << c.name;
    EXPECT_LT(few.outputs, est.outputs) << c.name;
    EXPECT_LT(few.scratch, est.scratch) << c.name;
    m.set_batch(2);
    for (std::int64_t p = 0; p < half; p += p == 0 ? 3 : 1) {
      const std::int64_t len = p == 0 ? 3 : 1;
      m.context().decode_position = p;
      m.context().output_position = len - 1;
      m.set_length(len);
      m.forward(Tensor::zeros({2, len}, alloc, DType::i32));
    }
    m.set_length(0);
    EXPECT_EQ(m.layer_own_bytes() - before, few.cache) << c.name;
    EXPECT_EQ(static_cast<double>(m.activation_bytes() - m.saved_bytes()), few.outputs) << c.name;
    EXPECT_THROW(m.set_length(4), Error) << c.name;  // (a forward of 4 positions: more than the buffers hold)
    ASSERT_TRUE(m.set_positions(t));
    const Model::ActivationMemory again = m.activation_memory(2, Precision::fp32, Device::cpu, true);
    EXPECT_EQ(again.outputs, whole.outputs) << c.name;
    EXPECT_EQ(again.scratch, whole.scratch) << c.name;
    EXPECT_EQ(again.cache, whole.cache) << c.name;
  }
}
