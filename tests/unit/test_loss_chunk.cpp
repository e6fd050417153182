// [train] loss_chunk (Model::set_loss_chunk, layers/lm_head.cpp): lm_head runs the cross-entropy
// itself a chunk of rows at a time. A small GPT (tied and untied head, a padded vocabulary) is
// trained for two micro-batches (the second accumulating) and evaluated with loss_chunk = 0 and
// with chunks that do not divide the 3 x 8 = 24 positions (5), that divide them (8) and that hold
// them all (64), in float32 and bf16. Stated criteria: the loss sums within 1e-6 of their size and
// the correct and sample counts equal; every parameter gradient within 1e-5 of the largest
// (float32; bf16: 2e-3, its rounding of each chunk's logits is the same but the sums' order is
// not); the model then holds no logits or logit gradients (its allocator peaks lower by about
// both, less the two chunks), and Model::activation_memory states what it took exactly. A last
// layer that cannot run the loss is refused with one line naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {
constexpr std::int64_t V = 301, Vp = 304, T = 8, N = 3;

std::string gpt(bool tie, bool softcap) {
  return std::string(
             "embedding(301, 16) position_embedding res(layernorm attention(2)) "
             "res(layernorm linear(32) gelu linear(16)) layernorm lm_head(301") +
         (tie ? "" : ", tie=0") + (softcap ? ", softcap=0.05" : "") + ")";
}

struct Result {
  std::vector<float> train_sums, eval_sums, grads;
  std::size_t peak = 0;  // the allocator's, over the steps
  double estimate = 0;   // Model::activation_memory's total for the batch
  std::size_t held = 0;  // the allocator's bytes before set_batch (parameters, gradients, input, labels)
};

Result run(bool tie, std::int64_t chunk, Precision precision, bool softcap = false) {
  LayerRegistry r;
  register_builtin_layers(r, LayerOptions{ConvImpl::auto_, 8});  // (301 -> 304 rows: padded logits)
  Allocator alloc;
  Model m(gpt(tie, softcap), {T}, r, alloc);
  m.init_parameters(11);
  m.set_precision(precision);
  m.set_loss_chunk(chunk);
  Result res;
  res.estimate = m.activation_memory(N, precision, Device::cpu, false).total();
  Tensor x = Tensor::zeros({N, T}, alloc, DType::i32);
  std::vector<std::int32_t> ids(N * T), labels(N * T);
  const auto values = unittest::random_values(2 * N * T, 5);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::int32_t>(static_cast<std::int64_t>(std::fabs(values[i]) * 1000) % V);
    labels[i] = static_cast<std::int32_t>(static_cast<std::int64_t>(std::fabs(values[ids.size() + i]) * 1000) % V);
  }
  upload(ids.data(), ids.size() * sizeof(std::int32_t), x);
  Targets t;
  t.classes = labels.data();
  auto loss = make_loss(true);
  Tensor scalars = step_scalars::make(alloc), eval = step_scalars::make(alloc);
  res.held = alloc.in_use();
  m.set_batch(N);
  StepContext& ctx = m.context();
  for (int micro = 0; micro < 2; ++micro) {
    ctx.training = true;
    const bool head = m.give_loss(*loss, t, 1.f / (2 * N * T), &scalars);
    EXPECT_EQ(head, chunk > 0);
    const Tensor& out = m.forward(x);
    if (!head) loss->forward_backward(out, t, 1.f / (2 * N * T), scalars, m.dout());
    m.backward(x, m.dout(), {}, micro > 0);
  }
  ctx.training = false;
  if (!m.give_loss(*loss, t, 0.f, &eval))
    loss->forward(m.forward(x), t, eval, m.dout());
  else
    m.forward(x);
  res.peak = alloc.peak();
  res.train_sums = step_scalars::to_host(scalars);
  res.eval_sums = step_scalars::to_host(eval);
  res.grads = to_host(m.gradients());
  return res;
}

void expect_close(const Result& a, const Result& b, double grad_tol, const std::string& what) {
  for (const bool train : {true, false}) {
    const std::vector<float>&x = train ? a.train_sums : a.eval_sums, &y = train ? b.train_sums : b.eval_sums;
    EXPECT_NEAR(x[step_scalars::loss_sum], y[step_scalars::loss_sum], 1e-6 * std::fabs(y[step_scalars::loss_sum]))
        << what;
    EXPECT_EQ(x[step_scalars::correct], y[step_scalars::correct]) << what;
    EXPECT_EQ(x[step_scalars::samples], y[step_scalars::samples]) << what;
  }
  ASSERT_EQ(a.grads.size(), b.grads.size());
  float largest = 0, worst = 0;
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    largest = std::max(largest, std::fabs(b.grads[i]));
    worst = std::max(worst, std::fabs(a.grads[i] - b.grads[i]));
  }
  EXPECT_GT(largest, 0.f);
  EXPECT_LE(worst, grad_tol * largest) << what << ": gradients differ by " << worst << " of " << largest;
}
}  // namespace

TEST(LossChunk, SameLossAndGradientsWithoutTheWholeLogits) {
  for (const bool tie : {true, false})
    for (const Precision p : {Precision::fp32, Precision::bf16}) {
      const Result whole = run(tie, 0, p);
      EXPECT_EQ(whole.train_sums[step_scalars::samples], 2 * N * T);
      EXPECT_EQ(whole.eval_sums[step_scalars::samples], N * T);
      EXPECT_EQ(whole.estimate, static_cast<double>(whole.peak - whole.held));
      for (const std::int64_t chunk : {5, 8, 64}) {
        const std::string what = std::string(tie ? "tied" : "untied") + (p == Precision::fp32 ? " fp32" : " bf16") +
                                 ", loss_chunk = " + std::to_string(chunk);
        const Result c = run(tie, chunk, p);
        expect_close(c, whole, p == Precision::fp32 ? 1e-5 : 2e-3, what);
        // No logits [24, 304] or their gradient (29,184 bytes each); two chunks of scratch instead.
        const double logits = 4.0 * N * T * Vp,
                     chunks = 2 * 4.0 * static_cast<double>(std::min<std::int64_t>(chunk, N * T)) * Vp;
        EXPECT_LE(static_cast<double>(c.peak), static_cast<double>(whole.peak) - 2 * logits + chunks + 1024) << what;
        EXPECT_EQ(c.estimate, static_cast<double>(c.peak - c.held)) << what << ": the estimate against the peak";
      }
    }
}

// Gemma 2's soft-capped logits (lm_head(V, softcap=S)): the chunks cap their logits and take the
// cap's slope as the whole head's backward does from its capped output (a cap of 0.05 bends this
// model's logits of a few hundredths). Negative control: without the cap, other gradients.
TEST(LossChunk, SoftCappedLogitsGiveTheSameLossAndGradients) {
  const Result whole = run(false, 0, Precision::fp32, true);
  EXPECT_EQ(whole.estimate, static_cast<double>(whole.peak - whole.held)) << "the estimate against the peak";
  for (const std::int64_t chunk : {5, 64})
    expect_close(run(false, chunk, Precision::fp32, true), whole, 1e-5,
                 "softcap, loss_chunk = " + std::to_string(chunk));
  const Result uncapped = run(false, 0, Precision::fp32);
  float worst = 0, largest = 0;
  for (std::size_t i = 0; i < whole.grads.size(); ++i) {
    largest = std::max(largest, std::fabs(whole.grads[i]));
    worst = std::max(worst, std::fabs(whole.grads[i] - uncapped.grads[i]));
  }
  EXPECT_GT(worst, 0.05f * largest) << "the cap changed no gradient";
}

TEST(LossChunk, ALastLayerThatCannotIsRefusedByName) {
  LayerRegistry r;
  register_builtin_layers(r);
  Allocator alloc;
  Model m("dense(8) relu dense(3)", {4}, r, alloc);
  try {
    m.set_loss_chunk(4);
    FAIL() << "a dense last layer took loss_chunk";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("[train] loss_chunk = 4: the model's last layer, dense.1 (dense)"),
              std::string::npos)
        << e.what();
  }
  m.set_loss_chunk(0);  // (off: any model)
  EXPECT_FALSE(m.loss_in_head());
}
