// Activation checkpointing ([train] recompute = blocks) and the per-call scratch arena: a GPT with
// dropout in its residual blocks and a CNN with batch norm and dropout in one are run for two
// training steps with recompute = none and = blocks (two blocks at least: with one, its re-run
// holds what none holds). Stated criterion: the outputs, every
// parameter gradient and batch norm's running statistics are the same bits, and the model's
// allocator peaks lower with blocks (the blocks' inner outputs, attention's probabilities and the
// dropout masks are held for one block at a time instead of all of them).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/step_arena.hpp"
#include "hpctrain/model/model.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

struct Result {
  std::vector<float> out, grads, buffers;
  std::size_t peak = 0;         // the allocator's
  std::size_t activations = 0;  // the peak less what the model held before its first forward
  std::int64_t arena = 0;
  std::size_t saved = 0;  // bytes of saved tensors after the steps
  std::size_t held = 0;   // bytes of layer outputs and saved tensors after the steps
  std::size_t copy = 0;   // bytes of the compute copy of the parameters (none in fp32)
  std::int64_t params = 0;
  std::size_t after = 0;  // the allocator's bytes in use after the steps (the steady state)
};

// Two training steps (the second accumulating into the first's gradients) of `layers` on `rows`
// samples; `tokens` > 0: the inputs are token ids below it, else uniform values.
Result train(const std::string& layers, const Shape& sample, std::int64_t rows, bool blocks, std::int64_t tokens,
             Precision precision = Precision::fp32) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m(layers, sample, r, alloc);
  m.init_parameters(5);
  const std::size_t before_copy = alloc.in_use();
  m.set_precision(precision);
  const std::size_t copy_bytes = alloc.in_use() - before_copy;
  m.set_batch(rows);
  m.set_recompute_blocks(blocks);
  Shape batch{rows};
  batch.insert(batch.end(), sample.begin(), sample.end());
  Tensor x = Tensor::zeros(batch, alloc, tokens > 0 ? DType::i32 : DType::f32);
  const auto values = unittest::random_values(x.numel(), 17);
  if (tokens > 0) {
    std::vector<std::int32_t> ids(values.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = static_cast<std::int32_t>(
          static_cast<std::int64_t>((values[i] + 1) * 0.5f * static_cast<float>(tokens)) % tokens);
    upload(ids.data(), ids.size() * sizeof(std::int32_t), x);
  } else {
    upload(values.data(), values.size() * sizeof(float), x);
  }
  std::vector<std::int64_t> ids(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = 100 + i;
  StepContext& ctx = m.context();
  ctx.training = true;
  ctx.seed = 3;
  ctx.sample_ids = ids.data();
  Result res;
  const std::size_t before = alloc.in_use();
  for (std::int64_t step = 0; step < 2; ++step) {
    ctx.step = step;
    const Tensor& out = m.forward(x);
    res.out = to_host(out);
    const auto dy = unittest::random_values(m.dout().numel(), static_cast<std::uint32_t>(29 + step));
    upload(dy.data(), dy.size() * sizeof(float), m.dout());
    m.backward(x, m.dout(), {}, step > 0);
  }
  res.grads = to_host(m.gradients());
  for (auto& [name, buf] : m.buffers()) res.buffers.insert(res.buffers.end(), buf->begin(), buf->end());
  res.peak = alloc.peak();
  res.activations = res.peak - before;
  res.arena = m.arena_high_water();
  res.saved = m.saved_bytes();
  res.held = m.activation_bytes();
  res.copy = copy_bytes;
  res.params = m.parameters().numel();
  res.after = alloc.in_use();
  return res;
}

void expect_same_bits_and_less_memory(const std::string& layers, const Shape& sample, std::int64_t rows,
                                      std::int64_t tokens) {
  const Result none = train(layers, sample, rows, false, tokens), blocks = train(layers, sample, rows, true, tokens);
  ASSERT_FALSE(none.grads.empty());
  EXPECT_EQ(blocks.out, none.out);
  EXPECT_EQ(blocks.grads, none.grads);
  EXPECT_EQ(blocks.buffers, none.buffers);
  EXPECT_LT(blocks.peak, none.peak) << "recompute = blocks held as much as none: " << none.peak << " bytes";
  EXPECT_GT(none.arena, 0);  // attention's / im2col's backward scratch came from the arena
  double norm = 0;
  for (float g : none.grads) norm += static_cast<double>(g) * g;
  EXPECT_GT(norm, 0.0);
}

}  // namespace

const char* const kGpt =
    "embedding(11, 16) position_embedding dropout(10) "
    "repeat(3, res(layernorm attention(4, dropout=20) dropout(20)) res(layernorm linear(64) gelu linear(16) "
    "dropout(20))) layernorm lm_head(11)";

TEST(Recompute, GptBlocksWithDropoutGiveTheSameBitsWithLessMemory) {
  expect_same_bits_and_less_memory(kGpt, {12}, 6, 11);
}

// bf16 / fp16 runs keep what backward reads in 16 bits (layer.hpp: compact_out / compact_keep /
// compact_in; the blocks' inner outputs, attention's tensors, the dropout masks whose scale the
// format holds). Stated criteria: (1) recompute = blocks, whose backward uses the re-run's f32
// copies, gives the same bits as none, whose backward unpacks the 16-bit copies (so the packing
// loses nothing the backward reads); (2) the saved tensors take at most 0.55x the fp32 run's
// bytes (half, plus what stays f32: layer norm's statistics and the top-level dropout(10) mask,
// about 2% of the fp32 bytes here), and the step's peak is lower too.
// bf16/fp16: saved tensors, layer outputs and the compute copy of the parameters in 16 bits.
TEST(SixteenBitStorage, GptActivationsInAboutHalfTheBytesAndRecomputeAgrees) {
  const Result fp32 = train(kGpt, {12}, 6, false, 11);
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    const Result none = train(kGpt, {12}, 6, false, 11, p), blocks = train(kGpt, {12}, 6, true, 11, p);
    EXPECT_EQ(blocks.grads, none.grads) << to_string(p);
    EXPECT_EQ(blocks.out, none.out) << to_string(p);
    EXPECT_NE(none.grads, fp32.grads) << to_string(p);  // (it did compute in the format)
    EXPECT_LE(static_cast<double>(none.saved), 0.55 * static_cast<double>(fp32.saved))
        << to_string(p) << ": " << none.saved << " against " << fp32.saved << " bytes";
    // The layer outputs between layers too (the last, the logits the loss reads, stays float32).
    EXPECT_LE(static_cast<double>(none.held), 0.6 * static_cast<double>(fp32.held))
        << to_string(p) << ": " << none.held << " against " << fp32.held << " bytes";
    EXPECT_EQ(none.copy, static_cast<std::size_t>(2 * none.params)) << to_string(p);  // the compute copy: 2 bytes
    EXPECT_EQ(fp32.copy, 0u);
    // The whole peak (parameters, gradients, the compute copy, activations, the arena) is lower
    // once the held outputs outweigh the f32 working copies a layer call takes (one layer's): a
    // deeper stack of the same blocks.
    const std::string deep = std::string(kGpt).replace(std::string(kGpt).find("repeat(3"), 8, "repeat(8");
    const Result deep32 = train(deep, {12}, 6, false, 11), deep16 = train(deep, {12}, 6, false, 11, p);
    EXPECT_LT(deep16.peak, deep32.peak) << to_string(p) << " arena " << deep16.arena << " vs " << deep32.arena;
    // The first step's growth of the arena costs at most one more arena: no handle of a call's
    // float32 copies outlives the call (they kept every block's parameter copies and the arena's
    // old buffers alive: 117 MiB more than the steady state on the GPU deck).
    EXPECT_LE(deep16.peak - deep16.after, static_cast<std::size_t>(deep16.arena) * sizeof(float))
        << to_string(p) << ": peak " << deep16.peak << ", steady " << deep16.after;
  }
}

TEST(Recompute, ConvBlocksWithBatchNormGiveTheSameBitsAndStatistics) {
  expect_same_bits_and_less_memory(
      "conv(4,3,pad=1) relu repeat(2, res(batchnorm conv(4,3,pad=1) relu dropout(10) res(batchnorm relu))) maxpool(2) "
      "flatten "
      "dense(5)",
      {2, 8, 8}, 4, 0);
}

// The arena hands out stack-ordered views, gives them back with the scope, and after the first
// round regrows to the high-water mark so the same takes reuse the same memory.
TEST(StepArena, StackOrderRegrowAndReuse) {
  Allocator alloc;
  StepArena arena(alloc);
  std::vector<float*> starts;
  for (int round = 0; round < 3; ++round) {
    StepArena::Scope outer(&arena);
    Tensor a = arena.take({10});
    {
      StepArena::Scope inner(&arena);
      Tensor b = arena.take({3, 100});
      EXPECT_NE(a.data(), b.data());
      if (round > 0) {
        EXPECT_EQ(b.data(), a.data() + 64);  // 10 elements rounded up to 64
      }
    }
    Tensor c = arena.take({5});  // b's place again once the buffer holds both
    if (round > 0) {
      EXPECT_EQ(c.data(), a.data() + 64);
    }
    starts.push_back(a.data());
  }
  EXPECT_EQ(starts[2], starts[1]);  // regrown once, after the first round, then kept
  EXPECT_EQ(arena.high_water(), 64 + 320);
  EXPECT_EQ(arena.capacity(), 64 + 320);
  EXPECT_EQ(alloc.in_use(), static_cast<std::size_t>(64 + 320) * sizeof(float));
}

// A pipeline stage's activation sets grow to the batch each is used with: a larger evaluation
// batch afterwards grows set 0 (and the activation gradients) only, not the sets the training
// micro-batches used. Expected growth, exactly: (16 - 4) rows x 23 floats per row (the layers'
// outputs 4 + 8 + 8 + 3) for set 0, and 19 for the gradient buffers (the output's 3, and two of
// the widest in between, 8, taken in turn); growing all four sets would add three more sets' worth.
TEST(ActivationSets, AnEvaluationBatchGrowsOnlyTheSetItUses) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m("flatten dense(8) relu dense(3)", {2, 2}, r, alloc);
  m.init_parameters(1);
  m.set_batch(4);
  Tensor x = Tensor::zeros({16, 2, 2}, alloc);
  for (std::size_t k = 0; k < 4; ++k) {
    m.use_set(k);
    m.forward(x.view(0, {4, 2, 2}));
  }
  const std::size_t before = alloc.in_use();
  m.set_batch(16);
  m.use_set(0);
  m.forward(x);
  EXPECT_EQ(m.sets(), 4u);
  EXPECT_EQ(alloc.in_use() - before, (16u - 4) * (23 + 19) * sizeof(float));
}
