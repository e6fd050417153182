// The model as a whole: a tied head and embedding (its gradient checked by finite differences
// through the model), parameter names, shapes and errors, initialization (deterministic, scaled,
// the same bits on any number of threads), a pipeline stage's range of the layers, fusion of a
// layer with the activation after it (the same bits as the two run apart) and the gradient
// buckets' order. The layers one by one: test_layers.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gradient_check.hpp"
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;
using unittest::kTolerance;
using unittest::random_values;
using unittest::weighted_sum;

// A tied head and embedding share one weight: one parameter in the model, and its gradient is the
// sum of both uses (checked by finite differences through the whole model).
TEST(Model, TiedEmbeddingGradientIsTheSumOfBothUses) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m("embedding(6,4) position_embedding layernorm lm_head(6)", {3}, r, alloc);
  EXPECT_EQ(m.param_info().size(), 4u);  // embedding (shared with the head), position embedding, norm weight, bias
  const auto start = random_values(m.parameters().numel(), 5);  // O(1) values: central differences stay accurate
  std::copy(start.begin(), start.end(), m.parameters().data());
  m.set_batch(2);
  Tensor x = Tensor::zeros({2, 3}, alloc, DType::i32);
  const std::int32_t ids[] = {1, 4, 4, 0, 5, 1};
  std::copy(ids, ids + 6, x.data_as<std::int32_t>());
  const auto r2 = random_values(2 * 3 * 6, 8);
  Tensor dout = Tensor::zeros({2, 3, 6}, alloc);
  std::copy(r2.begin(), r2.end(), dout.data());
  m.forward(x);
  m.backward(x, dout, {}, false);
  const Tensor& w = m.parameters();
  std::vector<float> analytic = to_host(m.gradients());
  double worst = 0;
  for (std::int64_t i = 0; i < 24; ++i) {  // the tied table
    float* p = m.parameters().data() + i;
    const float keep = *p;
    *p = keep + 1e-2f;
    const double up = weighted_sum(m.forward(x), r2);
    *p = keep - 1e-2f;
    const double down = weighted_sum(m.forward(x), r2);
    *p = keep;
    const double numeric = (up - down) / 2e-2;
    worst =
        std::max(worst, std::fabs(analytic[static_cast<std::size_t>(i)] - numeric) / std::max(1.0, std::fabs(numeric)));
  }
  (void)w;
  EXPECT_LE(worst, kTolerance);
  EXPECT_THROW(Model("linear(4) lm_head(6)", {3, 4}, r, alloc), Error);      // nothing to tie to
  EXPECT_THROW(Model("embedding(5,4) lm_head(6)", {3}, r, alloc), Error);    // shapes differ
  EXPECT_NO_THROW(Model("embedding(5,4) lm_head(6,tie=0)", {3}, r, alloc));  // untied: its own weight
}

TEST(Model, NamesShapesAndErrors) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m("flatten dense(16) relu dense(10)", {4, 4}, r, alloc);
  ASSERT_EQ(m.param_info().size(), 4u);
  EXPECT_EQ(m.param_info()[0].name, "dense.0.weight");     // named by type and count (layer_names)
  EXPECT_EQ(m.param_info()[0].legacy, "01_dense/weight");  // format 1's positional name
  EXPECT_EQ(m.param_info()[0].layer, 1u);
  EXPECT_EQ(m.param_info()[0].shape, (Shape{16, 16}));
  EXPECT_EQ(m.param_info()[3].name, "dense.1.bias");
  EXPECT_EQ(m.parameters().numel(), 16 * 16 + 16 + 10 * 16 + 10);
  EXPECT_EQ(m.output_shape(), (Shape{10}));
  EXPECT_NE(m.summary().find("dense.1"), std::string::npos);
  auto message = [&](const std::string& layers, const Shape& in) {
    try {
      Model bad(layers, in, r, alloc);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The known types are the registry's, in order (a new layer needs no edit here); a few by name.
  std::string known;
  for (const std::string& t : r.types()) known += (known.empty() ? "" : ", ") + t;
  for (const char* t : {"attention", "conv", "dense", "lm_head", "relu", "res"})
    EXPECT_NE(known.find(t), std::string::npos) << t;
  EXPECT_NE(message("flatten dnse(3)", {4}).find("unknown layer type 'dnse' in 'dnse(3)' (known: " + known + ")"),
            std::string::npos);
  // Other frameworks' names: case, PyTorch's and Keras's, and a softmax layer (the loss has it).
  EXPECT_NE(message("flatten Dense(3)", {4}).find("(did you mean dense? layer types are lower case)"),
            std::string::npos);
  EXPECT_NE(message("conv2d(8, 3)", {1, 4, 4}).find("'conv2d(8, 3)' (did you mean conv?)"), std::string::npos);
  EXPECT_NE(message("flatten dense(3) softmax", {4}).find("the loss includes the softmax"), std::string::npos);
  EXPECT_NE(message("dense(3)", {4, 4}).find("needs a flat input, got [4, 4] (insert 'flatten' before it)"),
            std::string::npos);
  EXPECT_NE(message("dense", {4}).find("dense needs the number of outputs"), std::string::npos);
  EXPECT_NE(message("dense(x)", {4}).find("argument 'x' of dense is not an integer"), std::string::npos);
  EXPECT_NE(message("relu(2)", {4}).find("relu(2) takes no arguments"), std::string::npos);
}

TEST(Model, InitializationIsDeterministicAndScaled) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model a("dense(200)", {400}, r, alloc), b("dense(200)", {400}, r, alloc);
  a.init_parameters(5);
  b.init_parameters(5);
  EXPECT_EQ(std::memcmp(a.parameters().data(), b.parameters().data(), sizeof(float) * 80200), 0);
  b.init_parameters(6);
  EXPECT_NE(std::memcmp(a.parameters().data(), b.parameters().data(), sizeof(float) * 80200), 0);
  // He normal: weight variance 2 / fan_in.
  const Tensor w = a.parameters().view(0, {200, 400});
  const double var = sum_of_squares(w) / static_cast<double>(w.numel());
  EXPECT_NEAR(var, 2.0 / 400, 0.05 * 2.0 / 400);
}

// Initialization on several threads gives the serial bits, whatever the thread count and however
// the thread ranges cut the parameters (a cut inside a tensor and one at a boundary).
TEST(Model, ThreadedInitializationEqualsSerial) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m("dense(37) relu dense(11) layernorm", {29}, r, alloc);
  const std::int64_t total = m.parameters().numel();
  std::vector<float> serial(static_cast<std::size_t>(total), -7.f);
  fill_initial_values(m.param_info(), 9, serial.data(), total, 1);
  for (float v : serial) ASSERT_NE(v, -7.f);  // every element written
  for (int threads : {2, 3, 7, 64, 10000}) {
    std::vector<float> par(static_cast<std::size_t>(total), -7.f);
    fill_initial_values(m.param_info(), 9, par.data(), total, threads);
    EXPECT_EQ(std::memcmp(serial.data(), par.data(), sizeof(float) * serial.size()), 0) << threads << " threads";
  }
  m.init_parameters(9);  // the model's own call gives the same values
  EXPECT_EQ(std::memcmp(serial.data(), m.parameters().data(), sizeof(float) * serial.size()), 0);
}

// A pipeline stage's model holds a range of the layers with their model-wide names,
// initial values and dropout keys, and the whole model's layout for checkpoints; the stages'
// forward passes chained equal the whole model's.
TEST(Model, LayerRangesOfOneModel) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  const std::string layers = "flatten dense(6) tanh dropout(30) dense(5) batchnorm dense(3)";
  Model whole(layers, {2, 4}, r, alloc), head(layers, {2, 4}, r, alloc, 0, 3), tail(layers, {2, 4}, r, alloc, 3, 7);
  for (Model* m : {&whole, &head, &tail}) m->init_parameters(9);
  EXPECT_EQ(head.layer_names(), (std::vector<std::string>{"flatten.0", "dense.0", "tanh.0"}));
  EXPECT_EQ(tail.layer_names().front(), "dropout.0");
  EXPECT_EQ(tail.first_layer(), 3u);
  EXPECT_EQ(tail.all_layer_names(), whole.layer_names());
  EXPECT_EQ(tail.all_param_info().size(), whole.param_info().size());
  EXPECT_EQ(head.all_buffers().size(), 2u);  // the batch norm's running statistics, held by the tail
  EXPECT_EQ(head.parameters().numel() + tail.parameters().numel(), whole.parameters().numel());
  EXPECT_EQ(std::memcmp(head.parameters().data(), whole.parameters().data(), sizeof(float) * 54), 0);
  EXPECT_EQ(std::memcmp(tail.parameters().data(), whole.parameters().data() + 54,
                        sizeof(float) * static_cast<std::size_t>(tail.parameters().numel())),
            0);
  const std::int64_t rows = 4;
  std::vector<std::int64_t> ids{7, 8, 9, 10};
  for (Model* m : {&whole, &head, &tail}) {
    m->set_batch(rows);
    m->context().training = true;
    m->context().seed = 3;
    m->context().step = 2;
    m->context().sample_ids = ids.data();
  }
  const auto xv = random_values(rows * 8, 4);
  Tensor x = Tensor::zeros({rows, 2, 4}, alloc);
  std::copy(xv.begin(), xv.end(), x.data());
  const Tensor& y = whole.forward(x);
  const Tensor& mid = head.forward(x);
  const Tensor& y2 = tail.forward(mid);
  ASSERT_EQ(y.numel(), y2.numel());
  EXPECT_EQ(std::memcmp(y.data(), y2.data(), sizeof(float) * static_cast<std::size_t>(y.numel())), 0);
}

namespace {
// A model of `layers` on input `in` (per sample) with random parameters, input and output
// gradient (seeded from `seed`), batch `rows`, fusion on or off: its output and its gradients.
std::pair<std::vector<float>, std::vector<float>> fused_or_not(const std::string& layers, const Shape& in,
                                                               std::int64_t rows, bool fused, std::uint32_t seed) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  Model m(layers, in, r, alloc);
  const auto pv = random_values(m.parameters().numel(), seed);  // biases too (they start at zero)
  std::copy(pv.begin(), pv.end(), m.parameters().data());
  m.set_fusion(fused);
  m.set_batch(rows);
  Shape xs{rows};
  xs.insert(xs.end(), in.begin(), in.end());
  Tensor x = Tensor::zeros(xs, alloc);
  const auto xv = random_values(x.numel(), seed + 1);
  std::copy(xv.begin(), xv.end(), x.data());
  std::vector<float> out = to_host(m.forward(x));
  const auto dv = random_values(m.dout().numel(), seed + 2);
  std::copy(dv.begin(), dv.end(), m.dout().data());
  m.backward(x, m.dout());
  return {out, to_host(m.gradients())};
}
}  // namespace

// The model runs dense + activation through one fused pass: outputs, input-side gradients and
// parameter gradients are the same bits as running the two layers one after the other.
TEST(ModelFusion, DenseActivationFusedEqualsSeparate) {
  const std::string layers = "flatten dense(16) relu dense(12) gelu dense(8) tanh dense(3) res(dense(3) relu) relu";
  const auto [out0, grads0] = fused_or_not(layers, {2, 5}, 4, false, 69);
  const auto [out1, grads1] = fused_or_not(layers, {2, 5}, 4, true, 69);
  EXPECT_EQ(out0, out1);
  EXPECT_EQ(grads0, grads1);
  EXPECT_GT(std::fabs(out1[0]) + std::fabs(out1[1]), 0.f);
}

// conv + relu with oneDNN: ReLU as the convolution's post-op (one pass) gives the outputs and
// every gradient of the two layers run one after the other (same bits here; stated tolerance
// 1e-6 relative, oneDNN being free to pick another kernel for the fused primitive); tanh after a
// conv is not fused and stays exact (the one-channel im2col path: the next test).
TEST(ModelFusion, ConvReluFusedEqualsSeparate) {
  if (!cpu::onednn_compiled()) GTEST_SKIP() << "built without oneDNN: conv + relu is not fused";
  const std::string layers = "conv(4,3,pad=1) relu conv(6,3,pad=1) relu conv(3,3) tanh flatten dense(5)";
  std::vector<float> out[2], grads[2];
  for (int fused = 0; fused < 2; ++fused)
    std::tie(out[fused], grads[fused]) = fused_or_not(layers, {2, 7, 7}, 3, fused == 1, 81);
  auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0, biggest = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
      biggest = std::max(biggest, std::fabs(static_cast<double>(b[i])));
    }
    return worst <= 1e-6 * (1 + biggest);
  };
  ASSERT_EQ(out[0].size(), out[1].size());
  EXPECT_TRUE(close(out[1], out[0]));
  EXPECT_TRUE(close(grads[1], grads[0]));
  EXPECT_GT(std::fabs(out[1][0]) + std::fabs(grads[1][0]), 0.f);
}

// conv + relu on the im2col path (one input channel): the bias and ReLU applied per sample while
// its output is in cache give the same bits as the two layers, outputs and every gradient.
TEST(ModelFusion, Im2colConvReluFusedIsExact) {
  const std::string layers = "conv(4,3,pad=1) relu maxpool(2) flatten dense(5)";
  const auto [out0, grads0] = fused_or_not(layers, {1, 8, 8}, 3, false, 91);
  const auto [out1, grads1] = fused_or_not(layers, {1, 8, 8}, 3, true, 91);
  EXPECT_EQ(out1, out0);
  EXPECT_EQ(grads1, grads0);
  EXPECT_GT(std::fabs(out1[0]) + std::fabs(grads1[0]), 0.f);
}

TEST(GradientBuckets, ReverseLayerOrderWholeLayersAndSize) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r);
  // Parameters: 01_dense 8*4+8 = 40, 03_dense 6*8+6 = 54, 04_dense 2*6+2 = 14 elements.
  Model m("flatten dense(8) relu dense(6) dense(2)", {2, 2}, r, alloc);
  EXPECT_EQ(m.store().layer(1), (Range{0, 40}));
  EXPECT_EQ(m.store().layer(2), (Range{0, 0}));
  EXPECT_EQ(m.store().layer(4), (Range{94, 108}));
  // Tiny buckets: one per layer with parameters, last layer first, each ready after its layer.
  auto b = m.store().buckets(1);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].begin, 94);
  EXPECT_EQ(b[0].end, 108);
  EXPECT_EQ(b[0].ready_after, 4u);
  EXPECT_EQ(b[2].begin, 0);
  EXPECT_EQ(b[2].ready_after, 1u);
  // 60 elements: the last two layers together (68), then the first.
  b = m.store().buckets(60);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].begin, 40);
  EXPECT_EQ(b[0].end, 108);
  EXPECT_EQ(b[0].ready_after, 3u);
  EXPECT_EQ(b[1].end, 40);
  // Huge: one bucket over everything, ready after the first layer with parameters.
  b = m.store().buckets(1 << 30);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].begin, 0);
  EXPECT_EQ(b[0].end, 108);
  EXPECT_EQ(b[0].ready_after, 1u);
}
