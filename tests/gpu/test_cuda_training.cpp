// Training on the GPU against the CPU: the trainer with [run] device = cuda and
// device = cpu, from the same initial parameters and batches, k steps, on an
// MLP with dropout and a CNN with batch norm, max pooling and a residual block;
// the parameters agree within 1e-4 (relative to the largest parameter: float
// sums in other orders, cuBLAS blocking; SGD with momentum keeps such
// differences proportional, where Adam would turn a near-zero gradient of
// either sign into a full step). Also: once warm, a training step
// takes nothing new from the driver (the caching pool serves it), fp16 loss
// scaling skips an overflowing step on the GPU as on the CPU, and steps replayed
// from CUDA graphs equal eager ones.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../mpi/reference_training.hpp"
#include "gpu_test_util.hpp"
#include "hpctrain/train/trainer.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {
Config config(const std::string& root, const char* device, const std::string& layers, const std::string& extra_run = "",
              const std::string& extra_optim = "", const std::string& optimizer = "sgd") {
  const std::string ini = "[run]\nseed = 5\nout_dir = /tmp\ndevice = " + std::string(device) + "\n" + extra_run +
                          "[data]\npath = " + root + "\n[model]\nlayers = " + layers +
                          "\n[train]\nglobal_batch = 24\nmicro_batches = 2\n[optim]\nname = " + optimizer +
                          "\nlr = 0.05\nmomentum = 0.9\n" + extra_optim;
  return parse_config(ini, "gpu-test.ini", {}, process_environment());
}

std::vector<float> train(const Config& cfg, const DatasetIndex& index, int steps) {
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, steps);
  return to_host(trainer.model().parameters());
}
}  // namespace

TEST(CudaTraining, StepsMatchTheCpu) {
  REQUIRE_GPU();
  const std::string root = testref::make_synthetic_dataset("hpct_gpu_train_");
  const DatasetIndex index = load_dataset_index(MPI_COMM_WORLD, root);
  for (const std::string layers :
       {"flatten dense(32) relu dropout(20) dense(16) gelu dense(7)",
        "conv(8,3,pad=1) batchnorm relu res(conv(8,3,pad=1) relu) maxpool(2,stride=1) avgpool(2) flatten dense(7)"}) {
    const auto cpu = train(config(root, "cpu", layers), index, 5);
    const auto gpu = train(config(root, "cuda", layers), index, 5);
    ASSERT_EQ(cpu.size(), gpu.size());
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(cpu[i] - gpu[i])));
      largest = std::max(largest, static_cast<double>(std::fabs(cpu[i])));
    }
    EXPECT_LT(worst / largest, 1e-4) << layers;
    EXPECT_GT(largest, 0) << layers;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// [run] cuda_graphs: step 1 runs eagerly, step 2 is recorded, later steps replay the recording;
// the parameters equal an eager run's (bit for bit for the MLP: the same kernels in the same
// order; within 1e-5 for the CNN, whose cuDNN algorithms each trainer picks by timing).
TEST(CudaTraining, RecordedStepsEqualEagerSteps) {
  REQUIRE_GPU();
  const std::string root = testref::make_synthetic_dataset("hpct_gpu_graph_");
  const DatasetIndex index = load_dataset_index(MPI_COMM_WORLD, root);
  struct Case {
    const char* layers;
    const char* optimizer;
    double tol;
  };
  for (const Case& c :
       {Case{"flatten dense(64) relu dense(32) gelu dense(7)", "adam", 0.0},
        Case{"conv(8,3,pad=1) relu res(conv(8,3,pad=1) relu) maxpool(2,stride=1) flatten dense(7)", "sgd", 1e-5}}) {
    std::vector<float> params[2];
    for (int graphs = 0; graphs < 2; ++graphs) {
      const Config cfg = config(root, "cuda", c.layers, graphs ? "cuda_graphs = true\n" : "", "", c.optimizer);
      Runtime rt(cfg);
      Trainer trainer(cfg, rt, index);
      const Sampler sampler(sampler_options(cfg, index.train));
      testref::train_steps(trainer, cfg, rt, index, sampler, 6);
      EXPECT_EQ(trainer.replaying(), graphs == 1) << c.layers;
      params[graphs] = to_host(trainer.model().parameters());
    }
    ASSERT_EQ(params[0].size(), params[1].size());
    double worst = 0;
    for (std::size_t i = 0; i < params[0].size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(params[0][i] - params[1][i])));
    EXPECT_LE(worst, c.tol) << c.layers;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(CudaTraining, WarmStepsAllocateNothingFromTheDriver) {
  REQUIRE_GPU();
  const std::string root = testref::make_synthetic_dataset("hpct_gpu_pool_");
  const DatasetIndex index = load_dataset_index(MPI_COMM_WORLD, root);
  const Config cfg = config(root, "cuda", "flatten dense(64) relu dropout(10) dense(7)");
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, 2);  // warm-up: buffers and scratch grow
  const auto before = cuda::pool_stats().driver_allocations;
  testref::train_steps(trainer, cfg, rt, index, sampler, 4);
  EXPECT_EQ(cuda::pool_stats().driver_allocations, before);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(CudaTraining, Fp16OverflowSkipsTheStep) {
  REQUIRE_GPU();
  const std::string root = testref::make_synthetic_dataset("hpct_gpu_fp16_");
  const DatasetIndex index = load_dataset_index(MPI_COMM_WORLD, root);
  const Config cfg =
      config(root, "cuda", "flatten dense(32) relu dense(7)", "precision = fp16\n", "loss_scale = 1e12\n");
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  const auto before = to_host(trainer.model().parameters());
  testref::train_steps(trainer, cfg, rt, index, sampler, 1);
  EXPECT_TRUE(trainer.last_step_skipped());
  EXPECT_EQ(trainer.loss_scale(), 5e11);
  EXPECT_EQ(to_host(trainer.model().parameters()), before);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
