// The run configuration: plain structs filled from an INI file (one section per
// struct, keys in docs/configuration.md) plus `--set section.key=value`
// overrides, validated once. Every key is declared in one schema
// (config/schema.hpp), which also produces the `--help` listing.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/core/precision.hpp"

namespace hpctrain {

// Every choice-valued key is an enum; its spellings are stated once, in the table its
// `choices_of` overload returns (the schema's choices, parsing and name_of read it).
enum class DeviceKind { auto_, cpu, cuda };
enum class ConvImpl { auto_, im2col, onednn };
enum class CpuGemmLib { auto_, openblas, onednn };
enum class Shuffle { global, chunk, none };
enum class LastBatch { drop, wrap };
// [data] format: hpctrain's HDF5 shards, or llm.c's .bin token shards (data/llmc_shards.hpp).
enum class DataFormat { auto_, hpctrain, llmc };
// [data] windows: where a token dataset's training windows start (data/token_dataset.hpp).
enum class TokenWindows { grid, random };
enum class OptimizerName { sgd, adam, adamw, muon };
enum class LrSchedule { constant, step, cosine, wsd };
enum class PipelineSchedule { gpipe, one_f_one_b };
enum class CommBackend { auto_, mpi, nccl };
enum class HostAllreduce { auto_, mpi, shm };
enum class Tristate { auto_, on, off };
// [parallel] shard_by: how a sharded optimizer divides the state (the parameter store's ownership policy).
enum class ShardBy { elements, tensors };
// [parallel] shard: what the data-parallel ranks divide among themselves (ZeRO's stages 0-2).
enum class Sharding { none, optimizer, gradients, full };
// [train] recompute: activation checkpointing.
enum class Recompute { none, blocks };
// [train] on_nonfinite: a step whose loss or gradient is not finite stops the run, or is dropped.
enum class OnNonfinite { stop, skip };
enum class Reproducible { off, layout };
// [train] loss: auto = cross_entropy for classes and tokens, mse for regression targets.
enum class LossKind { auto_, cross_entropy, mse, mae, huber };
// [model] mlp (arch = llama): SwiGLU (Llama's), ReLU-squared (modded-nanogpt's) or GeGLU (Gemma's).
enum class Mlp { swiglu, relu2, geglu };
// [model] activation (arch = gpt): the MLP's GELU, exact (nanoGPT's) or tanh-approximated (GPT-2's gelu_new, llm.c's).
enum class GptActivation { gelu, gelu_tanh };
// [model] attention_mask: causal, or causal within the documents <|endoftext|> separates.
enum class AttentionMask { causal, document };
// [model] arch: the network as a layers string, or a typed architecture (model/arch.hpp).
enum class Arch { layers, gpt, llama };
// [checkpoint] space_check: a checkpoint directory without room for keep + 1 checkpoints.
enum class SpaceCheck { error, warn, off };

template <typename E>
struct Choice {
  const char* name;
  E value;
};
template <typename E, std::size_t N>
using Choices = std::array<Choice<E>, N>;
// clang-format off
constexpr Choices<DeviceKind, 3> choices_of(DeviceKind) { return {{{"auto", DeviceKind::auto_}, {"cpu", DeviceKind::cpu}, {"cuda", DeviceKind::cuda}}}; }
constexpr Choices<ConvImpl, 3> choices_of(ConvImpl) { return {{{"auto", ConvImpl::auto_}, {"im2col", ConvImpl::im2col}, {"onednn", ConvImpl::onednn}}}; }
constexpr Choices<CpuGemmLib, 3> choices_of(CpuGemmLib) { return {{{"auto", CpuGemmLib::auto_}, {"openblas", CpuGemmLib::openblas}, {"onednn", CpuGemmLib::onednn}}}; }
constexpr Choices<Shuffle, 3> choices_of(Shuffle) { return {{{"global", Shuffle::global}, {"chunk", Shuffle::chunk}, {"none", Shuffle::none}}}; }
constexpr Choices<LastBatch, 2> choices_of(LastBatch) { return {{{"drop", LastBatch::drop}, {"wrap", LastBatch::wrap}}}; }
constexpr Choices<DataFormat, 3> choices_of(DataFormat) { return {{{"auto", DataFormat::auto_}, {"hpctrain", DataFormat::hpctrain}, {"llmc", DataFormat::llmc}}}; }
constexpr Choices<TokenWindows, 2> choices_of(TokenWindows) { return {{{"grid", TokenWindows::grid}, {"random", TokenWindows::random}}}; }
constexpr Choices<OptimizerName, 4> choices_of(OptimizerName) { return {{{"sgd", OptimizerName::sgd}, {"adam", OptimizerName::adam}, {"adamw", OptimizerName::adamw}, {"muon", OptimizerName::muon}}}; }
constexpr Choices<LrSchedule, 4> choices_of(LrSchedule) { return {{{"constant", LrSchedule::constant}, {"step", LrSchedule::step}, {"cosine", LrSchedule::cosine}, {"wsd", LrSchedule::wsd}}}; }
constexpr Choices<PipelineSchedule, 2> choices_of(PipelineSchedule) { return {{{"gpipe", PipelineSchedule::gpipe}, {"1f1b", PipelineSchedule::one_f_one_b}}}; }
constexpr Choices<CommBackend, 3> choices_of(CommBackend) { return {{{"auto", CommBackend::auto_}, {"mpi", CommBackend::mpi}, {"nccl", CommBackend::nccl}}}; }
constexpr Choices<HostAllreduce, 3> choices_of(HostAllreduce) { return {{{"auto", HostAllreduce::auto_}, {"mpi", HostAllreduce::mpi}, {"shm", HostAllreduce::shm}}}; }
constexpr Choices<LossKind, 5> choices_of(LossKind) { return {{{"auto", LossKind::auto_}, {"cross_entropy", LossKind::cross_entropy}, {"mse", LossKind::mse}, {"mae", LossKind::mae}, {"huber", LossKind::huber}}}; }
constexpr Choices<Tristate, 3> choices_of(Tristate) { return {{{"auto", Tristate::auto_}, {"on", Tristate::on}, {"off", Tristate::off}}}; }
constexpr Choices<ShardBy, 2> choices_of(ShardBy) { return {{{"elements", ShardBy::elements}, {"tensors", ShardBy::tensors}}}; }
constexpr Choices<Sharding, 4> choices_of(Sharding) { return {{{"none", Sharding::none}, {"optimizer", Sharding::optimizer}, {"gradients", Sharding::gradients}, {"full", Sharding::full}}}; }
constexpr Choices<Recompute, 2> choices_of(Recompute) { return {{{"none", Recompute::none}, {"blocks", Recompute::blocks}}}; }
constexpr Choices<OnNonfinite, 2> choices_of(OnNonfinite) { return {{{"stop", OnNonfinite::stop}, {"skip", OnNonfinite::skip}}}; }
constexpr Choices<Reproducible, 2> choices_of(Reproducible) { return {{{"off", Reproducible::off}, {"layout", Reproducible::layout}}}; }
constexpr Choices<Mlp, 3> choices_of(Mlp) {
  return {{{"swiglu", Mlp::swiglu}, {"relu2", Mlp::relu2}, {"geglu", Mlp::geglu}}};
}
constexpr Choices<GptActivation, 2> choices_of(GptActivation) { return {{{"gelu", GptActivation::gelu}, {"gelu_tanh", GptActivation::gelu_tanh}}}; }
constexpr Choices<AttentionMask, 2> choices_of(AttentionMask) { return {{{"causal", AttentionMask::causal}, {"document", AttentionMask::document}}}; }
constexpr Choices<Arch, 3> choices_of(Arch) { return {{{"layers", Arch::layers}, {"gpt", Arch::gpt}, {"llama", Arch::llama}}}; }
constexpr Choices<SpaceCheck, 3> choices_of(SpaceCheck) { return {{{"error", SpaceCheck::error}, {"warn", SpaceCheck::warn}, {"off", SpaceCheck::off}}}; }
constexpr Choices<Precision, 3> choices_of(Precision) { return {{{"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}}}; }
// clang-format on

// The spelling of a choice, as the configuration writes it ("1f1b", "auto").
template <typename E>
const char* name_of(E v) {
  for (const auto& c : choices_of(E{}))
    if (c.value == v) return c.name;
  return "?";
}

// The structs hold each key's default, stated once: the schema (config/schema.cpp) reads its
// default text off a default-constructed Config.
struct RunConfig {
  std::uint64_t seed = 42;
  DeviceKind device = DeviceKind::auto_;
  bool share_gpus = false;          // allow more ranks than GPUs on a node (round robin; MPI, not NCCL)
  std::uint64_t memory_budget = 0;  // bytes per rank for parameters, gradients, state, activations; 0 = no cap
  bool check_memory = true;         // at start-up, refuse a run whose memory estimate exceeds the free memory
  double price_per_device_hour = 0.0;
  double lock_stale_s = 1800;  // without flock: a directory lock's heartbeat older than this is a dead run's
  std::string out_dir = "runs";
  // layout: the parameters after every step do not depend on the data-parallel size or the
  // micro-batching (gradients summed exactly, per [train] micro_batch chunk; train/reproducible.hpp)
  Reproducible reproducible = Reproducible::off;
  // Every N steps and before every checkpoint write, the data-parallel replicas' parameters are
  // compared by hash; a mismatch stops the run with exit code 5 (0: never)
  long check_replicas_every = 0;
};

// [precision]: the compute format and what goes with it.
struct PrecisionConfig {
  Precision dtype = Precision::fp32;
  bool tf32 = false;              // cuda: cuBLAS may use TF32 tensor cores for float32 GEMMs
  double loss_scale = 65536.0;    // dtype = fp16: the initial dynamic loss scale
  long loss_scale_window = 2000;  // ... doubled after this many steps without overflow
};

// [kernels]: how the operations run (never what they compute, but for rounding).
struct KernelsConfig {
  CpuGemmLib cpu_gemm = CpuGemmLib::auto_;  // backend/cpu/sgemm.hpp
  ConvImpl conv = ConvImpl::auto_;
  bool fusion = true;        // a layer and the activation after it in one pass where the layer can
  bool cuda_graphs = false;  // cuda: replay the step as CUDA graphs
  int threads = 1;
};

// [log]: what a run reports, and where.
struct LogConfig {
  long log_every = 50;
  std::string metrics_file = "metrics.csv";
  bool tensorboard = true;  // event files under <out_dir>/tensorboard
  bool verbose = false;     // internal lines too (the gradient-sum path)
};

struct DataConfig {
  std::string path;
  DataFormat format = DataFormat::auto_;
  std::string train_glob = "*train*.bin", val_glob = "*val*.bin";  // format = llmc: the splits' files
  Shuffle shuffle = Shuffle::global;
  TokenWindows windows = TokenWindows::grid;
  LastBatch last_batch = LastBatch::drop;
  int prefetch = 2;
  std::uint64_t cache_bytes = 2ull << 30;
  int decode_threads = 0;    // chunk cache: threads inflating compressed chunks (0 = automatic)
  int chunk_window = 16;     // chunks shuffled together in shuffle = chunk
  int random_crop_pad = 0;   // training images: random crop after padding by this (0 = off)
  bool random_flip = false;  // training images: horizontal flip with probability 1/2
  std::string stage_dir;     // node-local staging (data/staging.hpp); "" = read `path` in place
};

struct ModelConfig {
  std::string layers;  // arch = gpt: filled from the dimensions once the dataset is known (app)
  Arch arch = Arch::layers;
  long n_layer = 0, n_head = 0, n_embd = 0;
  long vocab_size = 0;  // 0 = auto: the token dataset's vocabulary
  bool bias = true, tie_embeddings = true;
  double dropout = 0;  // a whole percent: 0.2 = dropout(20)
  GptActivation activation = GptActivation::gelu;
  long block_size = 0;  // token datasets: the context, window length T
  std::string groups = "auto";
  long vocab_multiple = 1;  // embedding / lm_head rows padded to a multiple (layers/registry.hpp)
  // arch = llama (model/arch.hpp llama_layers): the MLP's hidden width, RoPE's theta, the RMS
  // norms' epsilon, key/value heads (0 = n_head), the rotary scaling, and modded-nanogpt's options.
  long ffn_dim = 0, rope_theta = 10000, n_kv_heads = 0;
  double norm_eps = 1e-5;
  RopeScaling rope_scaling;  // [model] rope_scaling's text read (config/rope_scaling.hpp)
  AttentionMask attention_mask = AttentionMask::causal;
  Mlp mlp = Mlp::swiglu;
  bool qk_norm = false, zero_init = false;
  bool qkv_bias = false;        // arch = llama: biases on the query, key and value projections (Qwen2's)
  bool qk_norm_weight = false;  // arch = llama: qk_norm with learned weights (Qwen3's q_norm, k_norm)
  bool qk_norm_whole = false;   // arch = llama: that norm over all of a position's heads (OLMo 2's)
  bool post_norm = false;       // arch = llama: norms after attention and the MLP only, none before (OLMo 2's)
  long head_dim = 0;            // arch = llama: a head's columns; 0 = n_embd / n_head
  // arch = llama, Gemma's (model/arch.hpp llama_layers): norms by 1 + weight, scaled embeddings, norms
  // after the sublayers too, local layers' rotary base (0: none) and the global layers' period; the
  // sliding window of the local layers (every layer without global_every; 0: none).
  bool norm_offset = false, embed_scale = false, sandwich_norm = false;
  long rope_local_theta = 0, global_every = 0, sliding_window = 0;
  long no_rope_every = 0;  // arch = llama: every this-th layer without rotary positions (SmolLM3's NoPE); 0: none
  long rope_dims = 0;      // arch = llama: the first this many columns of each head rotate (Phi-4 mini's); 0: all
  double attn_softcap = 0, final_softcap = 0;  // arch = llama, Gemma 2's soft-capping of scores and logits
  double query_pre_attn_scalar = 0;            // arch = llama: scores scaled by its -1/2 power (Gemma 2's); 0: D
  // arch = llama, IBM Granite's (0: none): embeddings, sublayer outputs and scores times these, logits / the last.
  double embedding_multiplier = 0, residual_multiplier = 0, attention_multiplier = 0, logits_scaling = 0;
  // The attention heads' columns together (n_embd unless head_dim says otherwise).
  long attention_width() const { return head_dim ? n_head * head_dim : n_embd; }
  // The positions a layer's queries attend over, on average over the layers, at a context of T: T,
  // or min(T, sliding_window) on the local layers (FLOPs per token).
  double attention_span(long context) const {
    if (sliding_window < 1 || n_layer < 1) return static_cast<double>(context);
    const long global = global_every > 0 ? n_layer / global_every : 0;
    return (static_cast<double>(global) * static_cast<double>(context) +
            static_cast<double>(n_layer - global) * static_cast<double>(std::min(context, sliding_window))) /
           static_cast<double>(n_layer);
  }
};

struct TrainConfig {
  long global_batch = 64;
  int micro_batches = 1;
  long micro_batch = 0;  // rows per micro-batch on a rank; 0 = auto: from micro_batches (runtime/mesh.hpp)
  long epochs = 1;       // used when steps == 0
  long steps = 0;        // > 0: train this many optimizer steps instead of epochs
  long eval_every = 0;   // steps; 0 = at the end of every epoch
  bool sync_batchnorm = true;
  std::string freeze;                     // layers not updated: comma-separated name patterns ("" = none)
  Recompute recompute = Recompute::none;  // blocks: residual blocks re-run their forward in backward
  long loss_chunk = 0;  // > 0: lm_head and the loss run this many positions at a time (no whole logits)
  LossKind loss = LossKind::auto_;
  double huber_delta = 1.0;  // loss = huber: quadratic within this error, linear beyond
  // A step whose loss or gradient is not finite: stop (found at the next log interval), or skip
  // it on every rank (checked every step), stopping after max_skipped skipped in a row
  OnNonfinite on_nonfinite = OnNonfinite::stop;
  long max_skipped = 10;
  // > 0: a step whose loss exceeds this multiple of the mean of the last spike_window steps' is
  // skipped the same way (a loss spike)
  double spike_factor = 0;
  long spike_window = 50;
};

struct OptimConfig {
  OptimizerName name = OptimizerName::sgd;
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  LrSchedule schedule = LrSchedule::constant;
  long step_every = 1000;  // schedule = step: multiply the rate by `gamma` every this many steps
  double gamma = 0.1;
  long warmup_steps = 0;
  double min_lr = 0.0;          // schedule = cosine or wsd: the rate it decays to
  double decay_fraction = 0.2;  // schedule = wsd: the share of the steps, at the end, that decay
  bool weight_decay_1d = true;  // false: no weight decay on tensors of fewer than 2 dimensions
  double clip_norm = 0.0;
  // name = muon (optim/optimizer.hpp make_muon): the hidden weight matrices' rate (scaled by the
  // schedule as lr is), momentum and Newton-Schulz iterations; the other tensors take AdamW.
  double muon_lr = 0.02, muon_momentum = 0.95;
  long ns_steps = 5;
};

struct ParallelConfig {
  int pipeline_parallel = 1;  // the mesh's pp
  int tensor_parallel = 1;    // the mesh's tp
  // tensor_parallel > 1: the activations between the split pairs (norms, dropout, residual sums)
  // hold 1/T of the positions (Megatron's sequence parallelism)
  bool sequence_parallel = false;
  // The mesh's sp: each volume's depth split over this many ranks (docs/volumes.md)
  int spatial_parallel = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::one_f_one_b;
  CommBackend comm = CommBackend::auto_;
  Tristate cuda_aware_mpi = Tristate::auto_;
  HostAllreduce host_allreduce = HostAllreduce::auto_;  // gradient sums in host memory: MPI's or node-shared memory
  double bucket_mb = 25.0;
  // none; optimizer (ZeRO-1: each data-parallel rank keeps and updates 1/D of the state);
  // gradients (ZeRO-2: and keeps only its 1/D of the averaged gradients); full (ZeRO-3: and of
  // the parameters, gathered per bucket as the layers need them)
  Sharding shard = Sharding::none;
  ShardBy shard_by = ShardBy::elements;       // sharded: equal blocks of each bucket, or whole tensors
  Tristate gather_overlap = Tristate::auto_;  // sharded: the all-gather overlaps the next forward (auto: on GPUs)
  double watchdog_s = 300.0;                  // 0 disables the collective watchdog
};

// [checkpoint] resume: the newest complete checkpoint in dir, none, or one file.
struct ResumeFrom {
  enum class Kind { auto_, none, file } kind = Kind::auto_;
  std::string file;  // kind == file
  std::string text() const { return kind == Kind::auto_ ? "auto" : kind == Kind::none ? "none" : file; }
};

// [checkpoint] alignment: where checkpoint datasets start.
struct Alignment {
  enum class Kind { auto_, none, bytes } kind = Kind::auto_;  // auto: the file system's preferred I/O size
  std::uint64_t bytes = 0;                                    // kind == bytes
};

struct CheckpointConfig {
  std::string dir;  // "" (the default): <[run] out_dir>/checkpoints, filled in by parse_config
  long every_steps = 0;
  long every_epochs = 1;
  double every_minutes = 0.0;
  int keep = 3;
  ResumeFrom resume;
  bool resume_changed = false;  // resume = auto may go on with another train.steps / train.epochs
  // Fine-tuning: parameters (and buffers) from this checkpoint when the run starts fresh, for the
  // layers matching `init_layers` (comma-separated name patterns; "" = every layer that matches
  // by name and shape).
  std::string init_from;
  std::string init_layers;
  // Before training: room for keep + 1 checkpoints (free space plus the older checkpoints
  // rotation deletes)? error (exit 2), warn, or off.
  SpaceCheck space_check = SpaceCheck::error;
  // Parallel file systems: hints for the MPI-IO layer ("key=value,..."), and where datasets start
  // ("auto": the file system's preferred I/O size, "none", or bytes).
  std::string mpiio_hints;
  Alignment alignment;
  bool async = false;                            // write checkpoints in the background while training goes on
  Precision export_dtype = Precision::fp32;      // --export and --export-hf: the files' float format
  std::uint64_t export_shard_size = 5000000000;  // --export-hf: the largest safetensors shard (Hugging Face's 5GB)
};

// Where a key's value came from, for the --dry-run table and resume warnings.
struct ResolvedKey {
  std::string name;    // "section.key"
  std::string value;   // canonical text
  std::string source;  // "default", "file", "--set" (or "arch = gpt": model.layers)
};

// Faults a test injects into a run (docs/testing.md), read once from HPCTRAIN_TEST_* variables by
// the app (faults_from_environment) and handed down in the configuration: nothing below the app
// reads the environment for them. All off by default.
struct Faults {
  struct At {  // "RANK:STEP", the step 1-based
    int rank = -1;
    std::int64_t step = -1;
  };
  At signal;                     // HPCTRAIN_TEST_SIGNAL: that rank acts as if SIGUSR1 arrived during that step
  At stall;                      // HPCTRAIN_TEST_STALL: that rank stops before that step's flag exchange (a hung rank)
  std::int64_t fail_write = -1;  // HPCTRAIN_TEST_FAIL_WRITE=STEP: that checkpoint's write fails (a full disk)
  std::int64_t fail_checkpoint = -1;  // HPCTRAIN_TEST_FAIL_CHECKPOINT=STEP: it fails after writing, before the rename
  bool no_flock = false;              // HPCTRAIN_TEST_NO_FLOCK (set): directory locks without flock
  std::optional<std::uint64_t> free_bytes;  // HPCTRAIN_TEST_FREE_BYTES=N: the space checks see N free bytes
  At flip_bit;  // HPCTRAIN_TEST_FLIP_BIT: that rank flips a bit of its first parameter after that step's update
  // HPCTRAIN_TEST_NAN=RANK:STEP: that rank's loss and first gradient element are NaN from that step
  // on, for HPCTRAIN_TEST_NAN_STEPS steps (default 1); HPCTRAIN_TEST_SPIKE=RANK:STEP: that rank's
  // loss at that step is taken 1000 times over by the spike rule (its gradient unchanged)
  At nan;
  std::int64_t nan_steps = 1;
  At spike;
  // HPCTRAIN_TEST_KILL_IN_WRITE=RANK:STEP: that rank kills itself (SIGKILL) inside that step's
  // checkpoint write, after its part of the collective write, before the file is complete
  At kill_in_write;
};

struct Config {
  RunConfig run;
  PrecisionConfig precision;
  KernelsConfig kernels;
  LogConfig log;
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  OptimConfig optim;
  ParallelConfig parallel;
  CheckpointConfig checkpoint;

  std::string origin;                 // the INI file name, for messages
  std::string ini_text;               // the file as given (checkpoints store it)
  std::vector<ResolvedKey> resolved;  // every key, in schema order (current names only)
  std::vector<std::string> warnings;  // for rank 0 to print: old key names used
  Faults faults;                      // set by the app from the environment (tests only)

  // Canonical text of "section.key" (throws an internal error for an unknown name).
  const std::string& resolved_value(const std::string& name) const;
};

// Looks up an environment variable; nullopt when unset. Injected for tests and
// so that every rank expands `${VAR}` with rank 0's values.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// The HPCTRAIN_TEST_* variables `env` holds; bad_input naming the variable for a malformed value.
Faults faults_from_environment(const EnvLookup& env);

// Parses INI text (named `origin` in messages), applies `overrides`
// ("section.key=value", in order, later wins) and validates. Throws
// hpctrain::Error(bad_input) with one line naming the file, key, value and
// what is allowed.
Config parse_config(const std::string& ini_text, const std::string& origin, const std::vector<std::string>& overrides,
                    const EnvLookup& env);

// The configuration as an INI file with every key as used, in schema order (checkpoints store it).
std::string effective_ini(const Config& cfg);
// The keys of `section` whose value in `cfg` differs from the default, "key = value" lines in
// schema order, as --print-ini writes them (an imported model's [model] section).
std::string changed_keys_ini(const Config& cfg, const std::string& section);

// Every "section.key" -> value in INI text, read by the same parser as parse_config but without
// the schema (a checkpoint's keys may come from another version). bad_input when unparsable.
std::map<std::string, std::string> ini_values(const std::string& ini_text, const std::string& origin);

// Reads a whole file; bad_input error naming it when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace hpctrain
