// Every configuration key: section, type, range, meaning and the Config field it fills, one
// line of the table each (config/schema.hpp). Defaults are the fields' initializers
// (config/config.hpp), read off a default Config; choices are the enums' choices_of tables.
#include "hpctrain/config/schema.hpp"

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"

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

namespace {

// A field's value from canonical text, and back; one overload per field type.
void read_value(const std::string& v, bool& f) { f = v == "true"; }
void read_value(const std::string& v, int& f) { f = std::stoi(v); }
void read_value(const std::string& v, long& f) { f = std::stol(v); }
void read_value(const std::string& v, unsigned long& f) { f = std::stoul(v); }
void read_value(const std::string& v, double& f) { f = std::stod(v); }
void read_value(const std::string& v, std::string& f) { f = v; }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const std::string& v, E& f) {
  for (const auto& c : choices_of(E{}))
    if (v == c.name) f = c.value;
}

std::string value_text(bool v) { return v ? "true" : "false"; }
std::string value_text(int v) { return std::to_string(v); }
std::string value_text(long v) { return std::to_string(v); }
std::string value_text(unsigned long v) { return std::to_string(v); }
std::string value_text(double v) { return format_real(v); }
std::string value_text(const std::string& v) { return v; }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
std::string value_text(E v) {
  return name_of(v);
}

template <typename T>
ValueKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return ValueKind::boolean;
  if constexpr (std::is_enum_v<T>) return ValueKind::choice;
  if constexpr (std::is_integral_v<T>) return ValueKind::integer;
  if constexpr (std::is_floating_point_v<T>) return ValueKind::real;
  return ValueKind::text;
}

// The keys of one section, each bound to a field of the section's struct.
template <typename S>
class Section {
 public:
  Section(std::vector<KeySpec>& out, const char* name, S Config::*part) : out_(out), name_(name), part_(part) {}

  template <typename T>
  KeySpec& key(const char* key, T S::*field, const char* help) {
    const auto part = part_;
    KeySpec& s = custom(
        key, kind_of<T>(), help, [part, field](Config& c, const std::string& v) { read_value(v, c.*part.*field); },
        [part, field](const Config& c) { return value_text(c.*part.*field); });
    if constexpr (std::is_enum_v<T>)
      for (const auto& c : choices_of(T{})) s.choices.push_back(c.name);
    return s;
  }

  // "auto" or a whole number >= 1, held as 0 for auto.
  KeySpec& auto_count(const char* key, long S::*field, const char* help) {
    const auto part = part_;
    KeySpec& s = custom(
        key, ValueKind::text, help,
        [part, field](Config& c, const std::string& v) {
          c.*part.*field = v == "auto" ? 0 : static_cast<long>(parse_real(v));
        },
        [part, field](const Config& c) {
          return c.*part.*field == 0 ? std::string("auto") : std::to_string(c.*part.*field);
        });
    s.check = [](const std::string& v) {
      if (v == "auto") return;
      const double n = parse_real(v);
      if (!(n >= 1 && n <= kMaxCount && n == std::floor(n)))
        throw std::invalid_argument("expected auto or a whole number >= 1");
    };
    return s;
  }

  KeySpec& custom(const char* key, ValueKind kind, const char* help,
                  std::function<void(Config&, const std::string&)> apply,
                  std::function<std::string(const Config&)> show) {
    KeySpec s;
    s.section = name_;
    s.key = key;
    s.kind = kind;
    s.help = help;
    s.apply = std::move(apply);
    s.show = std::move(show);
    out_.push_back(std::move(s));
    return out_.back();
  }

 private:
  std::vector<KeySpec>& out_;
  const char* name_;
  S Config::*part_;
};

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

// [model] dropout: a whole percent, as the layers string's dropout(p) takes it.
void check_rope_scaling(const std::string& v) {
  try {
    rope_scaling_of(v);
  } catch (const Error& e) {
    throw std::invalid_argument(e.what());
  }
}

void check_whole_percent(const std::string& v) {
  const double percent = std::stod(v) * 100;
  if (std::fabs(percent - std::round(percent)) > 1e-9)
    throw std::invalid_argument("expected a whole percent (0.2 or 0.25, not 0.125)");
}

void model_keys(std::vector<KeySpec>& k) {
  Section<ModelConfig> s(k, "model", &Config::model);
  s.key("layers", &ModelConfig::layers, "the layers in order, e.g. \"dense(128) relu dense(10)\"");
  s.key(
      "arch", &ModelConfig::arch,
      "the network: layers = the [model] layers string; gpt = GPT-2's decoder from n_layer, n_head, n_embd, "
      "vocab_size, bias, tie_embeddings, dropout; llama = a Llama decoder (RMS norms, rotary positions, SwiGLU, "
      "no biases but qkv_bias) from n_layer, n_head, n_embd, ffn_dim, rope_theta, norm_eps, vocab_size, tie_embeddings "
      "(docs/language-models.md)");
  s.key("n_layer", &ModelConfig::n_layer, "arch = gpt or llama: transformer blocks")
      .range(0, 1 << 20)
      .of_archs("gpt llama");
  s.key("n_head", &ModelConfig::n_head, "arch = gpt or llama: attention heads").range(0, 1 << 20).of_archs("gpt llama");
  s.key("n_embd", &ModelConfig::n_embd, "arch = gpt or llama: the width (a multiple of n_head)")
      .range(0, 1 << 20)
      .of_archs("gpt llama");
  s.auto_count(
       "vocab_size", &ModelConfig::vocab_size,
       "arch = gpt or llama: rows of the token embedding and head; auto = the token dataset's vocabulary (a number "
       "may be larger: rows no token uses, as Qwen2's checkpoints have; or smaller, down to one past the largest id "
       "the dataset's shards record, as Gemma 3 1B's for its tokenizer's <image_soft_token>)")
      .of_archs("gpt llama");
  s.key("bias", &ModelConfig::bias, "arch = gpt: biases in the linear layers and layer norms").of_archs("gpt");
  s.key("tie_embeddings", &ModelConfig::tie_embeddings,
        "arch = gpt or llama: the output head shares the token embedding's weight")
      .of_archs("gpt llama");
  s.key("activation", &ModelConfig::activation,
        "arch = gpt: the MLP's GELU, exact (gelu: nanoGPT's) or its tanh approximation (gelu_tanh: GPT-2's "
        "gelu_new, llm.c's)")
      .of_archs("gpt");
  KeySpec& dropout = s.key("dropout", &ModelConfig::dropout,
                           "arch = gpt: dropout probability after the embeddings, on attention's probabilities and at "
                           "the end of every residual branch (a whole percent, e.g. 0.2)")
                         .range(0, 0.99)
                         .of_archs("gpt");
  dropout.check = check_whole_percent;
  s.key("ffn_dim", &ModelConfig::ffn_dim, "arch = llama: the gated MLP's hidden width (Llama 3.2 1B: 8192)")
      .range(0, 1 << 24)
      .of_archs("llama");
  s.key("rope_theta", &ModelConfig::rope_theta,
        "arch = llama: rotary embeddings' base (Llama 3: 500000; Gemma 3: its global layers')")
      .range(1, kMaxCount)
      .of_archs("llama");
  s.key("norm_eps", &ModelConfig::norm_eps, "arch = llama: the RMS norms' epsilon, a power of ten (1e-5, 1e-6)")
      .range(1e-12, 0.1)
      .of_archs("llama");
  s.key("n_kv_heads", &ModelConfig::n_kv_heads,
        "arch = llama: key/value heads, dividing n_head (grouped-query attention; Llama 3.2 1B: 8); 0 = n_head")
      .range(0, 1 << 20)
      .of_archs("llama");
  KeySpec& scaling =
      s.key("rope_scaling", &ModelConfig::rope_scaling,
            "arch = llama: none, or Llama 3's llama3(FACTOR, LOW, HIGH, CONTEXT) in whole numbers (Llama 3.2: "
            "llama3(32, 1, 4, 8192)): factor, low and high frequency factors, original context")
          .of_archs("llama");
  scaling.check = check_rope_scaling;
  s.key("mlp", &ModelConfig::mlp,
        "arch = llama: swiglu (Llama's gated MLP of ffn_dim), geglu (Gemma's: gelu_tanh(gate) * up) or relu2 "
        "(modded-nanogpt's relu(x)^2 MLP of ffn_dim)")
      .of_archs("llama");
  s.key("qk_norm", &ModelConfig::qk_norm,
        "arch = llama: RMS-normalize every query and key head before the rotation (modded-nanogpt, OLMo 2)")
      .of_archs("llama");
  s.key("zero_init", &ModelConfig::zero_init,
        "arch = llama: the attention output and MLP down projections start at zero (modded-nanogpt)")
      .of_archs("llama");
  s.key("qk_norm_weight", &ModelConfig::qk_norm_weight,
        "arch = llama: with qk_norm, each query and key head's norm scaled by a learned weight of its width and "
        "its epsilon norm_eps (Qwen3's q_norm and k_norm)")
      .of_archs("llama");
  s.key("head_dim", &ModelConfig::head_dim,
        "arch = llama: a head's columns when not n_embd / n_head (Qwen3 0.6B: 128 at n_embd 1024 with 16 heads); "
        "0 = n_embd / n_head")
      .range(0, 4096)
      .of_archs("llama");
  s.key("qkv_bias", &ModelConfig::qkv_bias,
        "arch = llama: biases on the query, key and value projections, none on the others (Qwen2, Qwen2.5)")
      .of_archs("llama");
  s.key("norm_offset", &ModelConfig::norm_offset,
        "arch = llama: the RMS norms (and weighted QK-norms) scale by 1 + weight, the weights starting at 0 (Gemma's)")
      .of_archs("llama");
  s.key("embed_scale", &ModelConfig::embed_scale,
        "arch = llama: the token embeddings times sqrt(n_embd), rounded to float32 (Gemma's)")
      .of_archs("llama");
  s.key("sandwich_norm", &ModelConfig::sandwich_norm,
        "arch = llama: a norm after attention and after the MLP too, before each residual add (Gemma 2 and 3)")
      .of_archs("llama");
  s.key("rope_local_theta", &ModelConfig::rope_local_theta,
        "arch = llama: with global_every, the rotary base of the local layers, every layer but each global_every-th "
        "(Gemma 3: 10000; those layers take no rope_scaling); 0 = none")
      .range(0, kMaxCount)
      .of_archs("llama");
  s.key("global_every", &ModelConfig::global_every,
        "arch = llama: with rope_local_theta or sliding_window, layer i is global (rope_theta, every position) when "
        "i + 1 is a multiple of this, the others local (Gemma 3: 6); 0 = every layer local")
      .range(0, 1 << 20)
      .of_archs("llama");
  s.key("attn_softcap", &ModelConfig::attn_softcap,
        "arch = llama: attention's scaled scores s become this x tanh(s / this) before the softmax (Gemma 2's "
        "attn_logit_softcapping, 50); 0 = none")
      .range(0, 1e6)
      .of_archs("llama");
  s.key("final_softcap", &ModelConfig::final_softcap,
        "arch = llama: the logits x become this x tanh(x / this) (Gemma 2's final_logit_softcapping, 30); 0 = none")
      .range(0, 1e6)
      .of_archs("llama");
  s.key("sliding_window", &ModelConfig::sliding_window,
        "arch = llama: the local layers' queries attend over the last this many positions, their own included "
        "(Hugging Face's sliding_window: Mistral 7B v0.1's 4096 on every layer, Gemma 3's 512 with global_every); "
        "0 = every earlier position")
      .range(0, 1 << 30)
      .of_archs("llama");
  s.key("attention_mask", &ModelConfig::attention_mask,
        "language models: causal, or document (no attention across the tokenizer's document separator, "
        "<|endoftext|>, in packed windows; needs fused attention: no attention dropout)");
  s.key("block_size", &ModelConfig::block_size,
        "token datasets: tokens per training window (the model's context length T); 0 for image datasets")
      .range(0, 1 << 20);
  s.key("groups", &ModelConfig::groups, "model-parallel layer groups: auto or explicit layer ranges");
  s.key("vocab_multiple", &ModelConfig::vocab_multiple,
        "embedding and lm_head rows padded up to a multiple of this (64: GPT-2's 50257 -> 50304); the padding is "
        "zero, never a token, and left out of --export")
      .range(1, 1 << 16);
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

}  // namespace

const std::vector<KeySpec>& config_schema() {
  static const std::vector<KeySpec> table = build_schema();
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
