// Every configuration key: section, type, range, meaning and the Config field it fills, one
// line of the table each (config/schema.hpp). Defaults are the fields' initializers
// (config/config.hpp), read off a default Config; choices are the enums' choices_of tables.
#include "hpctrain/config/schema.hpp"

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "schema_section.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>

namespace hpctrain {

KeySpec& KeySpec::range(double lo, double hi) {
  bounded = true;
  min = lo;
  max = hi;
  return *this;
}

KeySpec& KeySpec::above(double lo, double hi) {
  range(lo, hi);
  min_exclusive = true;
  return *this;
}

KeySpec& KeySpec::as(ValueKind k) {
  kind = k;
  return *this;
}

KeySpec& KeySpec::of_archs(const char* names) {
  archs = names;
  return *this;
}

namespace schema {
void run_keys(std::vector<KeySpec>& k) {
  Section<RunConfig> s(k, "run", &Config::run);
  s.key("seed", &RunConfig::seed, "seed of every random stream (init, shuffle, dropout)").range(0, kMaxCount);
  s.key("device", &RunConfig::device, "compute device; auto = cuda when a GPU is visible, else cpu");
  s.key("share_gpus", &RunConfig::share_gpus,
        "allow two ranks of a node on one GPU (by GPU UUID): local rank r uses visible GPU r % count "
        "(communication over MPI)");
  s.key("memory_budget", &RunConfig::memory_budget,
        "cap per rank on parameters, gradients, optimizer state and activations (e.g. 512M); 0 = none")
      .as(ValueKind::size);
  s.key("check_memory", &RunConfig::check_memory,
        "at start-up, refuse (one line, exit 2) a run whose memory estimate per rank (--dry-run's 'in all') does "
        "not fit the GPU's free memory, or on CPUs the host's available memory shared by the node's ranks; false: "
        "start anyway (docs/performance.md, 'Memory estimate')");
  s.key("reproducible", &RunConfig::reproducible,
        "layout: the parameters after every step are the same bits whatever the number of data-parallel ranks, "
        "micro-batches, pipeline stages and shard mode: every chunk of [train] micro_batch samples computes its "
        "gradient alone and the chunks' "
        "gradients, losses and counts are summed exactly (fixed point, in any order); global_batch must be a "
        "multiple of micro_batch x every data-parallel size used (docs/reproducibility.md)");
  s.key("check_replicas_every", &RunConfig::check_replicas_every,
        "every N steps, and before every checkpoint write, compare a hash of each parameter over the data-parallel "
        "replicas (silent data corruption makes one drift); on a mismatch the run stops with one line naming the "
        "ranks that disagree and the tensors, exit code 5; 0 = never; not with [parallel] shard = full "
        "(docs/checkpoints.md)")
      .range(0, kMaxCount);
  s.key("lock_stale_s", &RunConfig::lock_stale_s,
        "where the file system has no flock: a lock on out_dir or the checkpoint dir whose heartbeat (every log "
        "interval) is older than this is taken over (docs/checkpoints.md)")
      .range(1, kInfinity);
  s.key("price_per_device_hour", &RunConfig::price_per_device_hour,
        "price of one device (GPU, or CPU rank) per hour, for cost reports; 0 = unknown")
      .range(0, kInfinity);
  s.key("out_dir", &RunConfig::out_dir, "directory for logs, metrics and summary.json").as(ValueKind::path);
}

void data_keys(std::vector<KeySpec>& k) {
  Section<DataConfig> s(k, "data", &Config::data);
  s.key("path", &DataConfig::path,
        "dataset root holding train/, val/ and test/ shards (format = llmc: the folder of .bin shards)")
      .as(ValueKind::path);
  s.key("format", &DataConfig::format,
        "hpctrain = HDF5 shards in train/, val/, test/; llmc = llm.c's .bin token shards (header magic 20240520 "
        "uint16 GPT-2 ids, or 20240801 uint32 Llama 3 ids); auto = llmc when path has no train/ and its files "
        "matching train_glob begin with an llm.c magic");
  s.key("train_glob", &DataConfig::train_glob, "format = llmc: the train split's files in path (a shell pattern)");
  s.key("val_glob", &DataConfig::val_glob, "format = llmc: the val split's files in path (a shell pattern)");
  s.key("shuffle", &DataConfig::shuffle,
        "sample order: exact global permutation, chunk-window permutation, or file order");
  s.key("windows", &DataConfig::windows,
        "token datasets: training windows on a grid of stride block_size shifted each epoch (every token once "
        "an epoch), or at random offsets as nanoGPT and llm.c draw them (a pure function of seed, epoch and "
        "window, so resume stays exact)");
  s.key("last_batch", &DataConfig::last_batch,
        "a partial last global batch is dropped or filled from the epoch's start");
  s.key("prefetch", &DataConfig::prefetch, "batches read ahead by the prefetch thread").range(0, 1024);
  s.key("cache_bytes", &DataConfig::cache_bytes,
        "node memory for the dataset: the whole split when it fits (shared by the node's ranks), else decoded HDF5 "
        "chunks (token datasets: blocks of the stream) in a cache of cache_bytes / ranks per node on each rank")
      .as(ValueKind::size);
  s.key("stage_dir", &DataConfig::stage_dir,
        "node-local staging: before training, every node copies the dataset here (each file read from the shared "
        "file system once and passed on by MPI; %h = the host's name) and the run reads the copy, removed at the "
        "end; empty = read path in place (docs/datasets.md)");
  s.key("decode_threads", &DataConfig::decode_threads,
        "threads inflating gzip-compressed chunks outside the HDF5 lock when the split is read through the chunk "
        "cache; 0 = the node's cores over its ranks (1-8)")
      .range(0, 256);
  s.key("chunk_window", &DataConfig::chunk_window, "shuffle = chunk: HDF5 chunks whose samples are shuffled together")
      .range(1, 1 << 20);
  s.key("random_crop_pad", &DataConfig::random_crop_pad,
        "training images ([C, H, W] or [H, W]): pad by this many zero pixels and crop back at a random offset "
        "(torchvision's RandomCrop(size, padding)); drawn from seed, epoch and sample, so the rank count and resume "
        "do not change it; 0 = off")
      .range(0, 4096);
  s.key("random_flip", &DataConfig::random_flip,
        "training images: flip horizontally with probability 1/2 (after the crop; drawn like random_crop_pad)");
}

void train_keys(std::vector<KeySpec>& k) {
  Section<TrainConfig> s(k, "train", &Config::train);
  s.key("global_batch", &TrainConfig::global_batch, "samples per optimizer step over all data-parallel ranks")
      .range(1, kMaxCount);
  s.key("micro_batches", &TrainConfig::micro_batches,
        "split of the per-rank batch: accumulation (pipeline_parallel = 1) or pipeline micro-batches")
      .range(1, 65536);
  s.auto_count("micro_batch", &TrainConfig::micro_batch,
               "rows (samples) per micro-batch on each rank; micro_batches = global_batch / data-parallel ranks / "
               "micro_batch, so a deck keeps its global batch on any GPU count; auto = from micro_batches (which "
               "must then be left at 1)");
  s.key("epochs", &TrainConfig::epochs, "epochs to train (ignored when steps > 0)").range(0, kMaxCount);
  s.key("steps", &TrainConfig::steps, "optimizer steps to train; > 0 wins over epochs").range(0, kMaxCount);
  s.key("eval_every", &TrainConfig::eval_every, "evaluate every N steps; 0 = at each epoch end").range(0, kMaxCount);
  s.key("sync_batchnorm", &TrainConfig::sync_batchnorm, "batch-norm statistics reduced over the data-parallel group");
  s.key("loss", &TrainConfig::loss,
        "the training loss: auto = cross_entropy for classes and tokens, mse for regression targets; mae (mean "
        "absolute error) and huber (PyTorch's HuberLoss, huber_delta) for regression");
  s.key("huber_delta", &TrainConfig::huber_delta, "loss = huber: the error up to which it is quadratic")
      .above(0, kInfinity);
  s.key("on_nonfinite", &TrainConfig::on_nonfinite,
        "a step whose loss or gradient is not finite (NaN, inf): stop = the run stops with one line at the next log "
        "interval; skip = checked every step, the step is dropped on every rank alike (no update; the batch is "
        "consumed), counted and logged, and the run stops after max_skipped in a row (docs/training.md)");
  s.key("max_skipped", &TrainConfig::max_skipped,
        "on_nonfinite = skip or spike_factor > 0: the run stops after this many steps skipped in a row")
      .range(1, kMaxCount);
  s.key("spike_factor", &TrainConfig::spike_factor,
        "> 0: a step whose loss (the mean over every replica) exceeds this multiple of the mean of the last "
        "spike_window steps is skipped as on_nonfinite = skip skips (a loss spike); 0 = off")
      .range(0, kInfinity);
  s.key("spike_window", &TrainConfig::spike_window,
        "spike_factor > 0: the steps whose mean loss a step is compared with (the rule waits until it has them)")
      .range(1, kMaxCount);
  s.key("recompute", &TrainConfig::recompute,
        "activation checkpointing: blocks = each residual block keeps only its input for backward and re-runs its "
        "forward there (less memory, about one more forward per step; the same gradients, bit for bit)");
  s.key("loss_chunk", &TrainConfig::loss_chunk,
        "> 0: a language model's lm_head and the cross-entropy run this many positions (rows of logits) at a "
        "time, each chunk's gradient through the head before the next: the whole logits [positions, vocabulary] "
        "and their gradient are never held (less memory; the same loss and gradients in another summation "
        "order; docs/language-models.md); 0 = all at once")
      .range(0, kMaxCount);
  s.key("freeze", &TrainConfig::freeze,
        "layers whose parameters are not updated: comma-separated name patterns as the model summary names layers "
        "(e.g. \"conv, h.0\"; docs/training.md, tensor names); empty = none");
}

void optim_keys(std::vector<KeySpec>& k) {
  Section<OptimConfig> s(k, "optim", &Config::optim);
  s.key("name", &OptimConfig::name,
        "optimizer; muon = Muon for the hidden weight matrices and AdamW for the rest (docs/training.md)");
  s.key("lr", &OptimConfig::lr, "peak learning rate").above(0);
  s.key("momentum", &OptimConfig::momentum, "SGD momentum").range(0, 1);
  s.key("nesterov", &OptimConfig::nesterov, "Nesterov momentum (SGD)");
  s.key("weight_decay", &OptimConfig::weight_decay, "L2 (sgd, adam) or decoupled (adamw) weight decay")
      .range(0, kInfinity);
  s.custom(
       "betas", ValueKind::real_pair, "Adam beta1, beta2",
       [](Config& c, const std::string& v) {
         const auto comma = v.find(',');
         c.optim.beta1 = std::stod(v.substr(0, comma));
         c.optim.beta2 = std::stod(v.substr(comma + 1));
       },
       [](const Config& c) { return format_real(c.optim.beta1) + ", " + format_real(c.optim.beta2); })
      .range(0, 1);
  s.key("eps", &OptimConfig::eps, "Adam epsilon").above(0);
  s.key("muon_lr", &OptimConfig::muon_lr,
        "name = muon: the rate of the hidden weight matrices (the schedule scales it as it scales lr; the "
        "embedding, head, norms and biases take AdamW at lr)")
      .above(0);
  s.key("muon_momentum", &OptimConfig::muon_momentum, "name = muon: momentum (Nesterov) of the matrices").range(0, 1);
  s.key("ns_steps", &OptimConfig::ns_steps, "name = muon: Newton-Schulz iterations (modded-nanogpt's quintic)")
      .range(1, 20);
  s.key("schedule", &OptimConfig::schedule, "learning-rate schedule");
  s.key("step_every", &OptimConfig::step_every, "schedule = step: decay every N steps").range(1, kMaxCount);
  s.key("gamma", &OptimConfig::gamma, "schedule = step: decay factor").above(0, 1);
  s.key("warmup_steps", &OptimConfig::warmup_steps, "linear warm-up steps").range(0, kMaxCount);
  s.key("min_lr", &OptimConfig::min_lr, "schedule = cosine or wsd: the rate at the last step (the floor)")
      .range(0, kInfinity);
  s.key("decay_fraction", &OptimConfig::decay_fraction,
        "schedule = wsd (warm-up, stable, decay): the share of the run's steps, at its end, over which the rate "
        "falls linearly from lr to min_lr (the rest after warmup_steps stays at lr)")
      .above(0, 1);
  s.key("weight_decay_1d", &OptimConfig::weight_decay_1d,
        "false: biases and norm weights (tensors of fewer than 2 dimensions) get no weight decay, as nanoGPT; "
        "embeddings and other matrices keep it");
  s.key("clip_norm", &OptimConfig::clip_norm, "clip gradients to this global norm; 0 = off").range(0, kInfinity);
}

void precision_keys(std::vector<KeySpec>& k) {
  Section<PrecisionConfig> s(k, "precision", &Config::precision);
  s.key("dtype", &PrecisionConfig::dtype,
        "compute format of the layers (bf16, fp16: activations and a parameter copy in 16 bits; the master "
        "parameters and optimizer state stay float32)");
  s.key("tf32", &PrecisionConfig::tf32,
        "device = cuda: let cuBLAS use TF32 tensor cores for float32 GEMMs (10-bit mantissa products, float32 "
        "sums; PyTorch's allow_tf32)");
  s.key("loss_scale", &PrecisionConfig::loss_scale,
        "dtype = fp16: initial dynamic loss scale (halved on overflow, the step skipped)")
      .range(1, 1e30);
  s.key("loss_scale_window", &PrecisionConfig::loss_scale_window,
        "dtype = fp16: steps without overflow before the loss scale doubles")
      .range(1, kMaxCount);
}

void kernels_keys(std::vector<KeySpec>& k) {
  Section<KernelsConfig> s(k, "kernels", &Config::kernels);
  s.key("cpu_gemm", &KernelsConfig::cpu_gemm,
        "float32 GEMMs on the CPU: OpenBLAS, or oneDNN's JIT sgemm (much faster where OpenBLAS runs kernels older "
        "than the CPU; opt-in, see docs/performance.md); auto = OpenBLAS");
  s.key("conv", &KernelsConfig::conv,
        "convolution: im2col + GEMM, oneDNN (CPU), or auto = on the CPU oneDNN for layers with more than one input "
        "channel when built with it (measured faster there), im2col + GEMM otherwise; on a GPU auto = cuDNN, "
        "im2col = im2col + cuBLAS");
  s.key("fusion", &KernelsConfig::fusion,
        "run a layer and the activation after it in one pass where it can (dense + any activation; conv + relu on "
        "oneDNN); false: one layer at a time (for comparison)");
  s.key("cuda_graphs", &KernelsConfig::cuda_graphs,
        "device = cuda: record each step's forward and backward, and the optimizer update, as CUDA graphs and "
        "replay them (pipeline_parallel = 1; batchnorm only without statistics from other ranks)");
  s.key("threads", &KernelsConfig::threads,
        "CPU threads per rank: the GEMM libraries', and the loss, AdamW and gradient-norm loops' (OpenMP; the same "
        "bits with any count); more than the rank's affinity mask allows (mpirun binds each rank to one core by "
        "default: --bind-to none) is a warning")
      .range(1, 1024);
}

void parallel_keys(std::vector<KeySpec>& k) {
  Section<ParallelConfig> s(k, "parallel", &Config::parallel);
  s.key("pipeline_parallel", &ParallelConfig::pipeline_parallel,
        "pipeline stages P (the mesh's pp: layer groups per replica); must divide the world size")
      .range(1, 1 << 20);
  s.key("tensor_parallel", &ParallelConfig::tensor_parallel,
        "tensor-parallel ranks T (the mesh's tp; Megatron-style): each splits every attention by heads and every "
        "linear(n, tp=column|row) pair (the gpt and llama MLPs) into T blocks, summing over the group; T x "
        "pipeline_parallel must divide the world size (docs/parallelism.md)")
      .range(1, 1 << 20);
  s.key("sequence_parallel", &ParallelConfig::sequence_parallel,
        "with tensor_parallel = T > 1 (Megatron's sequence parallelism): the layers between the split pairs (norms, "
        "dropout, position embeddings, the residual sums) hold T's block of the positions, gathered before each "
        "split pair and reduce-scattered after it instead of summed whole: their activations take 1/T of the "
        "memory; [model] block_size must be a multiple of T (docs/parallelism.md)");
  s.key("spatial_parallel", &ParallelConfig::spatial_parallel,
        "spatial ranks S (the mesh's sp; LBANN's DistConv): each volume's depth is split into S slabs, one per "
        "rank, each rank reading its slab; conv3d exchanges halo planes with its neighbours, flatten and gap3d "
        "gather; activations take about 1/S of the memory; S x pipeline_parallel x tensor_parallel must divide "
        "the world size (docs/volumes.md)")
      .range(1, 1 << 20);
  s.key("pipeline_schedule", &ParallelConfig::pipeline_schedule, "pipeline schedule when pipeline_parallel > 1");
  s.key("comm", &ParallelConfig::comm, "communicator: auto = nccl on cuda, mpi on cpu");
  s.key("host_allreduce", &ParallelConfig::host_allreduce,
        "gradient averaging in host memory (comm = mpi): MPI_Allreduce, or shm = through memory shared by each "
        "node's ranks, then one MPI_Allreduce among the nodes' first ranks; auto = shm (docs/parallelism.md); "
        "refused with comm = nccl");
  s.key("cuda_aware_mpi", &ParallelConfig::cuda_aware_mpi,
        "pass device buffers to MPI directly (auto: when the MPI library reports support)");
  s.key("bucket_mb", &ParallelConfig::bucket_mb, "gradient bucket size in MiB").above(0, 1e6);
  s.key("shard", &ParallelConfig::shard,
        "what the data-parallel ranks divide among themselves: none; optimizer (ZeRO-1: gradients "
        "reduce-scattered, each rank keeps the state of and updates 1/D of the parameters, then all-gathers them); "
        "gradients (ZeRO-2: as optimizer, and each rank keeps only its 1/D of the averaged gradients: backward "
        "writes into two bucket-sized buffers taken in turn, reduce-scattered per micro-batch); full (ZeRO-3: as "
        "gradients, and each rank keeps only its 1/D of the parameters; a bucket's are all-gathered into one of two "
        "windows before its layers run, forward and backward, the next one's gather started early as "
        "gather_overlap says; docs/parallelism.md)");
  s.key("shard_by", &ParallelConfig::shard_by,
        "with shard = optimizer or gradients: what each rank owns: equal blocks of every gradient bucket "
        "(reduce-scatter, then "
        "all-gather), or whole tensors, balanced by size (allreduce, then each tensor broadcast from its owner; "
        "what whole-matrix optimizers such as Muon need)");
  s.key("gather_overlap", &ParallelConfig::gather_overlap,
        "with shard = optimizer or gradients: run the parameters' all-gather after the update during the next forward, "
        "each layer waiting for its own (float32, one pipeline stage, no cuda_graphs); with shard = full: gather the "
        "next bucket's parameters while the current one's layers compute (prefetch); auto = on GPUs only (on a CPU "
        "it competes with the layers for the cores)");
  s.key("watchdog_s", &ParallelConfig::watchdog_s,
        "seconds a collective may take before the job is aborted (exit 3); 0 = off")
      .range(0, 1e7);
}

void checkpoint_keys(std::vector<KeySpec>& k) {
  Section<CheckpointConfig> s(k, "checkpoint", &Config::checkpoint);
  s.key("dir", &CheckpointConfig::dir, "checkpoint directory (default: <[run] out_dir>/checkpoints)")
      .as(ValueKind::path);
  s.key("every_steps", &CheckpointConfig::every_steps, "checkpoint every N steps; 0 = off").range(0, kMaxCount);
  s.key("every_epochs", &CheckpointConfig::every_epochs, "checkpoint every N epochs; 0 = off").range(0, kMaxCount);
  s.key("every_minutes", &CheckpointConfig::every_minutes, "checkpoint every N minutes; 0 = off").range(0, kInfinity);
  s.key("keep", &CheckpointConfig::keep, "complete checkpoints kept").range(1, 1 << 20);
  s.key("space_check", &CheckpointConfig::space_check,
        "before training, check the checkpoint directory has room for keep + 1 checkpoints (free space plus the "
        "older checkpoints rotation deletes): error = refuse to start (exit 2), warn; both also skip a checkpoint "
        "that no longer fits (exit 4); off = neither check");
  s.key("async", &CheckpointConfig::async,
        "write checkpoints in the background: the step copies what the file holds to host memory (one more copy of "
        "the parameters and optimizer state) and training goes on; at most one write in flight; the end of the run "
        "and a preemption wait for it (docs/checkpoints.md)");
  s.key("export_dtype", &CheckpointConfig::export_dtype,
        "--export and --export-hf: the float format of the safetensors files (fp32; bf16 and fp16 rounded to nearest "
        "even, Hugging Face's torch_dtype bfloat16 and float16; fp16 refuses a tensor with a value beyond 65504)");
  s.key("export_shard_size", &CheckpointConfig::export_shard_size,
        "--export-hf: the weights in safetensors shards of at most this many bytes (a larger tensor alone), listed "
        "by model.safetensors.index.json, as save_pretrained writes them (its default, 5GB); one model.safetensors "
        "when they fit")
      .as(ValueKind::size);
  s.key("mpiio_hints", &CheckpointConfig::mpiio_hints,
        "hints for the MPI-IO layer writing checkpoints, key=value,... (e.g. romio_cb_write=enable, "
        "striping_factor=8, striping_unit=4194304, cb_nodes=4; docs/checkpoints.md)")
      .check = [](const std::string& v) { parse_key_values(v); };
  s.custom(
       "alignment", ValueKind::text,
       "checkpoint datasets start at multiples of this many bytes: auto = the file system's preferred I/O size "
       "(block size; stripe size on Lustre), none, or a size such as 1M",
       [](Config& c, const std::string& v) {
         using K = Alignment::Kind;
         auto& a = c.checkpoint.alignment;
         a.kind = v == "auto" ? K::auto_ : v == "none" ? K::none : K::bytes;
         a.bytes = a.kind == K::bytes ? parse_byte_size(v) : 0;
       },
       [](const Config& c) {
         const auto& a = c.checkpoint.alignment;
         return a.kind == Alignment::Kind::auto_  ? std::string("auto")
                : a.kind == Alignment::Kind::none ? std::string("none")
                                                  : std::to_string(a.bytes);
       })
      .check = [](const std::string& v) {
    if (v != "auto" && v != "none") (void)parse_byte_size(v);
  };
  s.custom(
      "resume", ValueKind::path, "auto = newest complete checkpoint in dir, none, or a checkpoint file",
      [](Config& c, const std::string& v) {
        using K = ResumeFrom::Kind;
        auto& r = c.checkpoint.resume;
        r.kind = v == "auto" ? K::auto_ : v == "none" ? K::none : K::file;
        r.file = r.kind == K::file ? v : "";
      },
      [](const Config& c) { return c.checkpoint.resume.text(); });
  s.key("resume_changed", &CheckpointConfig::resume_changed,
        "resume = auto may go on with another train.steps or train.epochs than the checkpoint's (also: "
        "--resume-changed); other keys that define the experiment must match it");
  s.key("init_from", &CheckpointConfig::init_from,
        "fine-tuning: a checkpoint whose parameters initialize the model when the run starts fresh (a checkpoint of "
        "this run found by resume wins); not its optimizer state or step")
      .as(ValueKind::path);
  s.key("init_layers", &CheckpointConfig::init_layers,
        "layers init_from loads: comma-separated name patterns (e.g. \"conv,h.0\"), each must match; empty = every "
        "layer whose name and shapes match (the others start fresh, with a warning)");
}

void log_keys(std::vector<KeySpec>& k) {
  Section<LogConfig> s(k, "log", &Config::log);
  s.key("log_every", &LogConfig::log_every, "progress line and metrics row every N steps").range(1, kMaxCount);
  s.key("metrics_file", &LogConfig::metrics_file, "metrics CSV (relative paths: under out_dir)").as(ValueKind::path);
  s.key("tensorboard", &LogConfig::tensorboard,
        "rank 0 writes TensorBoard event files (every metrics column, the configuration) under "
        "<out_dir>/tensorboard (docs/monitoring.md)");
  s.key("verbose", &LogConfig::verbose,
        "also print internal lines at the start of a run (the path of gradient sums); --dry-run always does");
}

// "2147483648" -> "2G": a byte count as a person writes it.
std::string bytes_text(std::uint64_t n) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  int i = 0;
  while (i < 4 && n != 0 && n % 1024 == 0) n /= 1024, ++i;
  return std::to_string(n) + suffix[i];
}

std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> k;
  for (auto section : {run_keys, data_keys, model_keys, train_keys, optim_keys, precision_keys, kernels_keys,
                       parallel_keys, checkpoint_keys, log_keys})
    section(k);
  const Config defaults;
  for (KeySpec& s : k) {
    s.default_value = s.show(defaults);
    if (s.kind == ValueKind::size) s.default_value = bytes_text(std::stoull(s.default_value));
  }
  add_old_names(k);
  return k;
}

}  // namespace schema

const std::vector<KeySpec>& config_schema() {
  static const std::vector<KeySpec> table = schema::build_schema();
  return table;
}

const std::map<std::string, std::string>& old_spellings(const std::string& name) {
  static const std::map<std::string, std::string> none;
  for (const KeySpec& s : config_schema())
    if (s.name() == name) return s.old_values;
  return none;
}

std::string current_key_name(const std::string& name) {
  for (const KeySpec& s : config_schema())
    if (s.name() == name && !s.renamed_to.empty()) return s.renamed_to;
  return name;
}

std::string config_help() {
  std::string out;
  std::string section;
  for (const auto& s : config_schema()) {
    if (s.section != section) {
      section = s.section;
      out += "\n  [" + section + "]\n";
    }
    out += "    " + s.key + " = " + describe_type(s) +
           "  (default: " + (s.default_value.empty() ? "none" : s.default_value) + ")\n        " + s.help + "\n";
  }
  return out;
}

std::string config_reference_markdown() {
  auto cell = [](std::string s) {  // a table cell: '|' escaped
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out =
      "# Configuration keys\n\n"
      "Generated from the configuration schema (`src/config/schema.cpp`) by `build/trainer --config-reference`\n"
      "(`tools/make_docs.sh` rewrites this file; the `docs_current` test fails when it is stale).\n"
      "How the file is read, `--set`, `${VAR}` and the error messages: [running.md](running.md).\n";
  std::string section;
  for (const auto& s : config_schema()) {
    if (s.section != section) {
      section = s.section;
      out += "\n## [" + section + "]\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    }
    out += "| `" + s.key + "` | " + cell(describe_type(s)) + " | " +
           (s.default_value.empty() ? "none" : "`" + cell(s.default_value) + "`") + " | " + cell(s.help) + " |\n";
  }
  return out;
}

}  // namespace hpctrain
