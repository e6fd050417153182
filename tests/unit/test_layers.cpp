// Finite-difference gradient checks of every layer and loss (plus a negative
// control: a deliberately wrong backward must fail the checker), forward
// values against direct loops, the two convolutions against each other, the
// layer parser and registry, dropout, batch norm, residual blocks. The model as a whole
// (names, initialization, fusion, stages): test_model.cpp.
//
// Checker: gradient_check.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "gradient_check.hpp"
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;
using unittest::bind_random_params;
using unittest::check_layer;
using unittest::kTolerance;
using unittest::make;
using unittest::random_values;

namespace {

// The negative control: dense whose backward is 1% off.
class WrongDense final : public Layer {
 public:
  const char* type() const override { return "wrong"; }
  Shape output_shape(const Shape&) const override { return {3}; }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    return {{"weight", {3, in[0]}, Init::zeros, in[0], 3}};
  }
  void forward(const Tensor& x, Tensor& y) override { gemm(false, true, 1.f, x, param(0), 0.f, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    gemm(true, false, 1.01f, dy, x, 1.f, grad(0));
    gemm(false, false, 1.f, dy, param(0), 0.f, dx);
  }
};

}  // namespace

// GELU's two forms against their formulas in double (PyTorch's gelu and gelu(approximate='tanh')),
// over the range where they differ most; negative control: the two differ there by more than 1e-4,
// so exchanging them fails (the decoders' small initial activations cannot tell them apart).
TEST(Activations, GeluAndItsTanhFormAgainstTheirFormulas) {
  const std::vector<float> xs{-4.f, -2.5f, -1.5f, -0.3f, 0.f, 0.5f, 1.5f, 2.5f, 3.5f};
  Allocator alloc;
  Tensor x = Tensor::zeros({static_cast<std::int64_t>(xs.size())}, alloc), y = Tensor::zeros(x.shape(), alloc);
  std::copy(xs.begin(), xs.end(), x.data());
  for (const Activation f : {Activation::gelu, Activation::gelu_tanh}) {
    activation_forward(f, x, y);
    double apart = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double v = xs[i], exact = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      const double tanh_form = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      const double want = f == Activation::gelu ? exact : tanh_form, other = f == Activation::gelu ? tanh_form : exact;
      EXPECT_NEAR(y.data()[i], want, 1e-6) << (f == Activation::gelu ? "gelu" : "gelu_tanh") << " at " << v;
      apart = std::max(apart, std::fabs(y.data()[i] - other));
    }
    EXPECT_GT(apart, 1e-4) << "the other form is told apart";
  }
}

TEST(GradientCheck, EveryLayer) {
  EXPECT_LE(check_layer(*make("dense(5)"), {7}, 4), 1.0);
  EXPECT_LE(check_layer(*make("relu"), {3, 4}, 3, true), 1.0);
  EXPECT_LE(check_layer(*make("tanh"), {6}, 3), 1.0);
  EXPECT_LE(check_layer(*make("gelu"), {6}, 3), 1.0);
  EXPECT_LE(check_layer(*make("relu2"), {3, 4}, 3, true), 1.0);
  EXPECT_LE(check_layer(*make("gelu_tanh"), {6}, 3), 1.0);
  EXPECT_LE(check_layer(*make("flatten"), {2, 3, 2}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv(3,3,pad=1)"), {2, 5, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv(2,2,stride=2)"), {3, 6, 6}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv(4,3)"), {5, 5}, 2), 1.0);  // [H, W] input = one channel
  EXPECT_LE(check_layer(*make("maxpool(2)"), {2, 4, 6}, 2, false, true), 1.0);
  EXPECT_LE(check_layer(*make("maxpool(3,stride=2)"), {1, 7, 7}, 2, false, true), 1.0);
  EXPECT_LE(check_layer(*make("avgpool(2)"), {2, 4, 6}, 2), 1.0);
  EXPECT_LE(check_layer(*make("avgpool(3,stride=2)"), {1, 7, 7}, 2), 1.0);
  EXPECT_LE(check_layer(*make("gap"), {3, 4, 5}, 2), 1.0);
  EXPECT_LE(check_layer(*make("dropout(30)"), {4, 6}, 3), 1.0);
  EXPECT_LE(check_layer(*make("batchnorm"), {3, 4, 5}, 3), 1.0);
  EXPECT_LE(check_layer(*make("batchnorm(eps=3)"), {6}, 5), 1.0);
  EXPECT_LE(check_layer(*make("res(dense(6) tanh dense(6))"), {6}, 3), 1.0);
  EXPECT_LE(check_layer(*make("res(conv(2,3,pad=1) tanh conv(2,3,pad=1))"), {2, 4, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("res(batchnorm dense(5) res(tanh dense(5)))"), {5}, 4), 1.0);  // nested
}

// The sequence-model layers ([T, C] activations), attention with and without biases and dropout.
TEST(GradientCheck, SequenceLayers) {
  const std::vector<std::int32_t> ids{3, 0, 6, 3, 1, 2, 6, 5};  // [2, 4]: repeated ids add into one row
  EXPECT_LE(check_layer(*make("embedding(7,3)"), {4}, 2, false, false, &ids), 1.0);
  EXPECT_LE(check_layer(*make("position_embedding"), {4, 3}, 2), 1.0);
  EXPECT_LE(check_layer(*make("layernorm"), {3, 5}, 2), 1.0);
  EXPECT_LE(check_layer(*make("layernorm(bias=0)"), {4, 6}, 2), 1.0);
  EXPECT_LE(check_layer(*make("rmsnorm"), {3, 5}, 2), 1.0);
  EXPECT_LE(check_layer(*make("rmsnorm(eps=6)"), {4, 6}, 2), 1.0);
  EXPECT_LE(check_layer(*make("swiglu"), {3, 8}, 2), 1.0);
  EXPECT_LE(check_layer(*make("geglu"), {3, 8}, 2), 1.0);
  EXPECT_LE(check_layer(*make("rmsnorm(eps=6, offset=1)"), {4, 6}, 2), 1.0);  // Gemma's 1 + weight
  EXPECT_LE(check_layer(*make("attention(2,bias=0,rope=10000)"), {5, 8}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(1,rope=500000)"), {4, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("res(rmsnorm linear(8, bias=0) swiglu linear(4, bias=0))"), {3, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("linear(5)"), {3, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("linear(2,bias=0)"), {3, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("lm_head(6,tie=0)"), {3, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(2)"), {5, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(1,bias=0)"), {3, 2}, 3), 1.0);
  EXPECT_LE(check_layer(*make("attention(2,dropout=30)"), {4, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(2,fused=0)"), {5, 4}, 2), 1.0);  // the probabilities held
  EXPECT_LE(check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,qk_norm=1)"), {6, 16}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(2,kv_heads=1,rope=500000,rope_factor=8,rope_context=4)"), {5, 8}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(2,kv_heads=1,rope=10000,rope_linear=8)"), {5, 8}, 2), 1.0);  // Gemma 3 4B's
  EXPECT_THROW(make("attention(2,rope=10000,rope_linear=8,rope_factor=8)"), Error);                   // (one scaling)
  // Phi-4 mini's: the first 6 of 8 columns rotate, longrope's factors (2 positions past the context of
  // 3: the long ones) and its amplitude on the rotated columns.
  EXPECT_LE(check_layer(*make("attention(2,kv_heads=1,rope=10000,rope_dims=6,rope_context=3,rope_short=1:2:4,"
                              "rope_long=1.5:3:7,rope_amp=1.3)"),
                        {5, 16}, 2),
            1.0);
  // yarn (Qwen's long context): factor 4 over a context of 16, its amplitude; on 6 rotated columns too.
  EXPECT_LE(check_layer(*make("attention(2,kv_heads=1,rope=10000,rope_dims=6,rope_context=16,rope_yarn=4,"
                              "rope_beta_fast=8,rope_amp=1.3)"),
                        {5, 16}, 2),
            1.0);
  EXPECT_THROW(make("attention(2,rope=10000,rope_yarn=4,rope_linear=8)"), Error);     // (one scaling)
  EXPECT_THROW(make("attention(2,rope=10000,rope_yarn=0.5)"), Error);                 // (a factor >= 1)
  EXPECT_THROW(make("attention(2,rope=10000,rope_amp=1.3)"), Error);                  // (longrope's or yarn's)
  EXPECT_THROW(make("attention(2,rope=10000,rope_short=1:2,rope_factor=8)"), Error);  // (one scaling)
  EXPECT_THROW(make("attention(2,rope=10000,rope_short=1:2)"), Error);                // (and rope_long)
  EXPECT_THROW(make("attention(2,rope=10000,rope_short=1:x,rope_long=1:2)"), Error);  // (numbers)
  EXPECT_LE(check_layer(*make("res(layernorm(bias=0) attention(2,bias=0))"), {4, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("attention(4,kv_heads=2,proj_bias=0,rope=10000)"), {5, 16}, 2), 1.0);  // Qwen2's
  EXPECT_LE(check_layer(*make("attention(2,bias=0,proj_bias=1)"), {4, 4}, 2), 1.0);
  EXPECT_LE(
      check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,qk_norm=1,qk_norm_weight=1,qk_eps=5)"), {6, 16}, 2),
      1.0);  // Qwen3's weighted QK-norm before the rotation
  EXPECT_LE(check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,qk_norm=1,qk_norm_weight=1,qk_offset=1)"),
                        {6, 16}, 2),
            1.0);  // Gemma 3's: 1 + weight
  EXPECT_LE(
      check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,qk_norm=1,qk_norm_weight=1,head_dim=6)"), {5, 8}, 2),
      1.0);  // heads wider than C / H (Qwen3 0.6B's)
  EXPECT_LE(
      check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,qk_norm=1,qk_norm_weight=1,qk_whole=1)"), {6, 16}, 2),
      1.0);                                                        // OLMo 2's: over all of a position's heads
  EXPECT_THROW(make("attention(4,qk_norm=1,qk_whole=1)"), Error);  // (it spans the weighted norm)
  EXPECT_LE(check_layer(*make("attention(4,kv_heads=2,bias=0,rope=10000,window=3)"), {7, 16}, 2), 1.0);  // Mistral's
  EXPECT_THROW(make("attention(2,window=3,fused=0)"), Error);  // (the held probabilities have no window)
  EXPECT_LE(check_layer(*make("attention(2,bias=0,rope=10000,softcap=1)"), {6, 8}, 2), 1.0);  // Gemma 2's
  EXPECT_LE(check_layer(*make("lm_head(6,tie=0,softcap=1)"), {3, 4}, 2), 1.0);
}

// RMS norm's forward against the formula in double: y = x / sqrt(mean(x^2) + 1e-5) * w, per row;
// with eps=2 (1e-2) the outputs move (a negative control for the eps argument).
TEST(RmsNorm, ForwardIsTheFormula) {
  Allocator alloc;
  for (const int eps : {5, 2, 0}) {  // (0: Gemma's offset=1, the formula's weight 1 + w)
    auto layer = make(eps == 5 ? "rmsnorm" : eps == 2 ? "rmsnorm(eps=2)" : "rmsnorm(offset=1)");
    layer->configure({3, 6});
    StepContext ctx;
    layer->set_context(&ctx, 0);
    const Tensor w = bind_random_params(*layer, {3, 6}, alloc, 5)[0];  // w random, not ones
    Tensor x = Tensor::zeros({2, 3, 6}, alloc), y = Tensor::zeros({2, 3, 6}, alloc);
    const auto v = random_values(36, 6);
    std::copy(v.begin(), v.end(), x.data());
    layer->forward(x, y);
    double worst = 0, moved = 0;
    for (int r = 0; r < 6; ++r) {
      double ss = 0;
      for (int j = 0; j < 6; ++j) ss += static_cast<double>(x.data()[r * 6 + j]) * x.data()[r * 6 + j];
      const double inv = 1 / std::sqrt(ss / 6 + 1e-5);
      for (int j = 0; j < 6; ++j) {
        const double want = x.data()[r * 6 + j] * inv * (w.data()[j] + (eps == 0 ? 1.0 : 0.0));
        worst = std::max(worst, std::fabs(y.data()[r * 6 + j] - want) / (std::fabs(want) + 1e-6));
        moved = std::max(moved, std::fabs(y.data()[r * 6 + j] - want));
      }
    }
    if (eps != 2)
      EXPECT_LT(worst, 1e-5);
    else
      EXPECT_GT(moved, 1e-4);  // 1e-2 instead of 1e-5 changes the outputs
  }
}

// An epsilon given itself (eps=E below 1, GLM-4 9B's 1.5625e-07) is the formula's: eps=0.25 against
// the formula in double, eps=0.01 the same floats as eps=2; a whole number is a power, 0 and 1.5 refused.
TEST(RmsNorm, EpsilonGivenItself) {
  Allocator alloc;
  const auto run = [&](const std::string& text) {
    auto layer = make(text);
    layer->configure({3, 6});
    StepContext ctx;
    layer->set_context(&ctx, 0);
    bind_random_params(*layer, {3, 6}, alloc, 5);  // (the same weights each time: seed 5)
    Tensor x = Tensor::zeros({2, 3, 6}, alloc), y = Tensor::zeros({2, 3, 6}, alloc);
    const auto v = random_values(36, 6);
    std::copy(v.begin(), v.end(), x.data());
    layer->forward(x, y);
    return std::vector<float>(y.data(), y.data() + 36);
  };
  const std::vector<float> quarter = run("rmsnorm(eps=0.25)"), plain = run("rmsnorm(offset=0)");
  const auto v = random_values(36, 6);
  double worst = 0;
  for (int r = 0; r < 6; ++r) {  // (y / w: the weights cancel in the ratio of the two runs)
    double ss = 0;
    for (int j = 0; j < 6; ++j) ss += static_cast<double>(v[r * 6 + j]) * v[r * 6 + j];
    const double ratio = std::sqrt((ss / 6 + 1e-5) / (ss / 6 + 0.25));
    for (int j = 0; j < 6; ++j)
      if (std::fabs(plain[r * 6 + j]) > 1e-3)
        worst = std::max(worst, std::fabs(quarter[r * 6 + j] / plain[r * 6 + j] - ratio) / ratio);
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_EQ(run("rmsnorm(eps=0.01)"), run("rmsnorm(eps=2)"));
  EXPECT_NE(run("rmsnorm(eps=1.5625e-07)"), run("rmsnorm(eps=2)"));
  EXPECT_THROW(make("rmsnorm(eps=0)"), Error);
  EXPECT_THROW(make("rmsnorm(eps=1.5)"), Error);
  EXPECT_THROW(make("attention(2,qk_norm=1,qk_norm_weight=1,qk_eps=-1)"), Error);
}

// Attention's causality: changing a later position's input leaves the earlier outputs as they were.
TEST(Attention, EarlierPositionsDoNotSeeLaterOnes) {
  Allocator alloc;
  auto layer = make("attention(2)");
  layer->configure({5, 4});
  StepContext ctx;
  layer->set_context(&ctx, 0);
  bind_random_params(*layer, {5, 4}, alloc, 3);
  Tensor x = Tensor::zeros({1, 5, 4}, alloc), y = Tensor::zeros({1, 5, 4}, alloc), y2 = Tensor::zeros({1, 5, 4}, alloc);
  const auto v = random_values(20, 4);
  std::copy(v.begin(), v.end(), x.data());
  layer->forward(x, y);
  for (int j = 12; j < 20; ++j) x.data()[j] += 0.5f;  // positions 3 and 4
  layer->forward(x, y2);
  for (int j = 0; j < 12; ++j) EXPECT_EQ(y.data()[j], y2.data()[j]) << j;
  double moved = 0;
  for (int j = 12; j < 20; ++j) moved += std::fabs(y.data()[j] - y2.data()[j]);
  EXPECT_GT(moved, 1e-3);
}

// Named numbers (layer_named_number, layer_named_std): a whole finite number in range, else one
// line naming the layer, the key and the value.
TEST(LayerParser, NamedNumbersAreCheckedWithOneLine) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  const auto message = [&](const std::string& layers) {
    try {
      Model m(layers, {3}, r, alloc);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("embedding(5, 4, std=0) lm_head(5, softcap=2.5)"), "accepted");
  for (const char* bad : {"-1", "inf", "nan", "2x", ""})
    EXPECT_NE(message(std::string("embedding(5, 4) lm_head(5, softcap=") + bad + ")")
                  .find(std::string("lm_head(5, softcap=") + bad + "): softcap = '" + bad + "' must be a number >= 0"),
              std::string::npos)
        << bad;
  for (const char* bad : {"10", "-0.1", "abc", "0.5x"})
    EXPECT_NE(
        message(std::string("embedding(5, 4, std=") + bad + ") lm_head(5)")
            .find(std::string("std = '") + bad + "' must be a number >= 0 (the initial weights' standard deviation"),
        std::string::npos)
        << bad;
}

TEST(LayerParser, RepeatWritesTheLayersOut) {
  const auto a =
      parse_layers("embedding(5,4) repeat(3, res(layernorm attention(2)) res(linear(8) gelu linear(4))) lm_head(5)");
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[1].type, "res");
  EXPECT_EQ(a[2].body, a[4].body);
  EXPECT_EQ(a[7].type, "lm_head");
  EXPECT_THROW(parse_layers("repeat(0, relu)"), Error);
  EXPECT_THROW(parse_layers("repeat(relu)"), Error);
  EXPECT_THROW(parse_layers("repeat(2x, relu)"), Error);
  EXPECT_EQ(parse_layers("repeat(10000, relu)").size(), 10000u);
  try {  // (the message names the limit: it said ">= 1" for 100000)
    parse_layers("repeat(10001, relu)");
    ADD_FAILURE() << "repeat(10001, ...) accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a count from 1 to 10000"), std::string::npos) << e.what();
  }
}

// --help prints one usage line per registered type; each starts with its own type.
TEST(LayerRegistry, EveryTypeHasItsUsageLine) {
  LayerRegistry registry;
  register_builtin_layers(registry);
  const auto types = registry.types();
  const auto usages = registry.usages();
  ASSERT_EQ(types.size(), usages.size());
  ASSERT_GT(types.size(), 15u);
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string& u = usages[i];
    EXPECT_EQ(u.rfind(types[i], 0), 0u) << u;
    const char next = u.size() > types[i].size() ? u[types[i].size()] : '\0';
    EXPECT_TRUE(next == '(' || next == ':' || next == '\0') << u;
  }
}

// The forward values of conv and max pool against direct loops over the
// definition (the gradient checks above only test forward against backward).
TEST(ForwardReference, ConvAndMaxPoolEqualDirectLoops) {
  Allocator alloc;
  struct Case {
    std::int64_t c, h, w, out, k, pad, stride;
  };
  for (const Case& t : {Case{1, 7, 6, 2, 3, 1, 1}, Case{3, 7, 7, 2, 3, 1, 2}, Case{2, 9, 8, 3, 3, 2, 3},
                        Case{2, 5, 5, 1, 1, 0, 1}, Case{1, 6, 6, 2, 2, 0, 2}}) {
    const std::string text = "conv(" + std::to_string(t.out) + "," + std::to_string(t.k) +
                             ",pad=" + std::to_string(t.pad) + ",stride=" + std::to_string(t.stride) + ")";
    auto conv = make(text);
    const Shape in{t.c, t.h, t.w}, out = conv->output_shape(in);
    conv->configure(in);
    const auto params = bind_random_params(*conv, in, alloc, 11);
    const std::int64_t batch = 2;
    Tensor x = Tensor::zeros({batch, t.c, t.h, t.w}, alloc), y = Tensor::zeros({batch, out[0], out[1], out[2]}, alloc);
    const auto xv = random_values(x.numel(), 5);
    std::copy(xv.begin(), xv.end(), x.data());
    conv->forward(x, y);
    const float* wt = params[0].data();
    double worst = 0;
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t o = 0; o < out[0]; ++o)
        for (std::int64_t i = 0; i < out[1]; ++i)
          for (std::int64_t j = 0; j < out[2]; ++j) {
            double s = params[1].data()[o];
            for (std::int64_t c = 0; c < t.c; ++c)
              for (std::int64_t a = 0; a < t.k; ++a)
                for (std::int64_t b = 0; b < t.k; ++b) {
                  const std::int64_t h = i * t.stride - t.pad + a, w = j * t.stride - t.pad + b;
                  if (h >= 0 && h < t.h && w >= 0 && w < t.w)
                    s += static_cast<double>(wt[((o * t.c + c) * t.k + a) * t.k + b]) *
                         x.data()[((n * t.c + c) * t.h + h) * t.w + w];
                }
            worst = std::max(worst, std::fabs(s - y.data()[((n * out[0] + o) * out[1] + i) * out[2] + j]));
          }
    EXPECT_LT(worst, 1e-5) << text << " on " << shape_string(in);
  }
  for (const auto& [text, k, stride] : {std::tuple{"maxpool(2)", 2, 2}, std::tuple{"maxpool(3,stride=2)", 3, 2}}) {
    auto pool = make(text);
    const Shape in{2, 7, 6}, out = pool->output_shape(in);
    pool->configure(in);
    Tensor x = Tensor::zeros({1, 2, 7, 6}, alloc), y = Tensor::zeros({1, out[0], out[1], out[2]}, alloc);
    const auto xv = random_values(x.numel(), 8);
    std::copy(xv.begin(), xv.end(), x.data());
    pool->forward(x, y);
    for (std::int64_t c = 0; c < 2; ++c)
      for (std::int64_t i = 0; i < out[1]; ++i)
        for (std::int64_t j = 0; j < out[2]; ++j) {
          float m = -1e30f;
          for (int a = 0; a < k; ++a)
            for (int b = 0; b < k; ++b) m = std::max(m, x.data()[(c * 7 + i * stride + a) * 6 + j * stride + b]);
          EXPECT_EQ(m, y.data()[(c * out[1] + i) * out[2] + j]) << text;
        }
  }
}

// The two CPU convolutions compute the same thing: oneDNN's against im2col +
// GEMM (forward, input and parameter gradients, accumulation over micro-batches),
// within 1e-4 relative (different summation orders), also with oneDNN in bf16 math
// (on bf16-valued operands), and oneDNN's gradients pass the finite-difference
// checker on their own.
TEST(ConvImplementations, OnednnEqualsIm2colGemm) {
  if (!cpu::onednn_compiled()) GTEST_SKIP() << "built without oneDNN (libdnnl-dev)";
  EXPECT_LE(check_layer(*make("conv(3,3,pad=1)", ConvImpl::onednn), {2, 5, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv(2,2,stride=2)", ConvImpl::onednn), {3, 6, 6}, 2), 1.0);
  Allocator alloc;
  // (oneDNN 2.x makes bf16 primitives on AVX-512 CPUs only: elsewhere the bf16 part is left out)
  const bool bf16 = cpu::bf16_gemm_available();
  if (!bf16) std::printf("no bf16 part: oneDNN makes no bf16 primitive on this CPU\n");
  for (const char* text : {"conv(8,3,pad=1)", "conv(4,3,pad=2,stride=2)", "conv(5,1)", "conv(6,5,pad=2)"}) {
    const Shape in{3, 9, 8};
    const std::int64_t batch = 5;
    std::vector<Tensor> y, dx, grads[3];
    for (int e = 0; e < (bf16 ? 3 : 2); ++e) {  // im2col + GEMM, oneDNN, oneDNN with bf16 math
      auto conv = make(text, e == 0 ? ConvImpl::im2col : ConvImpl::onednn);
      const Shape out = conv->output_shape(in);
      conv->configure(in);
      std::vector<Tensor> g;
      for (Tensor& w : bind_random_params(*conv, in, alloc, 21, &g)) round_to_precision(w, Precision::bf16);
      Tensor x = Tensor::zeros({batch, in[0], in[1], in[2]}, alloc);
      Tensor yy = Tensor::zeros({batch, out[0], out[1], out[2]}, alloc), dy = Tensor::zeros(yy.shape(), alloc);
      Tensor dxx = Tensor::zeros(x.shape(), alloc);
      const auto xv = random_values(x.numel(), 31), dv = random_values(dy.numel(), 32);
      std::copy(xv.begin(), xv.end(), x.data());
      std::copy(dv.begin(), dv.end(), dy.data());
      round_to_precision(x, Precision::bf16);  // bf16 values: bf16 math multiplies them exactly
      round_to_precision(dy, Precision::bf16);
      cpu::set_bf16_math(e == 2);
      conv->forward(x, yy);
      conv->set_accumulate_grads(false);
      conv->backward(x, yy, dy, dxx);
      conv->set_accumulate_grads(true);  // a second micro-batch adds: the gradients double
      conv->backward(x, yy, dy, dxx);
      cpu::set_bf16_math(false);
      y.push_back(yy);
      dx.push_back(dxx);
      grads[e] = g;
    }
    auto worst = [](const Tensor& a, const Tensor& b) {
      double w = 0;
      for (std::int64_t i = 0; i < a.numel(); ++i)
        w = std::max(w, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]) /
                            std::max(1.0, std::fabs(static_cast<double>(a.data()[i]))));
      return w;
    };
    EXPECT_LT(worst(y[0], y[1]), 1e-4) << text << " forward";
    EXPECT_LT(worst(dx[0], dx[1]), 1e-4) << text << " input gradient";
    EXPECT_LT(worst(grads[0][0], grads[1][0]), 1e-4) << text << " weight gradient (accumulated)";
    EXPECT_LT(worst(grads[0][1], grads[1][1]), 1e-4) << text << " bias gradient (accumulated)";
    if (!bf16) continue;
    // oneDNN in bf16 against im2col + GEMM in float32, on bf16 values: the same products.
    EXPECT_LT(worst(y[0], y[2]), 1e-4) << text << " bf16 forward";
    EXPECT_LT(worst(dx[0], dx[2]), 1e-4) << text << " bf16 input gradient";
    EXPECT_LT(worst(grads[0][0], grads[2][0]), 1e-4) << text << " bf16 weight gradient";
    EXPECT_LT(worst(grads[0][1], grads[2][1]), 1e-4) << text << " bf16 bias gradient";
  }
}

TEST(GradientCheck, NegativeControlFails) {
  WrongDense wrong;
  EXPECT_GT(check_layer(wrong, {6}, 4), 1.0) << "a 1% error in a gradient must fail the checker";
}

TEST(Loss, SoftmaxTrainingWritesTheGradientAndEvaluationTheSameSumsOnly) {
  // Training's call writes the gradient into dout (no [rows, classes] buffer of the loss's own);
  // evaluation's gives the same sums and leaves its scratch buffer as it was.
  Allocator alloc;
  auto loss = make_loss(true);
  Tensor out = Tensor::zeros({2, 3}, alloc), d = Tensor::zeros({2, 3}, alloc), work = Tensor::zeros({2, 3}, alloc);
  fill(work, 7.f);
  std::vector<std::int32_t> classes{0, 2};
  Targets t;
  t.classes = classes.data();
  Tensor trained = step_scalars::make(alloc), evaluated = step_scalars::make(alloc);
  loss->forward_backward(out, t, 0.5f, trained, d);  // equal logits: p = 1/3; the labels' entries p - 1
  EXPECT_NEAR(d.data()[0], 0.5f * (1.f / 3 - 1), 1e-6);
  EXPECT_NEAR(d.data()[1], 0.5f / 3, 1e-6);
  EXPECT_NEAR(d.data()[5], 0.5f * (1.f / 3 - 1), 1e-6);
  loss->forward(out, t, evaluated, work);
  EXPECT_EQ(step_scalars::to_host(evaluated), step_scalars::to_host(trained));
  EXPECT_NEAR(step_scalars::to_host(evaluated)[step_scalars::loss_sum], 2 * std::log(3.0), 1e-6);
  for (std::int64_t i = 0; i < work.numel(); ++i) EXPECT_EQ(work.data()[i], 7.f) << i;
}

TEST(GradientCheck, EveryLoss) {
  Allocator alloc;
  for (const bool classification : {true, false}) {
    auto loss = make_loss(classification);
    const std::int64_t rows = 4, cols = 5;
    Tensor out = Tensor::zeros({rows, cols}, alloc), d = Tensor::zeros({rows, cols}, alloc),
           work = Tensor::zeros({rows, cols}, alloc);
    const auto v = random_values(rows * cols, 3);
    std::copy(v.begin(), v.end(), out.data());
    std::vector<std::int32_t> classes{0, 4, 2, 2};
    const auto tv = random_values(rows * cols, 4);
    Targets t;
    t.classes = classes.data();
    t.values = tv.data();
    Tensor scalars = step_scalars::make(alloc);
    auto mean_loss = [&](Tensor& into) {  // the loss adds its row sum and row count to the step scalars
      fill(scalars, 0.f);
      loss->forward(out, t, scalars, into);
      const auto h = step_scalars::to_host(scalars);
      EXPECT_EQ(h[step_scalars::samples], static_cast<float>(rows));
      return static_cast<double>(h[step_scalars::loss_sum]) / rows;
    };
    fill(scalars, 0.f);
    loss->forward_backward(out, t, 1.f / rows, scalars, d);  // gradient of the mean
    const float h = 1e-2f;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      const float keep = out.data()[i];
      out.data()[i] = keep + h;
      const double up = mean_loss(work);
      out.data()[i] = keep - h;
      const double down = mean_loss(work);
      out.data()[i] = keep;
      const double numeric = (up - down) / (2.0 * h);
      EXPECT_NEAR(d.data()[i], numeric, kTolerance * std::max(1.0, std::fabs(numeric))) << loss->name() << " " << i;
    }
  }
}

TEST(Dropout, TrainingOnlyRateAndIndependentOfRowPlacement) {
  Allocator alloc;
  auto layer = make("dropout(25)");
  layer->configure({1000});
  StepContext ctx;
  layer->set_context(&ctx, 2);
  Tensor x = Tensor::zeros({2, 1000}, alloc), y = Tensor::zeros({2, 1000}, alloc);
  fill(x, 1.f);
  std::int64_t ids[2] = {7, 8};
  ctx.sample_ids = ids;
  ctx.training = false;  // evaluation: the identity
  layer->forward(x, y);
  EXPECT_EQ(sum_of_squares(y), 2000.0);
  ctx.training = true;
  ctx.seed = 1;
  ctx.step = 10;
  layer->forward(x, y);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < 2000; ++i) {
    if (y.data()[i] != 0.f) {
      ++kept;
      EXPECT_FLOAT_EQ(y.data()[i], 1.f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / 2000.0, 0.75, 0.04);
  // The same samples in the other order (another rank's slice, say): the same mask per sample.
  std::vector<float> first(y.data(), y.data() + 2000);
  std::int64_t swapped[2] = {8, 7};
  ctx.sample_ids = swapped;
  layer->forward(x, y);
  EXPECT_TRUE(std::equal(first.begin(), first.begin() + 1000, y.data() + 1000));
  EXPECT_TRUE(std::equal(first.begin() + 1000, first.end(), y.data()));
  // Another step draws another mask.
  ctx.sample_ids = ids;
  ctx.step = 11;
  layer->forward(x, y);
  EXPECT_FALSE(std::equal(first.begin(), first.end(), y.data()));
}

TEST(BatchNorm, RunningStatisticsAndEvaluation) {
  Allocator alloc;
  auto layer = make("batchnorm");
  layer->configure({2});
  Tensor gamma = Tensor::zeros({2}, alloc), beta = Tensor::zeros({2}, alloc), gg = Tensor::zeros({2}, alloc),
         gb = Tensor::zeros({2}, alloc);
  fill(gamma, 1.f);
  layer->bind({gamma, beta}, {gg, gb});
  StepContext ctx;
  ctx.training = true;
  layer->set_context(&ctx, 0);
  Tensor x = Tensor::zeros({4, 2}, alloc), y = Tensor::zeros({4, 2}, alloc);
  const float v[8] = {1, 10, 2, 20, 3, 30, 6, 40};  // channel 0: 1 2 3 6 (mean 3, var 3.5), channel 1: mean 25
  std::copy(v, v + 8, x.data());
  layer->forward(x, y);
  EXPECT_NEAR(y.data()[0], (1 - 3) / std::sqrt(3.5 + 1e-5), 1e-5);  // normalized with the batch statistics
  auto bufs = layer->buffers();
  ASSERT_EQ(bufs.size(), 2u);
  EXPECT_EQ(bufs[0].first, "running_mean");
  EXPECT_NEAR((*bufs[0].second)[0], 0.1 * 3, 1e-6);                        // 0.9 * 0 + 0.1 * mean
  EXPECT_NEAR((*bufs[1].second)[0], 0.9 * 1 + 0.1 * (3.5 * 4 / 3), 1e-5);  // unbiased variance
  ctx.training = false;                                                    // evaluation: the running statistics
  layer->forward(x, y);
  EXPECT_NEAR(y.data()[0], (1 - 0.3) / std::sqrt(0.9 + 0.1 * 3.5 * 4 / 3 + 1e-5), 1e-5);
}

TEST(Residual, NamesShapesAndErrors) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m("flatten res(dense(16) relu dense(16)) dense(3)", {4, 4}, r, alloc);
  ASSERT_EQ(m.param_info().size(), 6u);
  EXPECT_EQ(m.param_info()[0].name, "res.0.dense.0.weight");
  EXPECT_EQ(m.param_info()[3].name, "res.0.dense.1.bias");
  EXPECT_EQ(m.param_info()[3].legacy, "01_res/02_dense/bias");
  EXPECT_EQ(m.param_info()[4].name, "dense.0.weight");
  EXPECT_EQ(m.store().layer(1), (Range{0, 2 * (16 * 16 + 16)}));
  try {
    Model bad("flatten res(dense(5))", {4, 4}, r, alloc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("res(dense(5)) changes the shape [16] -> [5]; a residual block must keep it"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Model("flatten res(dense(16)", {4, 4}, r, alloc), Error);  // unclosed
}
