// Tensor parallelism ([parallel] tensor_parallel = T, Megatron-style) at 2 and 4 ranks: a GPT
// (attention split by heads with dropout on the probabilities, the MLP's column- then
// row-parallel linear pair, biases, dropout after both) and a Llama
// (grouped-query attention with RoPE, Qwen2's q, k and v biases split by heads, Qwen3's weighted
// QK-norm whose replicated weights each rank's heads give a part of the gradient, heads of 4 columns
// at a width of 8 (head_dim), the fused gate|up pair split part by part) reach,
// after k steps, the parameters of one process training the whole model on the same batches, in
// every listed layout: T alone, T with micro-batches and recompute = blocks, T x data-parallel
// (with shard = optimizer, gradients and full), T x pipeline stages, T = 4, and at 8 ranks (pipeline_np8) 3-D:
// T x P x D = 2 x 2 x 2, also with micro-batches and recompute (a head tied across stages is
// refused with sharding, as without tensor parallelism); and with sequence parallelism (the
// norms, dropout, position embeddings and residual sums on each rank's block of the positions) at
// T = 2 with micro-batches and recompute, with shard = gradients, at T = 4, and in 3-D; and with
// [train] loss_chunk (the head and the vocabulary-parallel loss 3 or 5 positions at a time) with
// sequence parallelism, on a pipeline's last stage and with shard = gradients. Stated tolerance: max
// |difference| <= 2e-6 * (1 + max |parameter|), the data-parallel tests' (the split sums add in
// another order). clip_norm is small enough to clip every step, so the global norm must count
// each split block once and each replicated tensor once (a negative control below shows the
// comparison catches a norm that counts them T times).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "hpctrain/data/reader.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "reference_training.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

const char* const kGpt =
    "embedding(11, 8) position_embedding repeat(2, res(layernorm attention(4, dropout=20) dropout(10)) res(layernorm "
    "linear(16, tp=column) gelu linear(8, tp=row) dropout(10))) layernorm lm_head(11)";
const char* const kLlama =
    "embedding(11, 8) repeat(2, res(rmsnorm attention(4, kv_heads=2, proj_bias=0, rope=10000, qk_norm=1, "
    "qk_norm_weight=1, head_dim=4)) res(rmsnorm "
    "linear(32, bias=0, tp=column, parts=2) swiglu linear(8, bias=0, tp=row))) rmsnorm lm_head(11)";
// Gemma 3's pieces: scaled embeddings, norms by 1 + weight after the sublayers too (after the
// row-parallel sums), the weighted QK-norm by 1 + weight, GeGLU (at 2 ranks only: the time).
const char* const kGemma =
    "embedding(11, 8) scale(2.8284271) repeat(2, res(rmsnorm(offset=1) attention(4, kv_heads=2, bias=0, rope=10000, "
    "qk_norm=1, qk_norm_weight=1, qk_offset=1, head_dim=4) rmsnorm(offset=1)) res(rmsnorm(offset=1) "
    "linear(32, bias=0, tp=column, parts=2) geglu linear(8, bias=0, tp=row) rmsnorm(offset=1))) rmsnorm(offset=1) "
    "lm_head(11)";

struct Layout {
  int tp = 1, pp = 1, micro = 1;
  const char* shard = "none";
  bool recompute = false;
  bool llama_too = true;  // (T = 4 splits 4 query heads but not the Llama's 2 key/value heads)
  bool sequence = false;  // [parallel] sequence_parallel
  long loss_chunk = 0;    // [train] loss_chunk: the vocabulary-parallel loss a few positions at a time
  std::string text() const {
    return "tp " + std::to_string(tp) + ", pp " + std::to_string(pp) + ", micro-batches " + std::to_string(micro) +
           ", shard " + shard + (recompute ? ", recompute" : "") + (sequence ? ", sequence-parallel" : "") +
           (loss_chunk > 0 ? ", loss_chunk " + std::to_string(loss_chunk) : "");
  }
};

// The listed layouts for a world size: every value of each axis that fits at least once.
std::vector<Layout> layouts(int world) {
  if (world == 2)
    return {{2, 1, 1, "none"},
            {2, 1, 2, "none", true},
            {2, 1, 2, "none", true, true, true},
            {2, 1, 2, "none", true, true, true, 5}};
  if (world == 4)
    return {{2, 1, 1, "none"},
            {2, 1, 1, "optimizer"},
            {2, 1, 2, "gradients"},
            {2, 1, 2, "full"},
            {2, 2, 1, "none"},
            {4, 1, 1, "none", false, false},
            {2, 1, 2, "gradients", false, true, true},
            {4, 1, 1, "none", false, false, true},
            {2, 2, 1, "none", false, true, false, 5},
            {2, 1, 2, "gradients", false, true, false, 3}};
  if (world == 8)  // 3-D: T x P x D = 2 x 2 x 2
    return {{2, 2, 1, "none"}, {2, 2, 2, "none", true}, {2, 2, 2, "none", false, true, true}};
  return {};
}

Config tp_config(const std::string& root, const char* layers, const Layout& l, double clip_norm) {
  const std::string ini =
      "[run]\nseed = 5\nout_dir = /tmp\n[data]\npath = " + root + "\n[model]\nlayers = " + layers +
      "\nblock_size = 8\nvocab_multiple = 4\n[train]\nglobal_batch = 8\nmicro_batches = " + std::to_string(l.micro) +
      "\n[optim]\nlr = 0.1\nmomentum = 0.9\nclip_norm = " + std::to_string(clip_norm) +
      "\n[parallel]\npipeline_parallel = " + std::to_string(l.pp) + "\ntensor_parallel = " + std::to_string(l.tp) +
      "\nshard = " + l.shard + "\nsequence_parallel = " + (l.sequence ? "true" : "false") + "\n";
  Config cfg = parse_config(ini, "tensor-parallel-test.ini", {}, process_environment());
  if (l.recompute) cfg.train.recompute = Recompute::blocks;
  cfg.train.loss_chunk = l.loss_chunk;
  return cfg;
}

// max |difference| / (1 + max |reference|) between this rank's blocks after `steps` steps and the
// same elements of one process's whole model.
double trained_difference(const Config& cfg, const DatasetIndex& index, int steps) {
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, steps);
  // The estimate's scratch covers the deepest layer call's (sequence parallelism's gathers included).
  EXPECT_GE(trainer.memory_estimate().act.scratch, 4.0 * static_cast<double>(trainer.model().arena_high_water()))
      << "tp " << cfg.parallel.tensor_parallel << ", pp " << cfg.parallel.pipeline_parallel << ", micro-batches "
      << cfg.train.micro_batches << (cfg.parallel.sequence_parallel ? ", sequence-parallel" : "") << ", loss_chunk "
      << cfg.train.loss_chunk << ", " << cfg.model.layers.substr(0, 40);
  const auto mine = testref::whole_parameters(trainer);
  // The store's accounting: over the group, each split tensor's blocks add up to the whole tensor
  // exactly once, and every rank holds each replicated one whole.
  for (const ParamInfo& p : trainer.model().param_info()) {
    std::int64_t held = numel(p.shape);
    MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_SUM, rt.mesh().comm(MeshDim::tp));
    EXPECT_EQ(held, numel(p.global_shape) * (tp_sharded(p) ? 1 : rt.mesh().size(MeshDim::tp))) << p.name;
  }
  const int dp = rt.mesh().size(MeshDim::dp);
  const auto ref = testref::reference_parameters(cfg, index, sampler, steps, dp, cfg.train.micro_batches);
  double worst = 0, biggest = 0;
  for (const ParamInfo& p : trainer.model().param_info())
    for (std::int64_t i = 0; i < numel(p.shape); ++i) {
      const double want = ref[static_cast<std::size_t>(p.global_offset + global_element(p, i))];
      worst = std::max(worst, std::fabs(static_cast<double>(mine[static_cast<std::size_t>(p.offset + i)]) - want));
      biggest = std::max(biggest, std::fabs(want));
    }
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst / (1 + biggest);
}

}  // namespace

TEST(TensorParallel, GptLlamaAndGemmaMatchOneProcessInEveryListedLayout) {
  const auto list = layouts(world_size());
  if (list.empty()) GTEST_SKIP() << "the listed tensor-parallel layouts are for 2, 4 and 8 ranks";
  const std::string root = testref::make_token_dataset("hpct_tp_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  for (const Layout& l : list)
    for (const char* layers : {kGpt, kLlama, kGemma}) {
      if ((layers != kGpt && !l.llama_too) || (layers == kGemma && world_size() != 2)) continue;
      const double d = trained_difference(tp_config(root, layers, l, 0.05), index, 3);
      EXPECT_LE(d, 2e-6) << (layers == kGpt ? "GPT, " : layers == kLlama ? "Llama, " : "Gemma 3, ") << l.text();
    }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// The comparison can fail: one process with twice the clipping threshold (what a norm counting
// every element of two ranks twice would amount to) ends measurably elsewhere.
TEST(TensorParallel, TheComparisonSeesANormCountedTwice) {
  if (world_size() != 2) GTEST_SKIP() << "run at 2 ranks";
  const std::string root = testref::make_token_dataset("hpct_tp_neg_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  Layout l;
  l.tp = 2;
  const Config cfg = tp_config(root, kGpt, l, 0.05);
  Runtime rt(cfg);
  Trainer trainer(cfg, rt, index);
  const Sampler sampler(sampler_options(cfg, index.train));
  testref::train_steps(trainer, cfg, rt, index, sampler, 3);
  Config doubled = cfg;
  doubled.optim.clip_norm = 0.05 * std::sqrt(2.0);
  const auto ref = testref::reference_parameters(doubled, index, sampler, 3, 1, 1);
  const auto mine = testref::whole_parameters(trainer);
  double worst = 0;
  for (const ParamInfo& p : trainer.model().param_info())
    for (std::int64_t i = 0; i < numel(p.shape); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(mine[static_cast<std::size_t>(p.offset + i)]) -
                                        ref[static_cast<std::size_t>(p.global_offset + global_element(p, i))]));
  EXPECT_GT(worst, 1e-4);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}
