// Training on the GPU against the CPU: the trainer with [run] device = cuda and
// device = cpu, from the same initial parameters and batches, k steps, on an
// MLP with dropout and a CNN with batch norm, max pooling and a residual block;
// the parameters agree within 1e-4 (relative to the largest parameter: float
// sums in other orders, cuBLAS blocking; SGD with momentum keeps such
// differences proportional, where Adam would turn a near-zero gradient of
// either sign into a full step). Also: recompute = blocks gives the same bits; once warm, a training step
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
// `extra_sections`: whole sections ("[kernels]\ncuda_graphs = true\n") after [run]; `extra_optim`: [optim] keys.
Config config(const std::string& root, const char* device, const std::string& layers,
              const std::string& extra_sections = "", const std::string& extra_optim = "",
              const std::string& optimizer = "sgd") {
  const std::string ini = "[run]\nseed = 5\nout_dir = /tmp\ndevice = " + std::string(device) + "\n" + extra_sections +
                          "[data]\npath = " + root + "\n[model]\nlayers = " + layers +
                          "\n[train]\nglobal_batch = 24\nmicro_batches = 2\n[optim]\nname = " + optimizer +
                          "\nlr = 0.05\nmomentum = 0.9\n" + extra_optim;
  return parse_config(ini, "gpu-test.ini", {}, process_environment());
}

// A token model's run here: windows of 8, SGD with weight decay 0.1 on every parameter.
Config token_config(const std::string& root, const char* device, const std::string& layers,
                    const std::string& extra_sections = "") {
  Config c = config(root, device, layers, extra_sections, "weight_decay = 0.1\nweight_decay_1d = false\n", "sgd");
  c.model.block_size = 8;
  return c;
}

// One trainer on the test's dataset: the runtime, the trainer and the sample order.
struct Session {
  Session(const Config& c, const DatasetIndex& idx)
      : cfg(c), index(idx), rt(cfg), trainer(cfg, rt, idx), sampler(sampler_options(cfg, idx.train)) {}
  void steps(int n) { testref::train_steps(trainer, cfg, rt, index, sampler, n); }
  std::vector<float> parameters() { return to_host(trainer.model().parameters()); }
  Config cfg;
  const DatasetIndex& index;
  Runtime rt;
  Trainer trainer;
  Sampler sampler;
};

// The GPU run's parameters against the CPU run's: largest difference within 1e-4 of the largest parameter.
void expect_parameters_close(const std::vector<float>& cpu, const std::vector<float>& gpu, const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  double worst = 0, largest = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double d = std::fabs(cpu[i] - gpu[i]);
    if (d > worst) worst = d, at = i;
    largest = std::max(largest, static_cast<double>(std::fabs(cpu[i])));
  }
  EXPECT_LT(worst / largest, 1e-4) << what << "\n  worst: parameter element " << at << " of " << cpu.size() << ", cpu "
                                   << cpu[at] << " gpu " << gpu[at] << ", largest |parameter| " << largest;
  EXPECT_GT(largest, 0) << what;
}

// A GPU, and a small synthetic dataset made for each test (removed after it).
class CudaTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    root_ = testref::make_synthetic_dataset("hpct_gpu_");
    index_ = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root_);
  }
  void TearDown() override {
    if (root_.empty()) return;
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) fs::remove_all(root_);
  }
  std::string root_;
  DatasetIndex index_;
};
}  // namespace

TEST_F(CudaTraining, StepsMatchTheCpu) {
  for (const std::string layers :
       {"flatten dense(32) relu dropout(20) dense(16) gelu dense(7)",
        "conv(8,3,pad=1) batchnorm relu res(conv(8,3,pad=1) relu) maxpool(2,stride=1) avgpool(2) flatten dense(7)"}) {
    Session on_cpu(config(root_, "cpu", layers), index_), on_gpu(config(root_, "cuda", layers), index_);
    on_cpu.steps(5);
    on_gpu.steps(5);
    expect_parameters_close(on_cpu.parameters(), on_gpu.parameters(), layers);
    // Batch norm's running statistics (on the GPU: cuDNN's device copies, brought to the host).
    on_cpu.trainer.model().sync_buffers(true);
    on_gpu.trainer.model().sync_buffers(true);
    const auto cb = on_cpu.trainer.model().buffers(), gb = on_gpu.trainer.model().buffers();
    ASSERT_EQ(cb.size(), gb.size());
    for (std::size_t b = 0; b < cb.size(); ++b)
      for (std::size_t i = 0; i < cb[b].second->size(); ++i)
        EXPECT_NEAR((*gb[b].second)[i], (*cb[b].second)[i], 1e-4 * std::max(1.f, std::fabs((*cb[b].second)[i])))
            << layers << " " << cb[b].first << "[" << i << "]";
  }
}

// A GPT (token windows, tied head, attention and MLP dropout, SGD with momentum and weight decay):
// five steps on the GPU equal five on the CPU within the same 1e-4. With AdamW the H200 put them
// 3.0e-4 apart (2026-12-04): Adam divides each gradient element by its own running magnitude, so
// the float32 summation-order differences of elements near zero become differences of a sizeable
// fraction of the rate; SGD keeps them proportional (the header). AdamW's update itself is compared
// element by element in CudaOps.OptimizerUpdates. [train] loss_chunk too, eager and recorded; and
// a model with OLMo 2's and Gemma 2's attention options.
TEST_F(CudaTraining, GptStepsMatchTheCpu) {
  const std::string root = testref::make_token_dataset("hpct_gpu_gpt_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const std::string layers =
      "embedding(11, 16) position_embedding repeat(2, res(layernorm attention(4, dropout=10)) res(layernorm "
      "linear(64) gelu dropout(10) linear(16))) layernorm(bias=0) lm_head(11)";
  // OLMo 2's and Gemma 2's attention options (2026-12-07, never run on a GPU yet): the weighted
  // QK-norm over all heads (qk_whole), scores scaled by 1 / sqrt(2) (query_scalar) and soft-capped,
  // norms after the sublayers only. The same 1e-4.
  const std::string modern =
      "embedding(11, 16) repeat(2, res(attention(4, kv_heads=2, rope=10000, qk_norm=1, qk_norm_weight=1, qk_whole=1, "
      "bias=0, query_scalar=2, softcap=3) rmsnorm) res(linear(32, bias=0) swiglu linear(16, bias=0) rmsnorm)) "
      "rmsnorm lm_head(11, tie=0)";
  std::vector<float> gpt_on_cpu;  // (the GPT's CPU parameters, for the chunked runs below)
  for (const std::string& model : {modern, layers}) {
    Session cpu(token_config(root, "cpu", model), index), gpu(token_config(root, "cuda", model), index);
    cpu.steps(5);
    gpu.steps(5);
    gpt_on_cpu = cpu.parameters();
    expect_parameters_close(gpt_on_cpu, gpu.parameters(), model);
  }
  // [train] loss_chunk on the GPU (lm_head and the loss 5 of the 96 positions at a time), eager
  // and recorded as a CUDA graph: the same 1e-4 from the CPU's unchunked run.
  for (const char* sections : {"", "[kernels]\ncuda_graphs = true\n"}) {
    Config c = token_config(root, "cuda", layers, sections);
    c.train.loss_chunk = 5;
    Session chunked(c, index);
    chunked.steps(5);
    expect_parameters_close(gpt_on_cpu, chunked.parameters(), layers + ", loss_chunk = 5 " + sections);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// [train] recompute = blocks on the GPU: the GPT with dropout inside its blocks, four steps eager
// and four with CUDA graphs (a block's re-run forward is recorded with the step): the parameters
// are the same bits as recompute = none's (the same kernels on the same values; dropout's mask is
// drawn again from the same key).
TEST_F(CudaTraining, RecomputeBlocksGivesTheSameBits) {
  const std::string root = testref::make_token_dataset("hpct_gpu_recompute_");
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const std::string layers =
      "embedding(11, 16) position_embedding repeat(2, res(layernorm attention(4, dropout=10) dropout(10)) "
      "res(layernorm linear(64) gelu dropout(10) linear(16))) layernorm(bias=0) lm_head(11)";
  for (const bool graphs : {false, true}) {
    auto make = [&](Recompute r) {
      Config c = config(root, "cuda", layers, graphs ? "[kernels]\ncuda_graphs = true\n" : "", "", "adamw");
      c.model.block_size = 8;
      c.train.recompute = r;
      return c;
    };
    Session none(make(Recompute::none), index), blocks(make(Recompute::blocks), index);
    none.steps(4);
    blocks.steps(4);
    EXPECT_EQ(none.parameters(), blocks.parameters()) << (graphs ? "recorded" : "eager");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// bf16 and fp16: the GPT (its attention rounds the GEMM operands cuBLAS rounds, on both backends)
// agrees with the CPU to the same bound as the MLP: 1e-2 of the largest parameter after five steps
// (16-bit activations turn float32 summation-order differences into whole 16-bit steps now and
// then). SGD with momentum for both: with AdamW the H200 put the GPT 0.17 (bf16) and 0.12 (fp16)
// apart (2026-12-04), Adam's per-element division magnifying those 16-bit steps in near-zero
// gradients (GptStepsMatchTheCpu); the MLP, with SGD, passed there. To be confirmed on a GPU.
TEST_F(CudaTraining, SixteenBitStepsMatchTheCpu) {
  const std::string root = testref::make_token_dataset("hpct_gpu_gpt16_");
  const DatasetIndex tokens = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root, 8);
  const std::string gpt =
      "embedding(11, 16) position_embedding repeat(2, res(layernorm attention(4)) res(layernorm "
      "linear(64) gelu linear(16))) layernorm(bias=0) lm_head(11)";
  for (const char* precision : {"bf16", "fp16"}) {
    const std::string run = std::string("[precision]\ndtype = ") + precision + "\n";
    for (const bool is_gpt : {false, true}) {
      auto make = [&](const char* device) {
        Config c =
            config(is_gpt ? root : root_, device, is_gpt ? gpt : "flatten dense(32) relu dense(16) gelu dense(7)", run,
                   is_gpt ? "weight_decay = 0.1\n" : "", "sgd");
        if (is_gpt) c.model.block_size = 8;
        return c;
      };
      const DatasetIndex& index = is_gpt ? tokens : index_;
      Session on_cpu(make("cpu"), index), on_gpu(make("cuda"), index);
      on_cpu.steps(5);
      on_gpu.steps(5);
      const auto c = on_cpu.parameters(), g = on_gpu.parameters();
      double worst = 0, largest = 0;
      std::size_t at = 0;
      for (std::size_t i = 0; i < c.size(); ++i) {
        const double d = std::fabs(c[i] - g[i]);
        if (d > worst) worst = d, at = i;
        largest = std::max(largest, static_cast<double>(std::fabs(c[i])));
      }
      EXPECT_LT(worst / largest, 1e-2) << precision << (is_gpt ? " GPT" : " MLP") << ": parameter element " << at
                                       << " cpu " << c[at] << " gpu " << g[at];
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

// [kernels] cuda_graphs: step 1 runs eagerly, step 2 is recorded, later steps replay the recording;
// the parameters equal an eager run's (bit for bit for the MLP: the same kernels in the same
// order; within 1e-5 for the CNNs, whose cuDNN algorithms each trainer picks by timing; batch
// norm on one rank runs on the device through cuDNN and replays too).
TEST_F(CudaTraining, RecordedStepsEqualEagerSteps) {
  struct Case {
    const char* layers;
    const char* optimizer;
    double tol;
  };
  for (const Case& c :
       {Case{"flatten dense(64) relu dropout(20) dense(32) gelu dense(7)", "adam", 0.0},
        Case{"conv(8,3,pad=1) relu res(conv(8,3,pad=1) relu) maxpool(2,stride=1) flatten dense(7)", "sgd", 1e-5},
        Case{"conv(8,3,pad=1) batchnorm relu flatten dense(16) batchnorm relu dense(7)", "sgd", 1e-5}}) {
    std::vector<float> params[2];
    for (int graphs = 0; graphs < 2; ++graphs) {
      Session run(config(root_, "cuda", c.layers, graphs ? "[kernels]\ncuda_graphs = true\n" : "", "", c.optimizer),
                  index_);
      run.steps(6);
      EXPECT_EQ(run.trainer.replaying(), graphs == 1) << c.layers;
      params[graphs] = run.parameters();
    }
    ASSERT_EQ(params[0].size(), params[1].size());
    double worst = 0;
    for (std::size_t i = 0; i < params[0].size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(params[0][i] - params[1][i])));
    EXPECT_LE(worst, c.tol) << c.layers;
  }
}

TEST_F(CudaTraining, WarmStepsAllocateNothingFromTheDriver) {
  Session run(config(root_, "cuda", "flatten dense(64) relu dropout(10) dense(7)"), index_);
  run.steps(2);  // warm-up: buffers and scratch grow
  const auto before = cuda::pool_stats().driver_allocations;
  run.steps(4);
  EXPECT_EQ(cuda::pool_stats().driver_allocations, before);
}

// The memory estimate on the GPU (train/memory_estimate.hpp): the allocator's peak after two steps
// of an MLP with dropout and of a CNN with batch norm and a residual block (cuDNN convolutions),
// within 5% (on the CPU the example decks' peaks equal it: docs/performance.md); the GPU's free
// memory, which the start-up check reads, is positive and falls by what an allocation takes.
TEST_F(CudaTraining, MemoryEstimateIsThePeak) {
  for (const char* layers : {"flatten dense(64) relu dropout(10) dense(7)",
                             "conv(8,3,pad=1) batchnorm relu res(conv(8,3,pad=1) relu) maxpool(2) flatten dense(7)"}) {
    Session run(config(root_, "cuda", layers), index_);
    run.steps(2);
    const double est = run.trainer.memory_estimate().total(), peak = static_cast<double>(run.trainer.allocator_peak());
    EXPECT_NEAR(est, peak, 0.05 * peak) << layers << ": estimate " << est << ", peak " << peak;
  }
  const std::size_t before = cuda::free_device_memory();
  EXPECT_GT(before, 0u);
  void* p = cuda::device_allocate(std::size_t{1} << 30);  // (a new 1 GiB block: the pool caches nothing that size)
  EXPECT_LE(cuda::free_device_memory(), before - (std::size_t{1} << 29));
  cuda::device_release(p, std::size_t{1} << 30);
}

TEST_F(CudaTraining, Fp16OverflowSkipsTheStep) {
  Session run(
      config(root_, "cuda", "flatten dense(32) relu dense(7)", "[precision]\ndtype = fp16\nloss_scale = 1e12\n", ""),
      index_);
  const auto before = run.parameters();
  run.steps(1);
  EXPECT_TRUE(run.trainer.last_step_skipped());
  EXPECT_EQ(run.trainer.loss_scale(), 5e11);
  EXPECT_EQ(run.parameters(), before);
}
