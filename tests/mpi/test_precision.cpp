// Mixed precision on the CPU path at 1-4 ranks: with fp16 a forced overflow (an initial loss
// scale of 1e12) skips the update on every rank, leaves the parameters untouched and halves
// the scale, until the scaled gradients fit; then updates resume; after loss_scale_window
// good steps the scale doubles. bf16 and fp16 train close to
// float32 (relative parameter difference after 4 steps below 2e-2, and above 0: the rounding
// is applied), with float32 master parameters (not rounded to the format).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {
Config precision_config(const std::string& root, const char* precision, double loss_scale, int window = 1000) {
  const std::string ini = "[run]\nseed = 3\nout_dir = /tmp\n[precision]\ndtype = " + std::string(precision) +
                          "\n[data]\npath = " + root +
                          "\n[model]\nlayers = flatten dense(32) relu dense(7)\n[train]\nglobal_batch = 24\n"
                          "[optim]\nlr = 0.1\nmomentum = 0.9\n[precision]\nloss_scale = " +
                          std::to_string(loss_scale) + "\nloss_scale_window = " + std::to_string(window) + "\n";
  return parse_config(ini, "precision-test.ini", {}, process_environment());
}
}  // namespace

TEST(MixedPrecision, Fp16OverflowSkipsTheUpdateAndHalvesTheScale) {
  const std::string root = testref::make_synthetic_dataset("hpct_prec_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const Config cfg = precision_config(root, "fp16", 1e12);
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  const std::vector<float> before(trainer.model().parameters().data(),
                                  trainer.model().parameters().data() + trainer.model().parameters().numel());
  testref::train_steps(trainer, cfg, rt, index, sampler, 1);
  EXPECT_TRUE(trainer.last_step_skipped());
  EXPECT_EQ(trainer.skipped_steps(), 1);
  EXPECT_EQ(trainer.loss_scale(), 5e11);
  EXPECT_EQ(std::memcmp(before.data(), trainer.model().parameters().data(), before.size() * sizeof(float)), 0)
      << "a skipped step must not change the parameters";
  for (int s = 0; s < 45 && trainer.last_step_skipped(); ++s)  // the scale comes down until updates fit
    testref::train_steps(trainer, cfg, rt, index, sampler, 1);
  EXPECT_FALSE(trainer.last_step_skipped());
  EXPECT_EQ(trainer.loss_scale(), 1e12 / std::pow(2.0, static_cast<double>(trainer.skipped_steps())))
      << "every skipped step halves the scale";
  EXPECT_NE(std::memcmp(before.data(), trainer.model().parameters().data(), before.size() * sizeof(float)), 0);
  verify_identical(trainer.dp_comm(), trainer.model().parameters(), "parameters after skipped steps");
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(MixedPrecision, Fp16ScaleDoublesAfterTheWindowOfGoodSteps) {
  const std::string root = testref::make_synthetic_dataset("hpct_prec3_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const Config cfg = precision_config(root, "fp16", 1024, 2);
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, 5);
  EXPECT_EQ(trainer.skipped_steps(), 0);
  EXPECT_EQ(trainer.loss_scale(), 4096.0);  // doubled after steps 2 and 4
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(MixedPrecision, Bf16AndFp16TrainCloseToFloat32WithFloat32Masters) {
  const std::string root = testref::make_synthetic_dataset("hpct_prec2_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  std::vector<float> fp32;
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    const Config cfg = precision_config(root, precision, 1024);
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    testref::train_steps(trainer, cfg, rt, index, sampler, 4);
    const Tensor& p = trainer.model().parameters();
    if (fp32.empty()) {
      fp32.assign(p.data(), p.data() + p.numel());
      continue;
    }
    EXPECT_EQ(trainer.skipped_steps(), 0) << precision;
    double diff = 0, norm = 0;
    int low_bits = 0;  // masters keep float32 detail: some have bits below bf16's mantissa
    for (std::int64_t i = 0; i < p.numel(); ++i) {
      diff += std::pow(static_cast<double>(p.data()[i]) - fp32[static_cast<std::size_t>(i)], 2);
      norm += std::pow(static_cast<double>(fp32[static_cast<std::size_t>(i)]), 2);
      std::uint32_t u;
      std::memcpy(&u, p.data() + i, 4);
      low_bits += (u & 0xffffu) != 0;
    }
    const double rel = std::sqrt(diff / norm);
    EXPECT_GT(rel, 0.0) << precision << ": no rounding happened";
    EXPECT_LT(rel, 2e-2) << precision;
    EXPECT_GT(low_bits, p.numel() / 2) << precision << ": master parameters look rounded";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
