// Model parallelism at 2-4 and 8 ranks: every model-parallel size M of 2-4 that
// divides the world (data-parallel size world / M: M = 2 and 4 with D = 1 and 2,
// M = 2 with D = 4, M = 3 with D = 1), both schedules and 1-8
// micro-batches reach, after k steps, the parameters of one process training
// the whole model on the same micro-batches (stated tolerance: max |difference|
// <= 2e-6 * (1 + max |parameter|); bit-identical in practice when the
// data-parallel size is 1), for an MLP with dropout and a CNN with
// synchronized batch norm. The schedules differ where they must: the inputs a
// stage keeps at once peak at K for GPipe and at most M for 1F1B, and no
// forward runs twice (one pass per micro-batch, one activation set per
// micro-batch in flight); the start-up memory estimate counts those sets and this stage's
// buffers and received tensors (the allocator's peak within 128 bytes).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "hpctrain/data/reader.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/train/memory_estimate.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

Config pipeline_config(const std::string& root, const char* layers, int stages, int micro, const char* schedule) {
  const std::string ini =
      "[run]\nseed = 5\nout_dir = /tmp\n[data]\npath = " + root + "\n[model]\nlayers = " + layers +
      "\n[train]\nglobal_batch = 24\nmicro_batches = " + std::to_string(micro) +
      "\n[optim]\nlr = 0.1\nmomentum = 0.9\n[parallel]\npipeline_parallel = " + std::to_string(stages) +
      "\nschedule = " + schedule + "\n";
  return parse_config(ini, "pipeline-test.ini", {}, process_environment());
}

const char* const kMlp = "flatten dense(12) tanh dropout(25) dense(10) relu dense(7)";
const char* const kCnn = "conv(3,3,pad=1) batchnorm relu flatten dense(9) tanh dense(7)";

}  // namespace

TEST(Pipeline, StagesMatchOneProcessForEveryScheduleAndMicroBatchCount) {
  if (world_size() < 2) GTEST_SKIP() << "model parallelism needs at least 2 ranks";  // (before its folder)
  const std::string root = testref::make_synthetic_dataset("hpct_pipe_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  int runs = 0;
  for (int stages = 2; stages <= std::min(world_size(), 4); ++stages) {
    if (world_size() % stages != 0) continue;
    const int dp_size = world_size() / stages;
    for (const char* layers : {kMlp, kCnn})
      for (const char* schedule : {"gpipe", "1f1b"})
        for (const int micro : {1, 2, 4, 8}) {
          if ((24 / dp_size) % micro != 0) continue;
          const Config cfg = pipeline_config(root, layers, stages, micro, schedule);
          Runtime rt(cfg);
          Trainer trainer(cfg, rt, index);
          const Sampler sampler(sampler_options(cfg, index.train));
          const int steps = 4;
          testref::train_steps(trainer, cfg, rt, index, sampler, steps);
          {
            const auto ref = testref::reference_parameters(cfg, index, sampler, steps, dp_size, micro);
            // This stage's parameters against the same parameters of the whole model.
            const Model& model = trainer.model();
            double worst = 0, biggest = 0;
            for (const ParamInfo& p : model.param_info())
              for (std::int64_t i = 0; i < numel(p.shape); ++i) {
                const double mine = trainer.model().parameters().data()[p.offset + i];
                const double want = ref[static_cast<std::size_t>(p.global_offset + i)];
                worst = std::max(worst, std::fabs(mine - want));
                biggest = std::max(biggest, std::fabs(want));
              }
            const std::string what = std::string(layers) + ", " + schedule + ", M = " + std::to_string(stages) +
                                     ", D = " + std::to_string(dp_size) + ", K = " + std::to_string(micro) +
                                     ", stage " + std::to_string(rt.mesh().coord(MeshDim::pp));
            EXPECT_LE(worst, 2e-6 * (1 + biggest)) << what;
            // Stored activations: GPipe keeps all K inputs; 1F1B at most M - stage (never more than K).
            const PipelineStage* stage = trainer.pipeline();
            ASSERT_NE(stage, nullptr);
            const int s = stage->stage();
            if (std::string(schedule) == "gpipe")
              EXPECT_EQ(stage->peak_stored(), micro) << what;
            else
              EXPECT_EQ(stage->peak_stored(), std::min(micro, stages - s)) << what;
            // No forward runs twice: one pass per micro-batch, from one activation set per
            // micro-batch in flight (before: GPipe ran 2K - 1 passes per step on every stage).
            EXPECT_EQ(model.forward_passes(), static_cast<std::int64_t>(steps) * micro) << what;
            EXPECT_EQ(model.sets(), static_cast<std::size_t>(stage->peak_stored())) << what;
            // The start-up memory estimate counts as many (it said min(K, M) for every stage:
            // half of GPipe's activations at K = 8 on 2 stages).
            EXPECT_EQ(trainer.memory_estimate().sets, stage->peak_stored()) << what;
            // ... and this stage's buffers (it counted the whole model's: 1.8x the MLP's last
            // stage) and received tensors: the estimate is the allocator's peak within 128 bytes
            // (it leaves out the step scalars: 68 bytes).
            const double est = trainer.memory_estimate().total(), peak = static_cast<double>(trainer.allocator_peak());
            EXPECT_NEAR(est, peak, 128.0) << what << ": estimate " << est << ", peak " << peak;
            ++runs;
          }
        }
  }
  EXPECT_GT(runs, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// Transformer blocks split over the stages, the head tied to the embedding across the first and
// last stage (their gradients summed between the stages): equal to one process, also with
// [train] recompute = blocks (each block re-runs its forward inside the stage's backward).
TEST(Pipeline, GptBlocksOverStagesWithATiedHeadMatchOneProcess) {
  if (world_size() < 2) GTEST_SKIP() << "model parallelism needs at least 2 ranks";  // (before its folder)
  const std::string root = testref::make_token_dataset("hpct_pipe_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const char* const gpt =
      "embedding(11, 8) position_embedding repeat(2, res(layernorm attention(2, dropout=20)) res(layernorm "
      "linear(16) gelu linear(8))) layernorm(bias=0) lm_head(11)";
  int runs = 0;
  for (int stages = 2; stages <= std::min(world_size(), 4); ++stages) {
    if (world_size() % stages != 0) continue;
    const int dp_size = world_size() / stages;
    for (const int run : {0, 1, 2}) {  // K = 1, K = 2, K = 2 with [train] recompute = blocks
      const int micro = run == 0 ? 1 : 2;
      Config cfg = pipeline_config(root, gpt, stages, micro, "1f1b");
      cfg.model.block_size = 8;
      if (run == 2) cfg.train.recompute = Recompute::blocks;
      cfg.optim.clip_norm = 0.5;  // the global norm counts the tied gradient once
      Runtime rt(cfg);
      Trainer trainer(cfg, rt, index);
      const Sampler sampler(sampler_options(cfg, index.train));
      const int steps = 4;
      testref::train_steps(trainer, cfg, rt, index, sampler, steps);
      const auto ref = testref::reference_parameters(cfg, index, sampler, steps, dp_size, micro);
      double worst = 0, biggest = 0;
      Model& model = trainer.model();
      for (const ParamInfo& p : model.param_info())  // the head's copy compares with the embedding
        for (std::int64_t i = 0; i < numel(p.shape); ++i) {
          const double mine = model.parameters().data()[p.offset + i];
          const double want = ref[static_cast<std::size_t>(p.global_offset + i)];
          worst = std::max(worst, std::fabs(mine - want));
          biggest = std::max(biggest, std::fabs(want));
        }
      EXPECT_LE(worst, 2e-6 * (1 + biggest))
          << "GPT, M = " << stages << ", K = " << micro << (run == 2 ? ", recompute = blocks" : "") << ", stage "
          << rt.mesh().coord(MeshDim::pp);
      ++runs;
    }
  }
  EXPECT_GT(runs, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// --dry-run's "largest stage" (estimate_memory from the whole model) is the stage that holds the
// most parameters, a later stage's copy of a tied embedding counted: with a model whose last stage
// is the largest only with its copy (88 + 88 against 152), as the partition splits it and two other ways.
TEST(Pipeline, DryRunsLargestStageCountsATiedCopy) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "an even number of ranks (2 stages)";
  const std::string root = testref::make_token_dataset("hpct_pipe_tie_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const char* const layers = "embedding(11, 8) position_embedding linear(8) layernorm lm_head(11)";
  for (const char* groups : {"auto", "0-0 1-4", "0-1 2-4"}) {
    Config cfg = pipeline_config(root, layers, 2, 1, "1f1b");
    cfg.model.block_size = 8;
    cfg.model.groups = groups;
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    std::int64_t most = trainer.model().store().size();
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    LayerRegistry registry;
    register_builtin_layers(registry);
    Allocator scratch;
    const Model whole(cfg.model.layers, {8}, registry, scratch);
    EXPECT_EQ(estimate_memory(cfg, rt, whole, true).parameter_count, most) << "groups " << groups;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(Pipeline, EvaluationThroughTheStagesEqualsOneProcess) {
  if (world_size() < 2) GTEST_SKIP() << "model parallelism needs at least 2 ranks";
  const std::string root = testref::make_synthetic_dataset("hpct_pipe_eval_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const Config one = pipeline_config(root, kMlp, 1, 1, "1f1b");
  const Config two = pipeline_config(root, kMlp, 2, 1, "1f1b");
  // Both evaluate freshly initialized parameters (identical by construction) on the test split.
  EvalResult a, b;
  {
    Runtime rt(one);
    Trainer t(one, rt, index);
    a = t.evaluate(*index.test);
  }
  if (world_size() % 2 == 0) {
    Runtime rt(two);
    Trainer t(two, rt, index);
    b = t.evaluate(*index.test);
    EXPECT_EQ(b.samples, 30);
    EXPECT_NEAR(a.loss, b.loss, 1e-6);
    EXPECT_DOUBLE_EQ(a.accuracy, b.accuracy);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
