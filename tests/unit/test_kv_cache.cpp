// Generation's key/value cache (StepContext::decode_position, Model::set_length): a GPT and a
// Llama-class model run as --generate runs them (a prompt's positions, then one or a few at a
// time, each attending over the cache) give the logits of the whole sequence's forward at those
// positions, within 1e-5 of their largest magnitude; also the held-probabilities attention
// (fused=0), the document mask, a sliding window and soft-capping. Negative control: the last position run alone,
// without the cache, is far from them. A model that is not a token model refuses a shortened forward. Also generation's
// one output position (OneOutputPositionGivesThatPositionsLogits), for one sequence and for two side by side
// (--samples), each with its own cache, and a model sized for fewer positions
// (PositionsSetForAPassGiveTheWholeSequencesLogits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"

using namespace hpctrain;

namespace {
constexpr std::int64_t T = 90, V = 23;

struct Case {
  const char* name;
  std::string layers;
  bool documents;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Largest |got - want| over rows [from, from + len) of want [T, V], over the largest |want|.
double error(const Tensor& got, const std::vector<float>& want, std::int64_t from, std::int64_t len) {
  double worst = 0, big = 0;
  for (float w : want) big = std::max(big, std::fabs(static_cast<double>(w)));
  for (std::int64_t i = 0; i < len * V; ++i)
    worst =
        std::max(worst, std::fabs(static_cast<double>(got.data()[i]) - want[static_cast<std::size_t>(from * V + i)]));
  return worst / big;
}

class KvCache : public ::testing::TestWithParam<Case> {};

TEST_P(KvCache, CachedForwardsGiveTheWholeSequencesLogits) {
  const Case& c = GetParam();
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m(c.layers, {T}, r, alloc);
  m.init_parameters(5);
  m.set_batch(1);
  Tensor ids = Tensor::zeros({1, T}, alloc, DType::i32), docs = Tensor::zeros({1, T}, alloc, DType::i32);
  for (std::int64_t i = 0; i < T; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i * 7 + 3) % V);
  if (c.documents) {
    document_numbers(ids, 4, docs);  // token 4 starts a document
    m.context().doc_ids = docs;
  }
  const Tensor& whole = m.forward(ids);
  const std::vector<float> want(whole.data(), whole.data() + T * V);
  // A prompt of 70 positions (a strip of 64 and part of the next), then 1, 3, 1, ... to the end.
  std::int64_t p = 0;
  for (std::int64_t len : {70, 1, 3, 1, 5, 1, 2, 7}) {
    len = std::min(len, T - p);
    m.context().decode_position = p;
    m.set_length(len);
    if (c.documents) m.context().doc_ids = docs.view(0, {1, p + len});
    const Tensor& got = m.forward(ids.view(p, {1, len}));
    EXPECT_LT(error(got, want, p, len), 1e-5) << c.name << ": positions " << p << " .. " << p + len - 1;
    p += len;
  }
  EXPECT_EQ(p, T);
  // Negative control: the last position alone, without the cache.
  m.context().decode_position = -1;
  m.set_length(1);
  if (c.documents) m.context().doc_ids = docs.view(T - 1, {1, 1});
  EXPECT_GT(error(m.forward(ids.view(T - 1, {1, 1})), want, T - 1, 1), 1e-3) << c.name << ": without the cache";
}

// Generation's one output position (Model::set_one_output_position, lm_head): the output is
// [rows, 1, V], the logits of StepContext::output_position alone, within 1e-5 of the whole
// forward's row there: for the whole window (two sequences) and for cached forwards (the run's
// last position). Negative control: the position before it is far from them. A position outside
// the run is refused.
TEST_P(KvCache, OneOutputPositionGivesThatPositionsLogits) {
  const Case& c = GetParam();
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model whole(c.layers, {T}, r, alloc), one(c.layers, {T}, r, alloc);
  whole.init_parameters(5);
  one.init_parameters(5);
  ASSERT_TRUE(one.set_one_output_position());
  whole.set_batch(2);
  one.set_batch(2);
  Tensor ids = Tensor::zeros({2, T}, alloc, DType::i32), docs = Tensor::zeros({2, T}, alloc, DType::i32);
  for (std::int64_t i = 0; i < 2 * T; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i * 7 + 3) % V);
  if (c.documents) {
    document_numbers(ids, 4, docs);
    whole.context().doc_ids = one.context().doc_ids = docs;
  }
  const Tensor& w = whole.forward(ids);
  const std::vector<float> want[2] = {{w.data(), w.data() + T * V}, {w.data() + T * V, w.data() + 2 * T * V}};
  for (const std::int64_t at : {std::int64_t{0}, std::int64_t{37}, T - 1}) {
    one.context().output_position = at;
    const Tensor& got = one.forward(ids);
    ASSERT_EQ(got.shape(), (Shape{2, 1, V}));
    for (int b = 0; b < 2; ++b) {
      const Tensor row = got.view(b * V, {1, V});
      EXPECT_LT(error(row, want[b], at, 1), 1e-5) << c.name << ": sequence " << b << ", position " << at;
      if (at > 0) {
        EXPECT_GT(error(row, want[b], at - 1, 1), 1e-3) << c.name << ": the position before " << at;
      }
    }
  }
  one.context().output_position = T;
  EXPECT_THROW(one.forward(ids), Error);
  // Cached forwards of the first sequence, as --generate runs them: the run's last position.
  one.set_batch(1);
  std::int64_t p = 0;
  for (std::int64_t len : {70, 1, 3, 1, 15}) {
    one.context().decode_position = p;
    one.context().output_position = len - 1;
    one.set_length(len);
    if (c.documents) one.context().doc_ids = docs.view(0, {1, p + len});
    const Tensor& got = one.forward(ids.view(p, {1, len}));
    ASSERT_EQ(got.shape(), (Shape{1, 1, V}));
    EXPECT_LT(error(got, want[0], p + len - 1, 1), 1e-5) << c.name << ": position " << p + len - 1;
    p += len;
  }
  EXPECT_EQ(p, T);
  // Both sequences side by side (--samples): each row's cache, documents and last position.
  one.set_batch(2);
  p = 0;
  for (std::int64_t len : {70, 1, 3, 1, 15}) {
    Tensor run = Tensor::zeros({2, len}, alloc, DType::i32), ctx_docs = Tensor::zeros({2, p + len}, alloc, DType::i32);
    for (std::int64_t b = 0; b < 2; ++b) {
      std::copy_n(ids.data_as<std::int32_t>() + b * T + p, len, run.data_as<std::int32_t>() + b * len);
      std::copy_n(docs.data_as<std::int32_t>() + b * T, p + len, ctx_docs.data_as<std::int32_t>() + b * (p + len));
    }
    one.context().decode_position = p;
    one.context().output_position = len - 1;
    one.set_length(len);
    if (c.documents) one.context().doc_ids = ctx_docs;
    const Tensor& got = one.forward(run);
    ASSERT_EQ(got.shape(), (Shape{2, 1, V}));
    for (int b = 0; b < 2; ++b) {
      const Tensor row = got.view(b * V, {1, V});
      EXPECT_LT(error(row, want[b], p + len - 1, 1), 1e-5) << c.name << ": sequence " << b << ", side by side";
      // (control: the other sequence's logits there are far from them)
      EXPECT_GT(error(row, want[1 - b], p + len - 1, 1), 1e-3) << c.name << ": sequence " << b;
    }
    p += len;
  }
}

// Generation sized for the positions a pass reaches (Model::set_positions, --generate): a model
// set to 75 of its 90 positions gives the whole forward's logits for a prompt continued to 75 with
// the cache and for the whole 75-position window without it (padded, as --generate runs it), and
// refuses a 76th; set to 90 again it grows and runs the whole sequence. Set to 40 and then 75, a
// pass from position 40 continues the first's 40 positions kept in the caches.
TEST_P(KvCache, PositionsSetForAPassGiveTheWholeSequencesLogits) {
  const Case& c = GetParam();
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model whole(c.layers, {T}, r, alloc), one(c.layers, {T}, r, alloc);
  whole.init_parameters(5);
  one.init_parameters(5);
  ASSERT_TRUE(one.set_one_output_position());
  whole.set_batch(1);
  Tensor ids = Tensor::zeros({1, T}, alloc, DType::i32), docs = Tensor::zeros({1, T}, alloc, DType::i32);
  for (std::int64_t i = 0; i < T; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i * 5 + 2) % V);
  if (c.documents) {
    document_numbers(ids, 4, docs);
    whole.context().doc_ids = docs;
  }
  const Tensor& w = whole.forward(ids);
  const std::vector<float> want(w.data(), w.data() + T * V);
  // A longer pass continuing the last one (--interactive's next turn): positions 0 .. 39 stay in
  // the caches as they grow to 75 (set_positions drops the model's buffers, not the caches).
  for (const auto& [held, p] : {std::pair<std::int64_t, std::int64_t>{40, 0}, {75, 40}}) {
    ASSERT_TRUE(one.set_positions(held));
    one.set_batch(1);
    one.context().decode_position = p;
    one.context().output_position = held - p - 1;
    one.set_length(held - p);
    if (c.documents) one.context().doc_ids = docs.view(0, {1, held});
    const Tensor& got = one.forward(ids.view(p, {1, held - p}));
    EXPECT_LT(error(got, want, held - 1, 1), 1e-5) << c.name << ": positions " << p << " .. " << held - 1;
  }
  one.set_length(0);
  for (const std::int64_t held : {std::int64_t{75}, T}) {
    ASSERT_TRUE(one.set_positions(held));
    EXPECT_EQ(one.input_sample(), Shape{held}) << c.name;
    one.set_batch(1);
    std::int64_t p = 0;
    for (std::int64_t len : {70, 1, 3, 1, 15}) {
      if ((len = std::min(len, held - p)) == 0) break;
      one.context().decode_position = p;
      one.context().output_position = len - 1;
      one.set_length(len);
      if (c.documents) one.context().doc_ids = docs.view(0, {1, p + len});
      const Tensor& got = one.forward(ids.view(p, {1, len}));
      EXPECT_LT(error(got, want, p + len - 1, 1), 1e-5) << c.name << ": " << held << " positions, at " << p + len - 1;
      p += len;
    }
    EXPECT_EQ(p, held);
    EXPECT_THROW(one.set_length(held + 1), Error) << c.name;
    // The window without the cache: `held` positions, the context's first 60 and zeros after them.
    one.context().decode_position = -1;
    one.set_length(0);
    one.context().output_position = 59;
    Tensor padded = Tensor::zeros({1, held}, alloc, DType::i32);
    std::copy_n(ids.data_as<std::int32_t>(), 60, padded.data_as<std::int32_t>());
    if (c.documents) one.context().doc_ids = docs.view(0, {1, held});
    EXPECT_LT(error(one.forward(padded), want, 59, 1), 1e-5) << c.name << ": " << held << " positions, no cache";
    EXPECT_GT(error(one.forward(padded), want, 58, 1), 1e-3) << c.name << ": control, the position before";
  }
  EXPECT_THROW(one.set_positions(T + 1), Error) << c.name;
}

const std::string gpt =
    "embedding(23, 32) position_embedding repeat(2, res(layernorm attention(4)) "
    "res(layernorm linear(64) gelu linear(32))) layernorm lm_head(23)";
const std::string llama =
    "embedding(23, 32) repeat(2, res(rmsnorm attention(4, kv_heads=2, rope=10000, qk_norm=1, bias=0)) "
    "res(rmsnorm linear(96, bias=0) swiglu linear(32, bias=0))) rmsnorm lm_head(23)";
// Qwen2's q, k and v biases, Qwen3's weighted QK-norm and heads wider than C / H (head_dim).
const std::string qwen =
    "embedding(23, 32) repeat(2, res(rmsnorm attention(4, kv_heads=2, rope=10000, qk_norm=1, qk_norm_weight=1, "
    "proj_bias=0, head_dim=12)) res(rmsnorm linear(96, bias=0) swiglu linear(32, bias=0))) rmsnorm lm_head(23)";
// OLMo 2's: norms after the sublayers only, the weighted QK-norm over all of a position's heads.
const std::string olmo2 =
    "embedding(23, 32) repeat(2, res(attention(4, kv_heads=2, rope=10000, qk_norm=1, qk_norm_weight=1, qk_whole=1, "
    "bias=0) rmsnorm) res(linear(96, bias=0) swiglu linear(32, bias=0) rmsnorm)) rmsnorm lm_head(23)";
// Gemma 2's and 3's pattern: a local layer with a sliding window of 20 positions (the prompt of 70
// and the positions after it see only their window's keys in the cache), then a global one; Gemma
// 2's soft-capped scores and logits.
const std::string windowed =
    "embedding(23, 32) res(rmsnorm attention(4, kv_heads=2, rope=10000, bias=0, window=20, softcap=3)) "
    "res(rmsnorm linear(96, bias=0) swiglu linear(32, bias=0)) res(rmsnorm attention(4, kv_heads=2, rope=500000, "
    "bias=0, softcap=3)) res(rmsnorm linear(96, bias=0) swiglu linear(32, bias=0)) rmsnorm lm_head(23, softcap=5)";
INSTANTIATE_TEST_SUITE_P(
    Models, KvCache,
    ::testing::Values(Case{"gpt", gpt, false}, Case{"llama", llama, false}, Case{"llama, documents", llama, true},
                      Case{"qwen", qwen, false}, Case{"sliding window", windowed, false},
                      Case{"sliding window, documents", windowed, true}, Case{"olmo2", olmo2, false},
                      Case{"gpt, held probabilities",
                           "embedding(23, 32) position_embedding res(layernorm attention(4, dropout=10)) layernorm "
                           "lm_head(23)",
                           false}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::to_string(i.index); });

// A sliding window's cache (attention's ready_cache): a layer with window=6 keeps at most 2 x 5 +
// L rows of each sequence (L: the longest pass, the prompt's 5) while a generation runs to all 90
// positions, one or a few at a time, for one sequence and two side by side; every pass gives the
// whole forward's logits (the kept rows moved to the front as the cache runs out; a pass of 12 grows
// it). The global layer holds all 90; the memory estimate for a first pass of 5 is what the two
// hold, to the byte. Going back within the window (--interactive's next turn) gives the same logits
// again; further back the cache no longer serves (Model::cache_serves) and a pass from there is
// refused. Control: the same generation with the window as wide as the sequence holds 90 rows in both.
TEST(KvCacheWindow, LongGenerationHoldsTheWindowsRows) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  const auto layers = [](int window) {
    return "embedding(23, 32) res(rmsnorm attention(4, kv_heads=2, rope=10000, bias=0, window=" +
           std::to_string(window) +
           ")) res(rmsnorm attention(4, kv_heads=2, rope=500000, bias=0)) res(rmsnorm linear(64, bias=0) swiglu "
           "linear(32, bias=0)) rmsnorm lm_head(23)";
  };
  const double row = 4.0 * 2 * 2 * 8;  // bytes of one position's keys and values (2 heads each, float32)
  for (const int window : {6, 90}) {
    for (const std::int64_t b : {1, 2}) {
      Model whole(layers(window), {T}, r, alloc), m(layers(window), {T}, r, alloc);
      whole.init_parameters(3);
      m.init_parameters(3);
      whole.set_batch(b);
      Tensor ids = Tensor::zeros({b, T}, alloc, DType::i32);
      for (std::int64_t i = 0; i < b * T; ++i)
        ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i * 11 + 1) % V);
      const Tensor& w = whole.forward(ids);
      const std::vector<float> want(w.data(), w.data() + b * T * V);
      ASSERT_TRUE(m.set_positions(T, 12));  // (caches for all 90, the forwards' buffers for 12)
      m.set_batch(b);
      const auto pass = [&](std::int64_t p, std::int64_t len) {
        Tensor run = Tensor::zeros({b, len}, alloc, DType::i32);
        for (std::int64_t s = 0; s < b; ++s)
          std::copy_n(ids.data_as<std::int32_t>() + s * T + p, len, run.data_as<std::int32_t>() + s * len);
        m.context().decode_position = p;
        m.set_length(len);
        const Tensor& got = m.forward(run);
        for (std::int64_t s = 0; s < b; ++s) {
          const std::vector<float> mine(want.begin() + s * T * V, want.begin() + (s + 1) * T * V);
          EXPECT_LT(error(got.view(s * len * V, {1, len, V}), mine, p, len), 1e-5)
              << "window " << window << ", " << b << " sequences, sequence " << s << ": positions " << p << " .. "
              << p + len - 1;
        }
      };
      std::int64_t p = 0;
      for (std::int64_t len : {5, 1, 1, 1, 1, 1, 1, 1, 1, 12, 1, 1, 2, 1, 3, 7, 1}) pass(p, len), p += len;
      while (p < T) pass(p, 1), ++p;
      Model one(layers(window), {T}, r, alloc);  // (the estimate counts caches with one output position)
      ASSERT_TRUE(one.set_one_output_position());
      ASSERT_TRUE(one.set_positions(T, 5));  // (a first forward of 5)
      const double held = m.layer_own_bytes();
      const double estimate = one.activation_memory(b, Precision::fp32, Device::cpu, true).cache;
      if (window == 6) {
        // (the rows of the pass of 12: 2 x 5 + 12 while it ran, kept since)
        EXPECT_EQ(held, static_cast<double>(b) * row * (T + 2 * 5 + 12)) << b << " sequences";
        EXPECT_EQ(estimate, static_cast<double>(b) * row * (T + 2 * 5 + 5)) << b << " sequences";
        EXPECT_TRUE(m.cache_serves(86));
        EXPECT_TRUE(m.cache_serves(0));
        EXPECT_FALSE(m.cache_serves(60));
        pass(86, 4);  // (back within the window)
        m.context().decode_position = 60;
        m.set_length(4);
        EXPECT_THROW(m.forward(ids.view(0, {b, 4})), Error) << b << " sequences";
      } else {
        EXPECT_EQ(held, 2 * static_cast<double>(b) * row * T) << b << " sequences";
        EXPECT_EQ(estimate, held) << b << " sequences";
        EXPECT_TRUE(m.cache_serves(60));
      }
    }
  }
}

TEST(KvCacheModel, OnlyTokenModelsRunShortenedForwards) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m("dense(10)", {784}, r, alloc);
  EXPECT_THROW(m.set_length(1), Error);
  EXPECT_THROW(m.set_positions(1), Error);
  EXPECT_FALSE(m.set_one_output_position());  // (its last layer is not lm_head: the whole output)
  EXPECT_EQ(m.output_shape(), Shape{10});
}

}  // namespace
