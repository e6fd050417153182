// The sharded optimizer ([parallel] shard = optimizer, ZeRO stage 1) at 1-4 ranks: the parameters
// after k steps equal one process training on the global batch (stated tolerance: max |difference|
// <= 2e-6 * (1 + max |parameter|), summation order the only difference) for SGD with Nesterov
// momentum and weight decay, gradient clipping and micro-batches, and for a GPT with AdamW and
// weight-decay exemptions; buckets small enough that blocks and tails of every size occur. Each
// rank holds only its share of the optimizer state, and the shares cover every parameter once.
// fp16 (overflow agreement, loss scale) and bf16 runs equal the unsharded run (shard = optimizer,
// gradients and full, the three bit-identical to each other). The SGD and GPT
// cases overlap the parameters' all-gather with the next forward ([parallel] gather_overlap = on:
// without the per-layer waits they fail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

// Max |a - ref| and max |ref| over the whole buffer.
std::pair<double, double> difference(const Tensor& p, const std::vector<float>& ref) {
  double worst = 0, biggest = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(p.data()[i]) - ref[i]));
    biggest = std::max(biggest, std::fabs(static_cast<double>(ref[i])));
  }
  return {worst, biggest};
}

// Collective: every rank's optimizer state holds state_names() blocks of its owned elements; the
// owned elements over the group cover the parameters exactly once.
void expect_state_shared(Trainer& t, const std::string& what) {
  const Optimizer& opt = t.optimizer();
  const auto& owned = t.averager().owned();
  std::int64_t mine = 0;
  for (const auto& [b, e] : owned) mine += e - b;
  EXPECT_EQ(opt.state_elems(), mine) << what;
  const std::int64_t n = t.model().store().size();  // (the stage's whole layout; shard = full packs the parameters)
  std::vector<int> count(static_cast<std::size_t>(n), 0);
  for (const auto& [b, e] : owned)
    for (std::int64_t i = b; i < e; ++i) ++count[static_cast<std::size_t>(i)];
  t.dp_comm().allreduce(count.data(), count.data(), count.size(), DType::i32, ReduceOp::sum);
  int wrong = 0;
  for (int c : count) wrong += c != 1;
  EXPECT_EQ(wrong, 0) << what << ": elements not owned by exactly one rank";
  const int d = t.dp_comm().size();
  EXPECT_LE(mine, n / d + 2 * d * static_cast<std::int64_t>(t.averager().buckets().size())) << what;
}

}  // namespace

TEST(ShardedOptimizer, SgdWithClippingMatchesOneProcess) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const char* const mlp = "flatten dense(16) tanh dropout(20) dense(7)";
  const char* const cnn = "conv(4,3,pad=1) relu conv(4,3,pad=1) tanh flatten dense(7)";
  for (const auto& [micro, layers] : {std::pair{1, mlp}, std::pair{2, mlp}, std::pair{1, cnn}}) {
    // bucket_mb = 0.0002: buckets of about 52 elements, one or two layers each.
    const std::string ini = "[run]\nseed = 11\nout_dir = /tmp\n[data]\npath = " + root +
                            "\n[model]\nlayers = " + layers +
                            "\n[train]\nglobal_batch = 24\nmicro_batches = " + std::to_string(micro) +
                            "\n[optim]\nlr = 0.2\nmomentum = 0.9\nweight_decay = 0.01\nnesterov = true\n"
                            "clip_norm = 0.3\n[parallel]\nshard = optimizer\ngather_overlap = on\nbucket_mb = 0.0002\n";
    const Config cfg = parse_config(ini, "zero.ini", {}, process_environment());
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    const int steps = 6;
    testref::train_steps(trainer, cfg, rt, index, sampler, steps);
    const auto ref = testref::reference_parameters(cfg, index, sampler, steps, rt.mesh().size(MeshDim::dp), micro);
    const auto [worst, biggest] = difference(trainer.model().parameters(), ref);
    const std::string what = std::string(layers) + ", micro-batches " + std::to_string(micro) + " on " +
                             std::to_string(world_size()) + " rank(s)";
    EXPECT_LE(worst, 2e-6 * (1 + biggest)) << what;
    EXPECT_GT(biggest, 0.0);
    EXPECT_EQ(trainer.averager().sharded(), world_size() > 1);
    expect_state_shared(trainer, what);
    verify_identical(trainer.dp_comm(), trainer.model().parameters(), "sharded parameters after training");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(ShardedOptimizer, GptWithAdamwMatchesOneProcess) {
  const std::string root = testref::make_token_dataset("hpct_zero_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const std::string ini =
      "[run]\nseed = 13\nout_dir = /tmp\n[data]\npath = " + root +
      "\nblock_size = 8\n[model]\nlayers = " + std::string(testref::kTinyGpt) +
      "\n"
      "[train]\nglobal_batch = 24\n[optim]\nname = adamw\nlr = 0.01\nweight_decay = 0.1\nweight_decay_1d = false\n"
      "clip_norm = 1.0\n[parallel]\nshard = optimizer\ngather_overlap = on\nbucket_mb = 0.001\n";
  const Config cfg = parse_config(ini, "zero-gpt.ini", {}, process_environment());
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  const int steps = 5;
  testref::train_steps(trainer, cfg, rt, index, sampler, steps);
  const auto ref = testref::reference_parameters(cfg, index, sampler, steps, rt.mesh().size(MeshDim::dp), 1);
  const auto [worst, biggest] = difference(trainer.model().parameters(), ref);
  EXPECT_LE(worst, 2e-6 * (1 + biggest)) << "GPT on " << world_size() << " rank(s)";
  expect_state_shared(trainer, "GPT");
  verify_identical(trainer.dp_comm(), trainer.model().parameters(), "sharded GPT parameters");
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

TEST(ShardedOptimizer, ReducedPrecisionEqualsTheUnshardedRun) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero_prec_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  // fp16 with a huge initial scale: the first steps overflow and are skipped on every rank alike.
  for (const char* precision : {"fp16", "bf16"}) {
    std::vector<float> params[4];
    std::int64_t skipped[4] = {0, 0, 0, 0};
    const char* const shards[4] = {"none", "optimizer", "gradients", "full"};
    for (const int shard : {0, 1, 2, 3}) {
      const std::string ini = "[run]\nseed = 3\nout_dir = /tmp\n[precision]\ndtype = " + std::string(precision) +
                              "\n[data]\npath = " + root +
                              "\n[model]\nlayers = flatten dense(16) relu dense(7)\n[train]\nglobal_batch = 24\n"
                              "[optim]\nname = adam\nlr = 0.01\n[precision]\nloss_scale = 1e30\nloss_scale_window = 2\n"
                              "[parallel]\nbucket_mb = 0.0002\nshard = " +
                              shards[shard] + "\n";
      const Config cfg = parse_config(ini, "zero-prec.ini", {}, process_environment());
      Runtime rt(cfg);
      Trainer trainer(cfg, rt, index);
      const Sampler sampler(sampler_options(cfg, index.train));
      testref::train_steps(trainer, cfg, rt, index, sampler, 8);
      params[shard] = testref::whole_parameters(trainer);
      skipped[shard] = trainer.skipped_steps();
    }
    for (const int shard : {1, 2, 3}) {
      const Tensor got = Tensor::wrap(params[shard].data(), {static_cast<std::int64_t>(params[shard].size())});
      const auto [worst, biggest] = difference(got, params[0]);
      EXPECT_LE(worst, 2e-6 * (1 + biggest))
          << precision << ", shard = " << shards[shard] << " on " << world_size() << " rank(s)";
      EXPECT_EQ(skipped[0], skipped[shard]) << precision << ", shard = " << shards[shard];
    }
    EXPECT_EQ(params[2], params[1]) << precision << ": shard = gradients differs from shard = optimizer";
    EXPECT_EQ(params[3], params[1]) << precision << ": shard = full differs from shard = optimizer";
    if (std::string(precision) == "fp16") {
      EXPECT_GT(skipped[2], 0) << "the test must exercise overflow agreement";
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// [parallel] shard_by = tensors: each rank owns whole tensors (balanced by size) and every
// element is owned once; the gradients are allreduced as without sharding and the updated
// tensors broadcast from their owners, so the parameters are bit-identical to the unsharded
// run's (no clipping: a norm summed shard by shard may differ in its last bit), with the
// broadcasts waited for at once or overlapped with the next forward.
TEST(ShardedOptimizer, WholeTensorShardsEqualTheUnshardedRunBitwise) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero_tensors_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  auto train = [&](const std::string& parallel) {
    const std::string ini = "[run]\nseed = 5\nout_dir = /tmp\n[data]\npath = " + root +
                            "\n[model]\nlayers = flatten dense(16) relu dense(12) relu dense(7)\n[train]\n"
                            "global_batch = 24\n[optim]\nname = adamw\nlr = 0.01\nweight_decay = 0.1\n"
                            "[parallel]\nbucket_mb = 0.0002\n" +
                            parallel;
    const Config cfg = parse_config(ini, "zero-tensors.ini", {}, process_environment());
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    testref::train_steps(trainer, cfg, rt, index, sampler, 6);
    const Tensor& p = trainer.model().parameters();
    if (!parallel.empty() && world_size() > 1) {  // whole tensors, each owned once
      const auto& owned = trainer.averager().owned();
      std::int64_t mine = 0;
      for (const Range& r : owned) {
        mine += r.size();
        bool whole = false;
        for (const ParamInfo& t : trainer.model().param_info())
          whole = whole || (r == Range{t.offset, t.offset + numel(t.shape)});
        EXPECT_TRUE(whole) << r << " is not one tensor";
      }
      EXPECT_EQ(trainer.optimizer().state_elems(), mine);
      std::int64_t all = mine;
      trainer.dp_comm().allreduce(&all, &all, 1, DType::i64, ReduceOp::sum);
      EXPECT_EQ(all, p.numel());
    }
    return std::vector<float>(p.data(), p.data() + p.numel());
  };
  const auto plain = train("");
  for (const char* overlap : {"off", "on"}) {
    const auto got = train(std::string("shard = optimizer\nshard_by = tensors\ngather_overlap = ") + overlap + "\n");
    EXPECT_EQ(got, plain) << "gather_overlap = " << overlap << " on " << world_size() << " rank(s)";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// With model parallelism: each stage's data-parallel group shards that stage's state (M = 2 at 2
// and 4 ranks, so D = 1 and 2), and with shard = gradients its gradients too, against one
// process on the whole model.
TEST(ShardedOptimizer, PipelineStagesShardTheirOwnStateAndMatchOneProcess) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two pipeline stages need an even world size";
  const std::string root = testref::make_synthetic_dataset("hpct_zero_pipe_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  // (gradients, full: each stage's group keeps its share of the gradients, and of the parameters)
  for (const std::string shard : {"optimizer", "gradients", "full"}) {
    const std::string ini =
        "[run]\nseed = 5\nout_dir = /tmp\n[data]\npath = " + root +
        "\n[model]\nlayers = flatten dense(12) tanh dropout(25) dense(10) relu dense(7)\n[train]\nglobal_batch = "
        "24\nmicro_batches = 2\n[optim]\nname = adam\nlr = 0.01\nclip_norm = 0.5\n[parallel]\npipeline_parallel = "
        "2\nshard = " +
        shard + "\nbucket_mb = 0.0002\n";
    const Config cfg = parse_config(ini, "zero-pipe.ini", {}, process_environment());
    Runtime rt(cfg);
    Trainer trainer(cfg, rt, index);
    const Sampler sampler(sampler_options(cfg, index.train));
    testref::train_steps(trainer, cfg, rt, index, sampler, 4);
    const int dp_size = rt.mesh().size(MeshDim::dp);
    EXPECT_EQ(trainer.averager().staged(), shard != "optimizer" && dp_size > 1);
    EXPECT_EQ(trainer.model().store().packed_parameters(), shard == "full" && dp_size > 1);
    const auto ref = testref::reference_parameters(cfg, index, sampler, 4, dp_size, 2);
    double worst = 0, biggest = 0;
    const std::vector<float> got = testref::whole_parameters(trainer);
    for (const ParamInfo& p : trainer.model().param_info())
      for (std::int64_t i = 0; i < numel(p.shape); ++i) {
        const double want = ref[static_cast<std::size_t>(p.global_offset + i)];
        worst = std::max(worst, std::fabs(got[static_cast<std::size_t>(p.offset + i)] - want));
        biggest = std::max(biggest, std::fabs(want));
      }
    EXPECT_LE(worst, 2e-6 * (1 + biggest))
        << "M = 2, D = " << dp_size << ", stage " << rt.mesh().coord(MeshDim::pp) << ", shard = " << shard;
    expect_state_shared(trainer, "pipeline stage, shard = " + shard);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// A checkpoint: each rank writes only optimizer state it holds (checkpoint/state_writes.hpp). The file holds every
// owner's state bit for bit (the reference: each rank's state expanded to the parameters' layout, summed over the
// group, where each element has one owner), sharded and not, at D = 1-4 and with two pipeline stages; a frozen layer's
// state is zero.
TEST(ShardedOptimizer, CheckpointHoldsEveryOwnersStateExactly) {
  const std::string root = testref::make_synthetic_dataset("hpct_zero_ckpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const std::string dir = shared_dir("hpct_zero_ckpt_dir_");
  for (const int mp : {1, 2})
    for (const int shard : {1, 0}) {
      if (world_size() % mp != 0) continue;
      const std::string ini = "[run]\nseed = 9\nout_dir = /tmp\n[data]\npath = " + root +
                              "\n[model]\nlayers = flatten dense(12) tanh dense(10) relu dense(7)\n"
                              "[train]\nglobal_batch = 24\nfreeze = dense.1\n[optim]\nname = adam\nlr = "
                              "0.01\n[parallel]\npipeline_parallel = " +
                              std::to_string(mp) + "\nshard = " + (shard ? "optimizer" : "none") +
                              "\nbucket_mb = 0.0002\n[checkpoint]\ndir = " + dir + "\nkeep = 8\n";
      const Config cfg = parse_config(ini, "zero-ckpt.ini", {}, process_environment());
      Runtime rt(cfg);
      Trainer trainer(cfg, rt, index);
      const Sampler sampler(sampler_options(cfg, index.train));
      testref::train_steps(trainer, cfg, rt, index, sampler, 3);
      Checkpointer checkpointer(cfg, rt, trainer.dp_comm(), trainer.model(), trainer.optimizer(), trainer.groups());
      const IntervalSums sums;
      TrainState progress = trainer.state();
      progress.step = 10 * mp + shard;  // (a file per case)
      const std::string path = checkpointer.save(progress, sums);
      Optimizer& opt = trainer.optimizer();
      Model& model = trainer.model();
      const std::int64_t n = model.parameters().numel();
      const auto states = opt.state_names();
      std::vector<float> want(static_cast<std::size_t>(n) * states.size(), 0.f);
      expand_state(opt, opt.state().data(), want.data(), n);
      if (shard) trainer.dp_comm().allreduce(want.data(), want.data(), want.size(), DType::f32, ReduceOp::sum);
      const std::string what = "M = " + std::to_string(mp) + ", D = " + std::to_string(rt.mesh().size(MeshDim::dp)) +
                               (shard ? ", sharded" : ", not sharded");
      if (rt.mesh().coord(MeshDim::dp) == 0) {
        const CheckpointFile file(path);
        std::int64_t wrong = 0, checked = 0, frozen_nonzero = 0;
        for (std::size_t k = 0; k < states.size(); ++k)
          for (const ParamInfo& p : model.param_info()) {
            std::vector<float> got(static_cast<std::size_t>(numel(p.shape)));
            file.read("optimizer/" + states[k] + "/" + p.name, got.data());
            const float* w = want.data() + static_cast<std::int64_t>(k) * n + p.offset;
            for (std::size_t i = 0; i < got.size(); ++i) {
              wrong += std::memcmp(&got[i], &w[i], sizeof(float)) != 0;
              if (p.name.rfind("dense.1.", 0) == 0) frozen_nonzero += got[i] != 0.f;
            }
            checked += static_cast<std::int64_t>(got.size());
          }
        EXPECT_EQ(wrong, 0) << what << ": optimizer state elements differ from their owners'";
        EXPECT_EQ(frozen_nonzero, 0) << what;
        EXPECT_EQ(checked, n * static_cast<std::int64_t>(states.size())) << what;
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  if (world_rank() == 0) {
    fs::remove_all(dir);
    fs::remove_all(root);
  }
}

// A trainer made for inference (--eval-only, --generate) holds the weights alone: no optimizer
// state, no whole gradient buffer (unsharded), no random initial values; loading a training run's
// checkpoint into it, unsharded and with shard = full (its share packed), evaluates exactly as the
// training trainer does. Without the load it does not (negative control: the weights start at 0).
TEST(ShardedOptimizer, InferenceTrainerHoldsTheWeightsAloneAndEvaluatesTheCheckpoint) {
  const std::string root = testref::make_synthetic_dataset("hpct_infer_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  const std::string dir = shared_dir("hpct_infer_dir_");
  auto config = [&](const char* shard) {
    const std::string ini = "[run]\nseed = 9\nout_dir = /tmp\n[data]\npath = " + root +
                            "\n[model]\nlayers = flatten dense(12) tanh dense(10) relu dense(7)\n"
                            "[train]\nglobal_batch = 24\n[optim]\nname = adamw\nlr = 0.01\n[parallel]\nshard = " +
                            shard + "\nbucket_mb = 0.0002\n[checkpoint]\ndir = " + dir + "\n";
    return parse_config(ini, "infer.ini", {}, process_environment());
  };
  const Config trained_cfg = config("none");
  Runtime rt(trained_cfg);
  Trainer trainer(trained_cfg, rt, index);
  const Sampler sampler(sampler_options(trained_cfg, index.train));
  testref::train_steps(trainer, trained_cfg, rt, index, sampler, 3);
  Checkpointer saver(trained_cfg, rt, trainer.dp_comm(), trainer.model(), trainer.optimizer(), trainer.groups());
  const IntervalSums no_sums;
  const std::string path = saver.save(trainer.state(), no_sums);
  const EvalResult want = trainer.evaluate(*index.test);
  for (const char* shard : {"none", "full"}) {
    const Config cfg = config(shard);
    Runtime irt(cfg);
    Trainer inference(cfg, irt, index, Purpose::inference);
    const std::string what = std::string("shard = ") + shard;
    EXPECT_EQ(inference.optimizer().state().numel(), 0) << what;
    if (!inference.model().store().staged()) {
      EXPECT_FALSE(inference.model().gradients().defined()) << what;
    }
    EXPECT_EQ(inference.memory_estimate().state, 0) << what;
    const EvalResult before = inference.evaluate(*index.test);  // (all weights 0: every class alike)
    EXPECT_NE(before.loss, want.loss) << what;
    Checkpointer loader(cfg, irt, inference.dp_comm(), inference.model(), inference.optimizer(), inference.groups());
    IntervalSums sums;
    loader.load(path, sums, Checkpointer::LoadFor::inference);
    inference.model().refresh_compute_parameters();
    const EvalResult got = inference.evaluate(*index.test);
    EXPECT_EQ(got.loss, want.loss) << what;
    EXPECT_EQ(got.accuracy, want.accuracy) << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    fs::remove_all(dir);
    fs::remove_all(root);
  }
}

// An inference trainer's model is forward-only (no gradient buffers between layers) and runs each
// residual block's inner layers as recompute = blocks does, dropping their tensors once the block
// has run (nothing reads them: no backward): a GPT of two
// attention and two MLP blocks evaluates the same loss with the training trainer's weights,
// keeping at most half the saved tensors (one block's of each kind's two, and the top-level
// layers'); without the recompute set it keeps all of them and fails.
TEST(ShardedOptimizer, InferenceTrainerKeepsNoBlockTensors) {
  const std::string root = testref::make_token_dataset("hpct_infer_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const std::string ini = "[run]\nseed = 13\nout_dir = /tmp\n[data]\npath = " + root +
                          "\nblock_size = 8\n[model]\nlayers = embedding(11, 8) position_embedding repeat(2, "
                          "res(layernorm attention(2)) res(layernorm linear(16) gelu linear(8))) layernorm(bias=0) "
                          "lm_head(11)\n[train]\nglobal_batch = 24\n[optim]\nname = adamw\nlr = 0.01\n";
  const Config cfg = parse_config(ini, "infer-gpt.ini", {}, process_environment());
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const EvalResult want = trainer.evaluate(*index.val);
  const std::size_t trained_saved = trainer.model().saved_bytes();
  Trainer inference(cfg, rt, index, Purpose::inference);
  Model& m = inference.model();
  std::copy_n(trainer.model().parameters().data(), m.parameters().numel(), m.parameters().data());
  m.refresh_compute_parameters();
  const EvalResult got = inference.evaluate(*index.val);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.accuracy, want.accuracy);
  EXPECT_GT(trained_saved, 0u);
  EXPECT_LE(m.saved_bytes(), trained_saved / 2) << "saved tensors: training's trainer " << trained_saved;
  EXPECT_FALSE(m.dout().defined()) << "a forward-only model has no gradient buffers";
  EXPECT_TRUE(trainer.model().dout().defined());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
