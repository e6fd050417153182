// Data parallelism: 1-4 ranks with global batch B (the model includes dropout,
// whose draws are keyed by sample, not by rank) reach the same parameters
// after k steps as one process computing on the whole global batch (stated
// tolerance: max |difference| <= 2e-6 * (1 + max |parameter|), summation
// order being the only difference), with and without micro-batches; the
// initial parameters are identical on every rank; runs are deterministic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

const char* const kMlp = "flatten dense(16) tanh dropout(20) dense(7)";
// Convolutions with more than one input channel: oneDNN's when built with it ([kernels] conv = auto).
const char* const kCnn = "conv(4,3,pad=1) relu conv(4,3,pad=1) tanh flatten dense(7)";

Config config_for(const std::string& root, int micro_batches, const char* layers = kMlp) {
  const std::string ini = "[run]\nseed = 11\nout_dir = /tmp\n[data]\npath = " + root + "\n[model]\nlayers = " + layers +
                          "\n[train]\nglobal_batch = 24\n"
                          "micro_batches = " +
                          std::to_string(micro_batches) +
                          "\n[optim]\nlr = 0.2\nmomentum = 0.9\nweight_decay = 0.01\nnesterov = true\n";
  return parse_config(ini, "test.ini", {}, process_environment());
}

}  // namespace

TEST(DataParallel, RanksMatchOneProcessOnTheGlobalBatch) {
  const std::string root = testref::make_synthetic_dataset("hpct_dp_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  for (const auto& [micro, layers] : {std::pair{1, kMlp}, std::pair{2, kMlp}, std::pair{1, kCnn}, std::pair{2, kCnn}}) {
    const Config cfg = config_for(root, micro, layers);
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    const int steps = 6;
    testref::train_steps(trainer, cfg, rt, index, sampler, steps);
    {
      const auto ref = testref::reference_parameters(cfg, index, sampler, steps, rt.mesh().size(MeshDim::dp), micro);
      const Tensor& p = trainer.model().parameters();
      ASSERT_EQ(static_cast<std::size_t>(p.numel()), ref.size());
      double worst = 0, biggest = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(p.data()[i]) - ref[i]));
        biggest = std::max(biggest, std::fabs(static_cast<double>(ref[i])));
      }
      EXPECT_LE(worst, 2e-6 * (1 + biggest))
          << layers << ", micro-batches " << micro << " on " << world_size() << " rank(s)";
      EXPECT_GT(worst + biggest, 0.0);
      verify_identical(trainer.dp_comm(), p, "parameters after training");  // throws if ranks diverged
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// A GPT with dropout in its attention and its MLP, on token windows: the same equality (AdamW,
// no weight decay on 1-D tensors, the head tied to the embedding).
TEST(DataParallel, GptWithDropoutMatchesOneProcess) {
  const std::string root = testref::make_token_dataset("hpct_dp_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  for (const int micro : {1, 2}) {
    const std::string ini = "[run]\nseed = 13\nout_dir = /tmp\n[data]\npath = " + root +
                            "\nblock_size = 8\n[model]\nlayers = " + std::string(testref::kTinyGpt) +
                            "\n"
                            "[train]\nglobal_batch = 24\nmicro_batches = " +
                            std::to_string(micro) +
                            "\n[optim]\nname = adamw\nlr = 0.01\nweight_decay = 0.1\nweight_decay_1d = false\n";
    const Config cfg = parse_config(ini, "gpt-test.ini", {}, process_environment());
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    const int steps = 5;
    testref::train_steps(trainer, cfg, rt, index, sampler, steps);
    const auto ref = testref::reference_parameters(cfg, index, sampler, steps, rt.mesh().size(MeshDim::dp), micro);
    const Tensor& p = trainer.model().parameters();
    ASSERT_EQ(static_cast<std::size_t>(p.numel()), ref.size());
    double worst = 0, biggest = 0, moved = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(p.data()[i]) - ref[i]));
      biggest = std::max(biggest, std::fabs(static_cast<double>(ref[i])));
    }
    const auto start = testref::reference_parameters(cfg, index, sampler, 0, 1, 1);  // the initial parameters
    for (std::size_t i = 0; i < ref.size(); ++i)
      moved = std::max(moved, std::fabs(static_cast<double>(ref[i]) - start[i]));
    EXPECT_GT(moved, 1e-3) << "training must have changed the parameters";
    EXPECT_LE(worst, 2e-6 * (1 + biggest)) << "GPT, micro-batches " << micro << " on " << world_size() << " rank(s)";
    verify_identical(trainer.dp_comm(), p, "GPT parameters after training");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(DataParallel, EvaluationIsExactOverRanks) {
  const std::string root = testref::make_synthetic_dataset("hpct_dp_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const Config cfg = config_for(root, 1);
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const EvalResult r = trainer.evaluate(*index.test);
  EXPECT_EQ(r.samples, 30);
  // The same on one process: every sample of the split through the same (identical) parameters.
  Allocator alloc;
  ChunkCache store(*index.test, 1 << 20, true, true);
  std::vector<std::int64_t> all(30);
  for (int i = 0; i < 30; ++i) all[static_cast<std::size_t>(i)] = i;
  Batch b;
  assemble_batch(*index.test, store, all, true, true, b);
  trainer.model().set_batch(30);
  const Tensor x = Tensor::wrap(b.samples.data(), {30, 2, 3, 3});
  const Tensor& out = trainer.model().forward(x);
  auto loss = make_loss(true);
  Targets t;
  t.classes = b.classes.data();
  Tensor scalars = step_scalars::make(alloc);
  loss->forward(out, t, scalars, trainer.model().dout());
  EXPECT_NEAR(r.loss, step_scalars::to_host(scalars)[step_scalars::loss_sum] / 30.0, 1e-5);
  EXPECT_DOUBLE_EQ(r.accuracy, static_cast<double>(count_correct(out, t.classes)) / 30.0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(DataParallel, SynchronizedBatchNormEqualsBatchNormOnTheWholeBatch) {
  // Every rank holds 3 samples of a 3 * ranks batch; with the statistics reduced over the ranks,
  // outputs and input gradients must equal batch norm on the whole batch in one process.
  const int n = world_size(), r = world_rank();
  const std::int64_t per = 3, c = 2, p = 5, feat = c * p;
  auto value = [](std::int64_t i) { return static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3 + 0.5); };
  LayerRegistry reg;
  register_builtin_layers(reg);
  Allocator alloc;
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  // At the layer level: the model does not compute its first layer's input gradient.
  auto layer_run = [&](std::int64_t first, std::int64_t rows, Communicator* sync, std::vector<float>& y_out,
                       std::vector<float>& dx_out) {
    auto bn = reg.make(parse_layers("batchnorm").front());
    bn->configure({c, 1, p});
    Tensor gamma = Tensor::zeros({c}, alloc), beta = Tensor::zeros({c}, alloc), gg = Tensor::zeros({c}, alloc),
           gb = Tensor::zeros({c}, alloc);
    gamma.data()[0] = 1.5f, gamma.data()[1] = 0.5f, beta.data()[0] = 0.25f;
    bn->bind({gamma, beta}, {gg, gb});
    StepContext ctx;
    ctx.training = true;
    ctx.stats_comm = sync;
    bn->set_context(&ctx, 0);
    std::vector<float> xs(static_cast<std::size_t>(rows * feat)), dy(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      xs[i] = value(first * feat + static_cast<std::int64_t>(i));
      dy[i] = value(first * feat + static_cast<std::int64_t>(i) + 1000);
    }
    Tensor x = Tensor::wrap(xs.data(), {rows, c, 1, p}), y = Tensor::zeros({rows, c, 1, p}, alloc),
           dx = Tensor::zeros({rows, c, 1, p}, alloc);
    bn->forward(x, y);
    bn->backward(x, y, Tensor::wrap(dy.data(), {rows, c, 1, p}), dx);
    y_out.assign(y.data(), y.data() + y.numel());
    dx_out.assign(dx.data(), dx.data() + dx.numel());
  };
  std::vector<float> y_mine, dx_mine, y_all, dx_all;
  layer_run(r * per, per, &comm, y_mine, dx_mine);
  layer_run(0, per * n, nullptr, y_all, dx_all);
  for (std::size_t i = 0; i < y_mine.size(); ++i) {
    EXPECT_NEAR(y_mine[i], y_all[static_cast<std::size_t>(r * per * feat) + i], 1e-5) << "output " << i;
    EXPECT_NEAR(dx_mine[i], dx_all[static_cast<std::size_t>(r * per * feat) + i], 1e-5) << "input gradient " << i;
  }
  if (n > 1) {  // and without synchronization the statistics are local: different results
    std::vector<float> y_local, dx_local;
    layer_run(r * per, per, nullptr, y_local, dx_local);
    double diff = 0;
    for (std::size_t i = 0; i < y_local.size(); ++i) diff += std::fabs(y_local[i] - y_mine[i]);
    EXPECT_GT(diff, 1e-3);
  }
}
