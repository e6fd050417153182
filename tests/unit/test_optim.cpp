// The optimizers and schedules against closed forms (SGD with momentum, Nesterov and weight
// decay; Adam; AdamW; warm-up, constant, step and cosine rates; clipping by global norm), and
// the per-step scalars the loss adds into and the optimizers read.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/parallel/grad_buckets.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;

namespace {
// Step scalars holding a learning rate: the optimizers read the rate from there.
Tensor scalars_with_rate(Allocator& alloc, float rate) {
  Tensor scalars = step_scalars::make(alloc);
  Tensor lr = step_scalars::slot(scalars, step_scalars::learning_rate);
  fill(lr, rate);
  return scalars;
}
}  // namespace

TEST(StepScalars, LossAccumulatesSumsCorrectAndSamplesOnTheDevice) {
  Allocator alloc;
  auto loss = make_loss(true);
  Tensor out = Tensor::zeros({3, 4}, alloc), work = Tensor::zeros({3, 4}, alloc), scalars = step_scalars::make(alloc);
  const float logits[12] = {0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 5};  // argmax 1, 0, 3
  std::copy(logits, logits + 12, out.data());
  std::vector<std::int32_t> classes{1, 2, 3};  // rows 0 and 2 right
  Targets t;
  t.classes = classes.data();
  loss->forward(out, t, scalars, work);
  loss->forward_backward(out, t, 1.f, scalars, work);  // a second micro-batch adds (training's call too)
  const auto h = step_scalars::to_host(scalars);
  double expect = 0;
  for (int r = 0; r < 3; ++r) {
    double z = 0;
    for (int j = 0; j < 4; ++j) z += std::exp(static_cast<double>(logits[r * 4 + j]));
    expect += std::log(z) - logits[r * 4 + classes[static_cast<std::size_t>(r)]];
  }
  EXPECT_NEAR(h[step_scalars::loss_sum], 2 * expect, 1e-5);
  EXPECT_EQ(h[step_scalars::correct], 4.f);
  EXPECT_EQ(h[step_scalars::samples], 6.f);
}

TEST(Optimizer, SgdMomentumNesterovAndWeightDecayInClosedForm) {
  Allocator alloc;
  OptimConfig cfg;
  cfg.momentum = 0.5;
  cfg.weight_decay = 0.1;
  for (const bool nesterov : {false, true}) {
    cfg.nesterov = nesterov;
    Tensor w = Tensor::zeros({1}, alloc), g = Tensor::zeros({1}, alloc);
    w.data()[0] = 1.f;
    auto opt = make_optimizer(cfg, w, g, Tensor::zeros({state_blocks(cfg) * w.numel()}, alloc));
    Tensor scalars = scalars_with_rate(alloc, 0.1f);
    double ew = 1, em = 0;
    for (int step = 0; step < 3; ++step) {
      g.data()[0] = 0.2f * static_cast<float>(step + 1);
      opt->step(scalars, step + 1);
      const double grad = 0.2 * (step + 1) + 0.1 * ew;
      em = 0.5 * em + grad;
      ew -= 0.1 * (nesterov ? grad + 0.5 * em : em);
      EXPECT_NEAR(w.data()[0], ew, 1e-6) << (nesterov ? "nesterov" : "momentum") << " step " << step;
    }
  }
}

TEST(Optimizer, ScheduleWarmupConstantCosine) {
  OptimConfig cfg;
  cfg.lr = 0.4;
  cfg.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 0, 100), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 3, 100), 0.4);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 50, 100), 0.4);
  cfg.schedule = LrSchedule::cosine;
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 4, 104), 0.4);
  EXPECT_NEAR(learning_rate(cfg, 54, 104), 0.2, 1e-12);
  EXPECT_NEAR(learning_rate(cfg, 104, 104), 0.0, 1e-12);
  cfg.schedule = LrSchedule::step;
  cfg.step_every = 10;
  cfg.gamma = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 13, 100), 0.4);  // 9 steps after warm-up
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 14, 100), 0.2);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 24, 100), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 35, 100), 0.05);
}

// schedule = wsd: warm-up, then lr, then the last round(decay_fraction x total) steps linear to
// min_lr, reached at the last step; a decay that would start inside the warm-up starts after it;
// a longer run (resumed with more steps) is still at lr where the shorter one decayed.
TEST(Optimizer, ScheduleWarmupStableDecay) {
  OptimConfig cfg;
  cfg.lr = 0.4;
  cfg.min_lr = 0.04;
  cfg.warmup_steps = 4;
  cfg.schedule = LrSchedule::wsd;
  cfg.decay_fraction = 0.2;  // the last 20 of 100 steps
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 0, 100), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 4, 100), 0.4);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 79, 100), 0.4);
  EXPECT_NEAR(learning_rate(cfg, 80, 100), 0.4 - 0.36 / 20, 1e-12);
  EXPECT_NEAR(learning_rate(cfg, 89, 100), 0.22, 1e-12);
  EXPECT_NEAR(learning_rate(cfg, 99, 100), 0.04, 1e-12);
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 80, 200), 0.4);  // (extended to 200 steps: decays from 160)
  EXPECT_NEAR(learning_rate(cfg, 199, 200), 0.04, 1e-12);
  cfg.decay_fraction = 0.9;  // 9 of 10 steps: from the warm-up's end instead
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 3, 10), 0.4);
  EXPECT_NEAR(learning_rate(cfg, 4, 10), 0.4 - 0.36 / 6, 1e-12);
  EXPECT_NEAR(learning_rate(cfg, 9, 10), 0.04, 1e-12);
  cfg.decay_fraction = 0.004;  // rounds to no step: the last step still decays
  EXPECT_DOUBLE_EQ(learning_rate(cfg, 98, 100), 0.4);
  EXPECT_NEAR(learning_rate(cfg, 99, 100), 0.04, 1e-12);
}

TEST(Optimizer, AdamAndAdamWInClosedForm) {
  Allocator alloc;
  OptimConfig cfg;
  cfg.beta1 = 0.9;
  cfg.beta2 = 0.99;
  cfg.eps = 1e-8;
  cfg.weight_decay = 0.1;
  for (const OptimizerName name : {OptimizerName::adam, OptimizerName::adamw}) {
    cfg.name = name;
    Tensor w = Tensor::zeros({1}, alloc), g = Tensor::zeros({1}, alloc);
    w.data()[0] = 1.f;
    auto opt = make_optimizer(cfg, w, g, Tensor::zeros({state_blocks(cfg) * w.numel()}, alloc));
    Tensor scalars = scalars_with_rate(alloc, 0.01f);
    double ew = 1, m = 0, v = 0;
    for (int t = 1; t <= 4; ++t) {
      g.data()[0] = 0.3f * static_cast<float>(t % 3) - 0.2f;
      opt->step(scalars, t);
      EXPECT_EQ(step_scalars::to_host(scalars)[step_scalars::adam_step], static_cast<float>(t));
      double grad = 0.3 * (t % 3) - 0.2;
      if (name == OptimizerName::adamw)
        ew -= 0.01 * 0.1 * ew;
      else
        grad += 0.1 * ew;
      m = 0.9 * m + 0.1 * grad;
      v = 0.99 * v + 0.01 * grad * grad;
      const double mhat = m / (1 - std::pow(0.9, t)), vhat = v / (1 - std::pow(0.99, t));
      ew -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
      EXPECT_NEAR(w.data()[0], ew, 2e-6) << (name == OptimizerName::adam ? "adam" : "adamw") << " step " << t;
    }
    EXPECT_EQ(opt->state().numel(), 2);  // first and second moments
  }
}

TEST(Optimizer, ClipByGlobalNorm) {
  Allocator alloc;
  Tensor g = Tensor::zeros({2}, alloc);
  g.data()[0] = 3.f;
  g.data()[1] = 4.f;
  EXPECT_DOUBLE_EQ(clip_by_global_norm(g, 1.0), 5.0);
  EXPECT_NEAR(g.data()[0], 0.6f, 1e-6);
  EXPECT_NEAR(g.data()[1], 0.8f, 1e-6);
}

// [parallel] shard_optimizer: what each rank owns of a bucket (blocks of floor(L/D), the tail to
// rank D-1, a bucket smaller than D wholly to rank D-1), the runs cut to it with packed state, and
// the state expanded into the parameters' layout and back.
TEST(ShardedOptimizer, OwnedRangesCoverEachBucketOnce) {
  const std::vector<Bucket> buckets{{{300, 423}, 2}, {{2, 300}, 0}, {{0, 2}, 0}};  // L = 123, 298, 2
  std::vector<int> count(423, 0);
  for (int r = 0; r < 4; ++r)
    for (const Range& o : ParamStore::owned(buckets, 4, r)) {
      ASSERT_LT(o.begin, o.end);
      for (std::int64_t i = o.begin; i < o.end; ++i) ++count[static_cast<std::size_t>(i)];
    }
  for (int c : count) ASSERT_EQ(c, 1);
  EXPECT_EQ(ParamStore::owned(buckets, 4, 0), (Ranges{{2, 76}, {300, 330}}));  // 298 / 4 = 74, 123 / 4 = 30
  EXPECT_EQ(ParamStore::owned(buckets, 4, 3),
            (Ranges{{0, 2}, {224, 300}, {390, 423}}));  // tails of 2 and 3; all of {0, 2}
  EXPECT_EQ(ParamStore::owned(buckets, 1, 0), (Ranges{{0, 2}, {2, 300}, {300, 423}}));
}

TEST(ShardedOptimizer, RunsCutToTheOwnedRangesPackTheirState) {
  const std::vector<DecayRun> runs{{{0, 40}, true}, {{40, 60}, false}, {{60, 100}, true}};
  std::int64_t elems = 0;
  const auto mine = own_runs(runs, {{30, 50}, {90, 100}}, elems);
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(elems, 30);
  EXPECT_TRUE(mine[0] == (Range{30, 40}) && mine[0].decay && mine[0].state_at() == 0);
  EXPECT_TRUE(mine[1] == (Range{40, 50}) && !mine[1].decay && mine[1].state_at() == 10);
  EXPECT_TRUE(mine[2] == (Range{90, 100}) && mine[2].decay && mine[2].state_at() == 20);
  // Adam over those runs: state 2 x 30; expanded into blocks of 100 and compacted back.
  Allocator alloc;
  OptimConfig cfg;
  cfg.name = OptimizerName::adam;
  Tensor w = Tensor::zeros({100}, alloc), g = Tensor::zeros({100}, alloc);
  fill(g, 1.f);
  auto opt = make_optimizer(cfg, w, g, Tensor::zeros({2 * elems}, alloc), mine, elems);
  ASSERT_EQ(opt->state().numel(), 60);
  Tensor scalars = scalars_with_rate(alloc, 0.1f);
  opt->step(scalars, 1);
  for (std::int64_t i = 0; i < 100; ++i) {  // only the owned elements moved
    const bool owned = (i >= 30 && i < 50) || (i >= 90);
    EXPECT_EQ(w.data()[i] != 0.f, owned) << i;
  }
  std::vector<float> compact(60);
  for (std::size_t i = 0; i < 60; ++i) compact[i] = static_cast<float>(i + 1);
  std::vector<float> full(200, -1.f), back(60, 0.f);
  expand_state(*opt, compact.data(), full.data(), 100);
  EXPECT_EQ(full[30], 1.f);
  EXPECT_EQ(full[90], 21.f);
  EXPECT_EQ(full[100 + 30], 31.f);  // second block (exp_avg_sq)
  EXPECT_EQ(full[0], -1.f);         // not owned: left alone
  compact_state(*opt, full.data(), 100, back.data());
  EXPECT_EQ(back, compact);
}

// A pipeline stage whose layers are all frozen owns nothing: no runs, no state, nothing updated.
TEST(ShardedOptimizer, NoRunsUpdateNothing) {
  Allocator alloc;
  OptimConfig cfg;
  Tensor w = Tensor::zeros({10}, alloc), g = Tensor::zeros({10}, alloc);
  fill(g, 1.f);
  auto opt = make_optimizer(cfg, w, g, Tensor::zeros({0}, alloc), {}, 0);
  EXPECT_EQ(opt->state().numel(), 0);
  Tensor scalars = scalars_with_rate(alloc, 0.1f);
  opt->step(scalars, 1);
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(w.data()[i], 0.f);
}
