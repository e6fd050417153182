// [model] vocab_multiple (layers/registry.hpp LayerOptions): the embedding and lm_head tables
// padded with zero rows, the padded logits -inf; with the same live parameters the padded model's
// loss, gradients and input gradients equal the unpadded one's, the padding rows get a zero
// gradient, and an untied head pads the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;

namespace {
constexpr std::int64_t V = 10, Vp = 16, T = 3, N = 2;

struct StepResult {
  double loss = 0;
  std::vector<float> logits, grads;
};

StepResult train_step(Model& m, Allocator& alloc) {
  Tensor x = Tensor::zeros({N, T}, alloc, DType::i32);
  const std::int32_t ids[] = {1, 9, 4, 0, 5, 9};
  std::copy(ids, ids + N * T, x.data_as<std::int32_t>());
  const std::int32_t labels[] = {9, 4, 0, 5, 9, 2};
  m.set_batch(N);
  const Tensor& out = m.forward(x);
  StepResult r;
  r.logits = to_host(out);
  auto loss = make_loss(true);
  Tensor scalars = step_scalars::make(alloc);
  Targets t;
  t.classes = labels;
  loss->forward_backward(out, t, 1.f / (N * T), scalars, m.dout());
  r.loss = step_scalars::to_host(scalars)[step_scalars::loss_sum];
  m.backward(x, m.dout(), {}, false);
  r.grads = to_host(m.gradients());
  return r;
}
}  // namespace

TEST(VocabPadding, PaddedRowsAreZeroNeverSeenAndGetNoGradient) {
  for (const bool tie : {true, false}) {
    const std::string layers =
        std::string("embedding(10, 4) position_embedding layernorm lm_head(10") + (tie ? "" : ", tie=0") + ")";
    LayerRegistry plain_r, padded_r;
    register_builtin_layers(plain_r);
    register_builtin_layers(padded_r, LayerOptions{ConvImpl::auto_, 8});
    Allocator alloc;
    Model plain(layers, {T}, plain_r, alloc), padded(layers, {T}, padded_r, alloc);
    padded.init_parameters(3);
    plain.init_parameters(3);
    std::map<std::string, ParamInfo> by_name;
    for (const ParamInfo& p : plain.param_info()) by_name[p.name] = p;
    for (const ParamInfo& p : padded.param_info()) {
      const ParamInfo& q = by_name.at(p.name);
      const bool table = p.name == "embedding.0.weight" || p.name == "lm_head.0.weight";
      ASSERT_EQ(p.shape[0], table ? Vp : q.shape[0]) << p.name;
      const std::int64_t width = numel(p.shape) / p.shape[0];
      for (std::int64_t i = q.shape[0] * width; i < numel(p.shape); ++i)
        ASSERT_EQ(padded.parameters().data()[p.offset + i], 0.f) << p.name << " padding not zero at " << i;
      // The same live values in both models (the padding shifts later parameters' init keys).
      std::copy(plain.parameters().data() + q.offset, plain.parameters().data() + q.offset + numel(q.shape),
                padded.parameters().data() + p.offset);
    }
    const StepResult a = train_step(plain, alloc), b = train_step(padded, alloc);
    EXPECT_NEAR(a.loss, b.loss, 1e-6 * std::fabs(a.loss)) << (tie ? "tied" : "untied");
    for (std::int64_t r = 0; r < N * T; ++r)
      for (std::int64_t j = 0; j < Vp; ++j) {
        const float got = b.logits[static_cast<std::size_t>(r * Vp + j)];
        if (j >= V) {
          ASSERT_TRUE(std::isinf(got) && got < 0) << "padded logit " << j << " = " << got;
        } else {
          EXPECT_NEAR(got, a.logits[static_cast<std::size_t>(r * V + j)], 1e-6) << r << "," << j;
        }
      }
    for (const ParamInfo& p : padded.param_info()) {
      const ParamInfo& q = by_name.at(p.name);
      for (std::int64_t i = 0; i < numel(p.shape); ++i) {
        const float g = b.grads[static_cast<std::size_t>(p.offset + i)];
        if (i >= numel(q.shape)) {
          ASSERT_EQ(g, 0.f) << p.name << ": padding row gradient at " << i;
        } else {
          EXPECT_NEAR(g, a.grads[static_cast<std::size_t>(q.offset + i)], 1e-6) << p.name << " " << i;
        }
      }
    }
  }
}
