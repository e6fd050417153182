// [train] freeze: layer name patterns, which layers a pattern freezes, the buckets that leave
// frozen layers out (and with them the optimizer's runs and state), and backward: the gradients of the
// layers that train are the same bits as without freezing, frozen layers' are zero, and nothing
// below the lowest trainable layer runs. (Fine-tuning end to end: tests/e2e/fine_tune.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/parallel/grad_buckets.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;
using unittest::random_values;

namespace {
// Parameters: dense.0 8*4+8 = 40, dense.1 6*8+6 = 54, dense.2 2*6+2 = 14 elements.
constexpr const char* kLayers = "dense(8) relu dense(6) dense(2)";

// The gradients after one backward of fixed inputs, with `frozen` flags (empty: none).
std::vector<float> gradients(const std::vector<bool>& frozen) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m(kLayers, {4}, r, alloc);
  const auto w = random_values(m.parameters().numel(), 3);
  std::copy(w.begin(), w.end(), m.parameters().data());
  if (!frozen.empty()) m.set_frozen(frozen);
  m.set_batch(3);
  Tensor x = Tensor::zeros({3, 4}, alloc), dout = Tensor::zeros({3, 2}, alloc);
  const auto xv = random_values(12, 5), dv = random_values(6, 7);
  std::copy(xv.begin(), xv.end(), x.data());
  std::copy(dv.begin(), dv.end(), dout.data());
  std::fill(m.gradients().data(), m.gradients().data() + m.gradients().numel(), 7.f);  // stale values
  m.forward(x);
  m.backward(x, dout, {}, false);
  return std::vector<float>(m.gradients().data(), m.gradients().data() + m.gradients().numel());
}

std::vector<float> slice(const std::vector<float>& v, std::size_t begin, std::size_t end) {
  return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                            v.begin() + static_cast<std::ptrdiff_t>(end));
}
}  // namespace

TEST(Freeze, PatternsNameLayersAndTheirBlocks) {
  EXPECT_EQ(split_patterns(" conv2d.*, h.0,,dense.1 "), (std::vector<std::string>{"conv2d.*", "h.0", "dense.1"}));
  EXPECT_TRUE(split_patterns("").empty());
  EXPECT_TRUE(layer_matches("conv2d.*", "conv2d.3"));
  EXPECT_TRUE(layer_matches("h.0", "h.0.attn.qkv"));  // a block names everything in it
  EXPECT_TRUE(layer_matches("h", "h.11"));            // and a leading part every block
  EXPECT_TRUE(layer_matches("h.*.attn", "h.3.attn.qkv"));
  EXPECT_TRUE(layer_matches("h.0.attn.qkv", "h.0.attn.qkv"));
  EXPECT_FALSE(layer_matches("attn", "h.0.attn"));  // names start at the top
  EXPECT_FALSE(layer_matches("h.1", "h.10"));       // parts end at a '.'
  EXPECT_FALSE(layer_matches("dense.[12]", "dense.3"));
}

TEST(Freeze, WhichLayersAndErrors) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  const Model m(kLayers, {4}, r, alloc);
  EXPECT_EQ(frozen_layers("", m), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(frozen_layers("dense.0, dense.[1]", m), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(frozen_layers("dense.0, relu", m), (std::vector<bool>{true, true, false, false}));
  try {
    frozen_layers("dense.0,nosuch", m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("'nosuch' names no layer (the layers: dense.0, relu.0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(frozen_layers("dense", m), Error);  // nothing would train
}

TEST(Freeze, BucketsLeaveFrozenLayersOut) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m(kLayers, {4}, r, alloc);
  m.set_frozen({false, false, true, false});  // dense.1: [40, 94)
  const auto b = m.store().buckets(1 << 30);  // one bucket without freezing; two around the frozen layer
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].begin, 94);
  EXPECT_EQ(b[0].end, 108);
  EXPECT_EQ(b[0].ready_after, 3u);
  EXPECT_EQ(b[1].begin, 0);
  EXPECT_EQ(b[1].end, 40);
  EXPECT_EQ(b[1].ready_after, 0u);
  // So the optimizer's runs, cut to the buckets, skip the frozen layer: no update, no state.
  Ranges owned(b.begin(), b.end());
  std::sort(owned.begin(), owned.end());
  std::int64_t state = 0;
  const auto runs = own_runs({{{0, 108}, true}}, owned, state);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0] == (Range{0, 40}) && runs[0].state_at() == 0);
  EXPECT_TRUE(runs[1] == (Range{94, 108}) && runs[1].state_at() == 40);
  EXPECT_EQ(state, 54);
}

TEST(Freeze, BackwardKeepsTheTrainingLayersGradientsAndZeroesTheFrozen) {
  const auto all = gradients({});
  const auto zeros = [](std::size_t n) { return std::vector<float>(n, 0.f); };
  // The first layer frozen: backward stops at dense.1 (no input gradient), dense.0's stay zero.
  const auto first = gradients({true, false, false, false});
  EXPECT_EQ(slice(first, 0, 40), zeros(40));
  EXPECT_EQ(slice(first, 40, 108), slice(all, 40, 108));
  // A middle layer frozen: the gradient still flows through it to dense.0.
  const auto middle = gradients({false, false, true, false});
  EXPECT_EQ(slice(middle, 0, 40), slice(all, 0, 40));
  EXPECT_EQ(slice(middle, 40, 94), zeros(54));
  EXPECT_EQ(slice(middle, 94, 108), slice(all, 94, 108));
  EXPECT_NE(slice(all, 40, 94), zeros(54));  // (the frozen layer had a gradient to drop)
}
