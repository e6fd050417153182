// Sharded gradients ([parallel] shard = gradients, ZeRO stage 2) at 1-4 ranks:
// - with one micro-batch the parameters are bit-identical to shard = optimizer's (the same
//   reduce-scatter of the same bucket, only in a staging buffer), for an MLP, a CNN, a frozen
//   layer and a GPT whose head is tied to its embedding (the bucket the head writes first); so
//   are shard = full's, the frozen layer held whole on every rank;
// - with 2 and 4 micro-batches (each micro-batch's gradient reduced, then added) the parameters
//   match one process on the global batch within the tolerance the data-parallel tests state
//   (2e-6 * (1 + max |parameter|)); on two pipeline stages: ShardedOptimizer.PipelineStages*;
// - the memory bound, from the store's own accounting: each rank's gradient buffers hold exactly
//   its owned elements (packed) plus the staging buffers, never the whole gradient; the packed
//   part is at most 1/D of the trainable elements plus the bucket tails.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

struct Trained {
  std::vector<float> params;
  std::int64_t gradient_bytes = 0, owned = 0, whole = 0, staging = 0, buckets = 0;
  bool staged = false;
};

// Trains `steps` steps of `ini` and returns this rank's parameters and gradient accounting.
Trained train(const std::string& ini, const DatasetIndex& index, int steps, std::vector<float>* reference = nullptr,
              int micro = 1) {
  const Config cfg = parse_config(ini, "zero2.ini", {}, process_environment());
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, steps);
  Model& model = trainer.model();
  Trained t;
  t.params = testref::whole_parameters(trainer);
  t.gradient_bytes = model.store().gradient_bytes();
  t.owned = total(trainer.averager().owned());
  t.whole = model.parameters().numel();
  t.staged = trainer.averager().staged();
  if (t.staged) {
    const auto bucket_elems = static_cast<std::int64_t>(cfg.parallel.bucket_mb * (1 << 20) / sizeof(float));
    const auto buckets = model.store().buckets(bucket_elems);
    for (const std::int64_t n : ParamStore::slot_sizes(buckets, model.gradient_slots(buckets))) t.staging += n;
    t.buckets = static_cast<std::int64_t>(buckets.size());
    EXPECT_EQ(model.gradients().numel(), t.owned) << "the packed gradient holds exactly what this rank owns";
  }
  if (reference)
    *reference = testref::reference_parameters(cfg, index, sampler, steps, rt.mesh().size(MeshDim::dp), micro);
  return t;
}

std::pair<double, double> difference(const std::vector<float>& got, const std::vector<float>& ref) {
  double worst = 0, biggest = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]));
    biggest = std::max(biggest, std::fabs(static_cast<double>(ref[i])));
  }
  return {worst, biggest};
}

std::string deck(const std::string& root, const std::string& layers, const std::string& extra, int batch = 24) {
  return "[run]\nseed = 17\nout_dir = /tmp\n[data]\npath = " + root + "\n[model]\nlayers = " + layers +
         "\n[train]\nglobal_batch = " + std::to_string(batch) +
         "\n[optim]\nname = adamw\nlr = 0.01\nweight_decay = 0.1\nclip_norm = 0.4\n"
         "[parallel]\nbucket_mb = 0.0002\n" +
         extra;
}

}  // namespace

TEST(ShardedGradients, OneMicroBatchEqualsOptimizerShardingBitwise) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero2_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const int d = world_size();
  const std::string deep =
      "flatten dense(32) tanh dense(32) tanh dense(32) tanh dense(32) tanh dense(32) tanh dense(7)";
  for (const std::string& layers : {std::string("flatten dense(16) tanh dropout(20) dense(12) relu dense(7)"),
                                    std::string("conv(4,3,pad=1) relu conv(4,3,pad=1) tanh flatten dense(7)"), deep})
    for (const std::string freeze : {"", "dense.1"}) {
      if (!freeze.empty() && layers.rfind("flatten dense(16)", 0) != 0) continue;
      const std::string extra = freeze.empty() ? "" : "[train]\nfreeze = " + freeze + "\n";
      const Trained one = train(deck(root, layers, "shard = optimizer\n" + extra), index, 5);
      const Trained two = train(deck(root, layers, "shard = gradients\n" + extra), index, 5);
      {  // (ZeRO-3 holds frozen layers whole on every rank)
        const Trained three = train(deck(root, layers, "shard = full\n" + extra), index, 5);
        EXPECT_EQ(three.params, one.params)
            << layers << (freeze.empty() ? "" : ", " + freeze + " frozen") << ", shard = full on " << d << " rank(s)";
      }
      const std::string what =
          layers + (freeze.empty() ? "" : ", " + freeze + " frozen") + " on " + std::to_string(d) + " rank(s)";
      EXPECT_EQ(two.params, one.params) << what;
      EXPECT_EQ(two.staged, d > 1) << what;
      if (d == 1) continue;
      // Never the whole gradient: the packed share (1/D and the bucket tails) plus the staging
      // buffers (two of the largest bucket; a frozen layer's scratch). Smaller than the whole
      // once the model is more than a few buckets deep.
      EXPECT_EQ(one.gradient_bytes, 4 * one.whole) << what;
      const std::int64_t frozen = freeze.empty() ? 0 : 16 * 12 + 12;
      EXPECT_EQ(two.gradient_bytes, 4 * (two.owned + two.staging + frozen)) << what;
      EXPECT_LE(two.owned, (one.whole - frozen) / d + two.buckets * (d - 1)) << what;  // (tails: < D per bucket)
      if (layers == deep) {
        EXPECT_LT(two.gradient_bytes, one.gradient_bytes) << what;
      }
    }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(ShardedGradients, MicroBatchesMatchOneProcess) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero2_micro_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  for (const int micro : {2, 4}) {  // (global batch 48: 12 to 48 rows per rank)
    std::vector<float> ref;
    const std::string extra = "shard = gradients\n[train]\nmicro_batches = " + std::to_string(micro) + "\n";
    const Trained got =
        train(deck(root, "flatten dense(16) tanh dense(12) relu dense(7)", extra, 48), index, 4, &ref, micro);
    const auto [worst, biggest] = difference(got.params, ref);
    EXPECT_LE(worst, 2e-6 * (1 + biggest)) << micro << " micro-batches on " << world_size() << " rank(s)";
    EXPECT_GT(biggest, 0.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// The GPT's head writes the tied embedding's gradient first, at the start of backward: its bucket
// has a staging buffer of its own. 1 and 2 micro-batches against one process, and 1 bitwise
// against shard = optimizer.
TEST(ShardedGradients, GptWithTiedHeadMatchesOneProcess) {
  const std::string root = testref::make_token_dataset("hpct_zero2_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  auto ini = [&](const std::string& parallel, int micro) {
    return "[run]\nseed = 13\nout_dir = /tmp\n[data]\npath = " + root +
           "\nblock_size = 8\n[model]\nlayers = " + std::string(testref::kTinyGpt) +
           "\n[train]\nglobal_batch = 24\nmicro_batches = " + std::to_string(micro) +
           "\n[optim]\nname = adamw\nlr = 0.01\nweight_decay = 0.1\nweight_decay_1d = false\nclip_norm = 1.0\n"
           "[parallel]\nbucket_mb = 0.001\n" +
           parallel;
  };
  const Trained zero1 = train(ini("shard = optimizer\n", 1), index, 4);
  const Trained zero2 = train(ini("shard = gradients\n", 1), index, 4);
  EXPECT_EQ(zero2.params, zero1.params) << "GPT on " << world_size() << " rank(s)";
  for (const char* overlap : {"on", "off"}) {  // (the windows' prefetch on and off)
    const Trained zero3 = train(ini(std::string("shard = full\ngather_overlap = ") + overlap + "\n", 1), index, 4);
    EXPECT_EQ(zero3.params, zero1.params) << "GPT, shard = full, prefetch " << overlap << " on " << world_size();
  }
  std::vector<float> ref;
  const Trained micro = train(ini("shard = gradients\n", 2), index, 4, &ref, 2);
  const auto [worst, biggest] = difference(micro.params, ref);
  EXPECT_LE(worst, 2e-6 * (1 + biggest)) << "GPT, 2 micro-batches on " << world_size() << " rank(s)";
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// Evaluation with the parameters sharded: the windows' gathers are collective, and at 4 ranks
// the 30 test samples split 8, 8, 7, 7 into 2, 2, 1 and 1 batches of 7; the ranks with one batch
// join the others' gathers. The result equals shard = optimizer's exactly (the same per-sample
// sums).
TEST(ShardedGradients, FullShardingEvaluatesUnevenSplitsLikeOptimizerSharding) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero3_eval_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  auto evaluate = [&](const std::string& shard) {
    const Config cfg = parse_config(
        deck(root, "flatten dense(16) tanh dense(12) relu dense(7)", "shard = " + shard + "\n", 7 * world_size()),
        "zero3-eval.ini", {}, process_environment());
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    testref::train_steps(trainer, cfg, rt, index, sampler, 2);
    return trainer.evaluate(*index.test);
  };
  const EvalResult one = evaluate("optimizer"), three = evaluate("full");
  EXPECT_EQ(three.samples, 30);
  EXPECT_EQ(three.samples, one.samples);
  EXPECT_EQ(three.loss, one.loss) << world_size() << " rank(s)";
  EXPECT_EQ(three.accuracy, one.accuracy);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// What shard = gradients cannot do is refused at start-up with one line naming the keys.
TEST(ShardedGradients, RefusedCombinationsNameTheKeys) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero2_refused_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  auto refusal = [&](const std::string& set, const std::string& shard = "gradients") -> std::string {
    const Config cfg = parse_config(deck(root, "flatten dense(16) tanh dense(7)", "shard = " + shard + "\n"),
                                    "zero2.ini", {set}, process_environment());
    Runtime rt(cfg);
    try {
      Trainer trainer(cfg, rt, index);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal("parallel.shard_by=tensors")
                .find("[parallel] shard = gradients shards gradients by equal blocks of "
                      "each bucket: shard_by = tensors"),
            std::string::npos);
  EXPECT_NE(refusal("optim.name=muon").find("[optim] name = muon, which needs it) work with shard = optimizer"),
            std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
