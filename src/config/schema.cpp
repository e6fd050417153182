// Every configuration key (section, type, range, default, meaning) and the
// value parsers and validators they share. See config/schema.hpp.
#include "hpctrain/config/schema.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "hpctrain/core/table.hpp"

namespace hpctrain {

namespace {

using Apply = std::function<void(Config&, const std::string&)>;

KeySpec make(const char* section, const char* key, ValueKind kind, const char* def, const char* help, Apply apply) {
  KeySpec s;
  s.section = section;
  s.key = key;
  s.kind = kind;
  s.default_value = def;
  s.help = help;
  s.apply = std::move(apply);
  return s;
}

KeySpec bounded(KeySpec s, double lo, double hi, bool lo_exclusive = false) {
  s.bounded = true;
  s.min = lo;
  s.max = hi;
  s.min_exclusive = lo_exclusive;
  return s;
}

KeySpec choice(const char* section, const char* key, std::vector<std::string> choices, const char* def,
               const char* help, Apply apply) {
  KeySpec s = make(section, key, ValueKind::choice, def, help, std::move(apply));
  s.choices = std::move(choices);
  return s;
}

// Index of `v` in the spec's choices (the value is already validated).
template <typename E>
E pick(const std::string& v, std::initializer_list<std::pair<const char*, E>> table) {
  for (const auto& [name, value] : table)
    if (v == name) return value;
  throw std::logic_error("unmapped choice " + v);
}

constexpr double kMaxLong = 9.0e15;  // exactly representable, far above any sane count
bool parse_bool(const std::string& v) { return v == "true"; }

double parse_real(const std::string& raw) {
  const std::string v = trim(raw);
  if (v.empty()) throw std::invalid_argument("expected a number");
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(d)) throw std::invalid_argument("expected a finite number");
  return d;
}

std::string format_real(double d) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), d);  // shortest text that reads back exactly
  return std::string(buf, r.ptr);
}

std::string bound_text(const KeySpec& s) {
  if (!s.bounded) return "";
  const bool is_int = s.kind == ValueKind::integer;
  auto num = [&](double v) { return is_int ? std::to_string(static_cast<long long>(v)) : format_real(v); };
  std::string lo = std::string(s.min_exclusive ? "> " : ">= ") + num(s.min);
  if (s.max >= kMaxLong || s.max == std::numeric_limits<double>::infinity()) return lo;
  return lo + " and <= " + num(s.max);
}

void check_bounds(const KeySpec& s, double v) {
  if (!s.bounded) return;
  const bool low = s.min_exclusive ? !(v > s.min) : !(v >= s.min);
  if (low || v > s.max) throw std::invalid_argument("expected " + describe_type(s));
}

std::string expand_env(const std::string& raw, const EnvLookup& env) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '$') {
      out += raw[i];
      continue;
    }
    if (i + 1 < raw.size() && raw[i + 1] == '$') {  // "$$" is a literal '$'
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= raw.size() || raw[i + 1] != '{')
      throw std::invalid_argument("a '$' must start ${VAR} (write $$ for a literal $)");
    const auto close = raw.find('}', i + 2);
    if (close == std::string::npos) throw std::invalid_argument("unterminated ${ in path");
    const std::string name = raw.substr(i + 2, close - i - 2);
    if (name.empty()) throw std::invalid_argument("empty variable name in ${}");
    const auto value = env(name);
    if (!value) throw std::invalid_argument("environment variable " + name + " is not set");
    out += *value;
    i = close;
  }
  return out;
}

}  // namespace

std::uint64_t parse_byte_size(const std::string& raw) {
  const std::string v = trim(raw);
  std::size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  if (digits == 0 || digits > 19) throw std::invalid_argument("expected a byte count such as 4096, 512M or 2G");
  const std::string suffix = trim(v.substr(digits));
  std::uint64_t mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1ull << 30;
  else if (suffix == "T" || suffix == "TiB")
    mult = 1ull << 40;
  else
    throw std::invalid_argument("expected a byte count such as 4096, 512M or 2G (suffixes K, M, G, T)");
  const std::uint64_t n = std::stoull(v.substr(0, digits));
  if (n > std::numeric_limits<std::uint64_t>::max() / mult) throw std::invalid_argument("byte count too large");
  return n * mult;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string describe_type(const KeySpec& s) {
  switch (s.kind) {
    case ValueKind::integer: return "integer" + (s.bounded ? " " + bound_text(s) : std::string());
    case ValueKind::real: return "number" + (s.bounded ? " " + bound_text(s) : std::string());
    case ValueKind::boolean: return "true|false";
    case ValueKind::choice: {
      std::string out = "one of ";
      for (std::size_t i = 0; i < s.choices.size(); ++i) out += (i ? "|" : "") + s.choices[i];
      return out;
    }
    case ValueKind::text: return "text";
    case ValueKind::path: return "path (${VAR} expanded)";
    case ValueKind::size: return "bytes (K/M/G/T suffix)";
    case ValueKind::real_pair: return "two numbers \"a, b\"" + (s.bounded ? ", each " + bound_text(s) : std::string());
  }
  return "?";
}

std::string canonical_value(const KeySpec& s, const std::string& raw_in, const EnvLookup& env) {
  const std::string raw = trim(raw_in);
  switch (s.kind) {
    case ValueKind::integer: {
      std::size_t pos = 0;
      long long v = 0;
      try {
        v = std::stoll(raw, &pos);
      } catch (const std::exception&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      if (pos != raw.size()) throw std::invalid_argument("expected " + describe_type(s));
      check_bounds(s, static_cast<double>(v));
      return std::to_string(v);
    }
    case ValueKind::real: {
      double v = 0;
      try {
        v = parse_real(raw);
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      check_bounds(s, v);
      return format_real(v);
    }
    case ValueKind::boolean:
      if (raw == "true" || raw == "on" || raw == "yes" || raw == "1") return "true";
      if (raw == "false" || raw == "off" || raw == "no" || raw == "0") return "false";
      throw std::invalid_argument("expected true|false (or on|off, yes|no, 1|0)");
    case ValueKind::choice:
      for (const auto& c : s.choices)
        if (raw == c) return raw;
      throw std::invalid_argument("expected " + describe_type(s));
    case ValueKind::text: return raw;
    case ValueKind::path: return expand_env(raw, env);
    case ValueKind::size: return std::to_string(parse_byte_size(raw));
    case ValueKind::real_pair: {
      const auto comma = raw.find(',');
      if (comma == std::string::npos) throw std::invalid_argument("expected " + describe_type(s));
      double a = 0, b = 0;
      try {
        a = parse_real(raw.substr(0, comma));
        b = parse_real(raw.substr(comma + 1));
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      check_bounds(s, a);
      check_bounds(s, b);
      return format_real(a) + ", " + format_real(b);
    }
  }
  throw std::logic_error("unknown value kind");
}

std::vector<KeySpec> config_schema() {
  using K = ValueKind;
  const double inf = std::numeric_limits<double>::infinity();
  auto to_long = [](const std::string& v) { return std::stol(v); };
  auto to_int = [](const std::string& v) { return std::stoi(v); };
  auto to_real = [](const std::string& v) { return std::stod(v); };
  std::vector<KeySpec> k;

  // [run]
  k.push_back(bounded(make("run", "seed", K::integer, "42", "seed of every random stream (init, shuffle, dropout)",
                           [](Config& c, const std::string& v) { c.run.seed = std::stoull(v); }),
                      0, kMaxLong));
  k.push_back(choice(
      "run", "device", {"auto", "cpu", "cuda"}, "auto", "compute device; auto = cuda when a GPU is visible, else cpu",
      [](Config& c, const std::string& v) {
        c.run.device =
            pick<DeviceKind>(v, {{"auto", DeviceKind::auto_}, {"cpu", DeviceKind::cpu}, {"cuda", DeviceKind::cuda}});
      }));
  k.push_back(choice("run", "precision", {"fp32", "bf16", "fp16"}, "fp32", "compute precision (master weights fp32)",
                     [](Config& c, const std::string& v) {
                       c.run.precision = pick<Precision>(
                           v, {{"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}});
                     }));
  k.push_back(make("run", "share_gpus", K::boolean, "false",
                   "allow two ranks of a node on one GPU (by GPU UUID): local rank r uses visible GPU r % count "
                   "(communication over MPI)",
                   [](Config& c, const std::string& v) { c.run.share_gpus = parse_bool(v); }));
  k.push_back(make("run", "fusion", K::boolean, "true",
                   "run a layer and the activation after it in one pass where it can (dense + any activation; "
                   "conv + relu on oneDNN); false: one layer at a time (for comparison)",
                   [](Config& c, const std::string& v) { c.run.fusion = parse_bool(v); }));
  k.push_back(make("run", "tf32", K::boolean, "false",
                   "device = cuda: let cuBLAS use TF32 tensor cores for float32 GEMMs (10-bit mantissa products, "
                   "float32 sums; PyTorch's allow_tf32)",
                   [](Config& c, const std::string& v) { c.run.tf32 = parse_bool(v); }));
  k.push_back(make("run", "cuda_graphs", K::boolean, "false",
                   "device = cuda: record each step's forward and backward, and the optimizer update, as CUDA "
                   "graphs and replay them (pipeline_parallel = 1; batchnorm only without statistics from other "
                   "ranks)",
                   [](Config& c, const std::string& v) { c.run.cuda_graphs = parse_bool(v); }));
  k.push_back(choice(
      "run", "cpu_gemm", {"auto", "openblas", "onednn"}, "auto",
      "float32 GEMMs on the CPU: OpenBLAS, or oneDNN's JIT sgemm (much faster where OpenBLAS runs "
      "kernels older than the CPU; opt-in, see docs/performance.md); auto = OpenBLAS",
      [](Config& c, const std::string& v) {
        c.run.cpu_gemm = pick<CpuGemmLib>(
            v, {{"auto", CpuGemmLib::auto_}, {"openblas", CpuGemmLib::openblas}, {"onednn", CpuGemmLib::onednn}});
      }));
  k.push_back(choice("run", "conv", {"auto", "im2col", "onednn"}, "auto",
                     "convolution: im2col + GEMM, oneDNN (CPU), or auto = on the CPU oneDNN for layers with more than "
                     "one input channel when built with it (measured faster there), im2col + GEMM otherwise; on a GPU "
                     "auto = cuDNN, im2col = im2col + cuBLAS",
                     [](Config& c, const std::string& v) {
                       c.run.conv = pick<ConvImpl>(
                           v, {{"auto", ConvImpl::auto_}, {"im2col", ConvImpl::im2col}, {"onednn", ConvImpl::onednn}});
                     }));
  k.push_back(bounded(make("run", "threads", K::integer, "1", "CPU threads per rank (BLAS and kernels)",
                           [=](Config& c, const std::string& v) { c.run.threads = to_int(v); }),
                      1, 1024));
  k.push_back(make("run", "memory_budget", K::size, "0",
                   "cap per rank on parameters, gradients, optimizer state and activations (e.g. 512M); 0 = none",
                   [](Config& c, const std::string& v) { c.run.memory_budget = std::stoull(v); }));
  k.push_back(bounded(make("run", "lock_stale_s", K::real, "1800",
                           "where the file system has no flock: a lock on out_dir or the checkpoint dir whose "
                           "heartbeat (every log interval) is older than this is taken over (docs/checkpoints.md)",
                           [=](Config& c, const std::string& v) { c.run.lock_stale_s = to_real(v); }),
                      1, inf));
  k.push_back(bounded(make("run", "price_per_device_hour", K::real, "0",
                           "price of one device (GPU, or CPU rank) per hour, for cost reports; 0 = unknown",
                           [=](Config& c, const std::string& v) { c.run.price_per_device_hour = to_real(v); }),
                      0, inf));
  k.push_back(make("run", "out_dir", K::path, "runs", "directory for logs, metrics and summary.json",
                   [](Config& c, const std::string& v) { c.run.out_dir = v; }));

  // [data]
  k.push_back(make("data", "path", K::path, "", "dataset root holding train/, val/ and test/ shards",
                   [](Config& c, const std::string& v) { c.data.path = v; }));
  k.push_back(choice("data", "shuffle", {"global", "chunk", "none"}, "global",
                     "sample order: exact global permutation, chunk-window permutation, or file order",
                     [](Config& c, const std::string& v) {
                       c.data.shuffle = pick<Shuffle>(
                           v, {{"global", Shuffle::global}, {"chunk", Shuffle::chunk}, {"none", Shuffle::none}});
                     }));
  k.push_back(choice("data", "last_batch", {"drop", "wrap"}, "drop",
                     "a partial last global batch is dropped or filled from the epoch's start",
                     [](Config& c, const std::string& v) {
                       c.data.last_batch = pick<LastBatch>(v, {{"drop", LastBatch::drop}, {"wrap", LastBatch::wrap}});
                     }));
  k.push_back(bounded(make("data", "prefetch", K::integer, "2", "batches read ahead by the prefetch thread",
                           [=](Config& c, const std::string& v) { c.data.prefetch = to_int(v); }),
                      0, 1024));
  k.push_back(make("data", "cache_bytes", K::size, "2G",
                   "node memory for the dataset: the whole split when it fits (shared by the node's ranks), "
                   "else decoded HDF5 chunks",
                   [](Config& c, const std::string& v) { c.data.cache_bytes = std::stoull(v); }));
  k.push_back(bounded(make("data", "decode_threads", K::integer, "0",
                           "threads inflating gzip-compressed chunks outside the HDF5 lock when the split is read "
                           "through the chunk cache; 0 = the node's cores over its ranks (1-8)",
                           [=](Config& c, const std::string& v) { c.data.decode_threads = to_int(v); }),
                      0, 256));
  k.push_back(bounded(
      make("data", "chunk_window", K::integer, "16", "shuffle = chunk: HDF5 chunks whose samples are shuffled together",
           [=](Config& c, const std::string& v) { c.data.chunk_window = to_int(v); }),
      1, 1 << 20));

  // [model]
  k.push_back(make("model", "layers", K::text, "", "the layers in order, e.g. \"dense(128) relu dense(10)\"",
                   [](Config& c, const std::string& v) { c.model.layers = v; }));
  k.push_back(choice("model", "arch", {"layers", "gpt"}, "layers",
                     "the network: layers = the [model] layers string; gpt = GPT-2's decoder from n_layer, "
                     "n_head, n_embd, vocab_size, bias, tie_embeddings, dropout (docs/language-models.md)",
                     [](Config& c, const std::string& v) {
                       c.model.arch = pick<Arch>(v, {{"layers", Arch::layers}, {"gpt", Arch::gpt}});
                     }));
  struct Dim {
    const char *key, *help;
    long ModelConfig::*field;
  };
  for (const Dim& d : {Dim{"n_layer", "arch = gpt: transformer blocks", &ModelConfig::n_layer},
                       Dim{"n_head", "arch = gpt: attention heads", &ModelConfig::n_head},
                       Dim{"n_embd", "arch = gpt: the width (a multiple of n_head)", &ModelConfig::n_embd}})
    k.push_back(bounded(make("model", d.key, K::integer, "0", d.help,
                             [=](Config& c, const std::string& v) { c.model.*d.field = to_long(v); }),
                        0, 1 << 20));
  k.push_back(make("model", "vocab_size", K::text, "auto",
                   "arch = gpt: tokens in the vocabulary; auto = the token dataset's (a number must equal it)",
                   [](Config& c, const std::string& v) {
                     if (v == "auto") {
                       c.model.vocab_size = 0;
                       return;
                     }
                     const double n = parse_real(v);
                     if (!(n >= 1 && n <= kMaxLong && n == std::floor(n)))
                       throw std::invalid_argument("expected auto or a whole number >= 1");
                     c.model.vocab_size = static_cast<long>(n);
                   }));
  k.push_back(make("model", "bias", K::boolean, "true", "arch = gpt: biases in the linear layers and layer norms",
                   [](Config& c, const std::string& v) { c.model.bias = parse_bool(v); }));
  k.push_back(make("model", "tie_embeddings", K::boolean, "true",
                   "arch = gpt: the output head shares the token embedding's weight",
                   [](Config& c, const std::string& v) { c.model.tie_embeddings = parse_bool(v); }));
  k.push_back(bounded(make("model", "dropout", K::real, "0",
                           "arch = gpt: dropout probability after the embeddings, on attention's probabilities and "
                           "at the end of every residual branch (a whole percent, e.g. 0.2)",
                           [](Config& c, const std::string& v) {
                             c.model.dropout = parse_real(v);
                             const double percent = c.model.dropout * 100;
                             if (std::fabs(percent - std::round(percent)) > 1e-9)
                               throw std::invalid_argument("expected a whole percent (0.2 or 0.25, not 0.125)");
                           }),
                      0, 0.99));
  k.push_back(bounded(make("model", "block_size", K::integer, "0",
                           "token datasets: tokens per training window (the model's context length T); "
                           "0 for image datasets",
                           [=](Config& c, const std::string& v) { c.model.block_size = to_long(v); }),
                      0, 1 << 20));
  k.push_back(make("model", "groups", K::text, "auto", "model-parallel layer groups: auto or explicit layer ranges",
                   [](Config& c, const std::string& v) { c.model.groups = v; }));
  k.push_back(bounded(make("model", "vocab_multiple", K::integer, "1",
                           "embedding and lm_head rows padded up to a multiple of this (64: GPT-2's 50257 -> 50304); "
                           "the padding is zero, never a token, and left out of --export",
                           [=](Config& c, const std::string& v) { c.model.vocab_multiple = to_long(v); }),
                      1, 1 << 16));

  // [train]
  k.push_back(
      bounded(make("train", "global_batch", K::integer, "64", "samples per optimizer step over all data-parallel ranks",
                   [=](Config& c, const std::string& v) { c.train.global_batch = to_long(v); }),
              1, kMaxLong));
  k.push_back(
      bounded(make("train", "micro_batches", K::integer, "1",
                   "split of the per-rank batch: accumulation (pipeline_parallel = 1) or pipeline micro-batches",
                   [=](Config& c, const std::string& v) { c.train.micro_batches = to_int(v); }),
              1, 65536));
  k.push_back(bounded(make("train", "epochs", K::integer, "1", "epochs to train (ignored when steps > 0)",
                           [=](Config& c, const std::string& v) { c.train.epochs = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("train", "steps", K::integer, "0", "optimizer steps to train; > 0 wins over epochs",
                           [=](Config& c, const std::string& v) { c.train.steps = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("train", "eval_every", K::integer, "0", "evaluate every N steps; 0 = at each epoch end",
                           [=](Config& c, const std::string& v) { c.train.eval_every = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("train", "log_every", K::integer, "50", "progress line and metrics row every N steps",
                           [=](Config& c, const std::string& v) { c.train.log_every = to_long(v); }),
                      1, kMaxLong));
  k.push_back(make("train", "metrics_file", K::path, "metrics.csv", "metrics CSV (relative paths: under out_dir)",
                   [](Config& c, const std::string& v) { c.train.metrics_file = v; }));
  k.push_back(make("train", "tensorboard", K::boolean, "true",
                   "rank 0 writes TensorBoard event files (every metrics column, the configuration) under "
                   "<out_dir>/tensorboard (docs/monitoring.md)",
                   [](Config& c, const std::string& v) { c.train.tensorboard = parse_bool(v); }));
  k.push_back(make("train", "sync_batchnorm", K::boolean, "true",
                   "batch-norm statistics reduced over the data-parallel group",
                   [](Config& c, const std::string& v) { c.train.sync_batchnorm = parse_bool(v); }));
  k.push_back(
      choice("train", "recompute", {"none", "blocks"}, "none",
             "activation checkpointing: blocks = each residual block keeps only its input for "
             "backward and re-runs its forward there (less memory, about one more forward per step; "
             "the same gradients, bit for bit)",
             [](Config& c, const std::string& v) {
               c.train.recompute = pick<Recompute>(v, {{"none", Recompute::none}, {"blocks", Recompute::blocks}});
             }));
  k.push_back(make("train", "freeze", K::text, "",
                   "layers whose parameters are not updated: comma-separated name patterns as the model summary "
                   "names layers (e.g. \"conv, h.0\"; docs/training.md, tensor names); empty = none",
                   [](Config& c, const std::string& v) { c.train.freeze = v; }));

  // [optim]
  k.push_back(
      choice("optim", "name", {"sgd", "adam", "adamw"}, "sgd", "optimizer", [](Config& c, const std::string& v) {
        c.optim.name = pick<OptimizerName>(
            v, {{"sgd", OptimizerName::sgd}, {"adam", OptimizerName::adam}, {"adamw", OptimizerName::adamw}});
      }));
  k.push_back(bounded(make("optim", "lr", K::real, "0.05", "peak learning rate",
                           [=](Config& c, const std::string& v) { c.optim.lr = to_real(v); }),
                      0, inf, true));
  k.push_back(bounded(make("optim", "momentum", K::real, "0.9", "SGD momentum",
                           [=](Config& c, const std::string& v) { c.optim.momentum = to_real(v); }),
                      0, 1));
  k.push_back(make("optim", "nesterov", K::boolean, "false", "Nesterov momentum (SGD)",
                   [](Config& c, const std::string& v) { c.optim.nesterov = parse_bool(v); }));
  k.push_back(bounded(make("optim", "weight_decay", K::real, "0", "L2 (sgd, adam) or decoupled (adamw) weight decay",
                           [=](Config& c, const std::string& v) { c.optim.weight_decay = to_real(v); }),
                      0, inf));
  k.push_back(bounded(make("optim", "betas", K::real_pair, "0.9, 0.999", "Adam beta1, beta2",
                           [](Config& c, const std::string& v) {
                             const auto comma = v.find(',');
                             c.optim.beta1 = std::stod(v.substr(0, comma));
                             c.optim.beta2 = std::stod(v.substr(comma + 1));
                           }),
                      0, 1));
  k.push_back(bounded(make("optim", "eps", K::real, "1e-08", "Adam epsilon",
                           [=](Config& c, const std::string& v) { c.optim.eps = to_real(v); }),
                      0, inf, true));
  k.push_back(
      choice("optim", "schedule", {"constant", "step", "cosine"}, "constant", "learning-rate schedule",
             [](Config& c, const std::string& v) {
               c.optim.schedule = pick<LrSchedule>(
                   v, {{"constant", LrSchedule::constant}, {"step", LrSchedule::step}, {"cosine", LrSchedule::cosine}});
             }));
  k.push_back(bounded(make("optim", "step_every", K::integer, "1000", "schedule = step: decay every N steps",
                           [=](Config& c, const std::string& v) { c.optim.step_every = to_long(v); }),
                      1, kMaxLong));
  k.push_back(bounded(make("optim", "gamma", K::real, "0.1", "schedule = step: decay factor",
                           [=](Config& c, const std::string& v) { c.optim.gamma = to_real(v); }),
                      0, 1, true));
  k.push_back(bounded(make("optim", "warmup_steps", K::integer, "0", "linear warm-up steps",
                           [=](Config& c, const std::string& v) { c.optim.warmup_steps = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("optim", "min_lr", K::real, "0", "schedule = cosine: the rate at the last step (the floor)",
                           [=](Config& c, const std::string& v) { c.optim.min_lr = to_real(v); }),
                      0, inf));
  k.push_back(make("optim", "weight_decay_1d", K::boolean, "true",
                   "false: biases and norm weights (tensors of fewer than 2 dimensions) get no weight decay, as "
                   "nanoGPT; embeddings and other matrices keep it",
                   [](Config& c, const std::string& v) { c.optim.weight_decay_1d = parse_bool(v); }));
  k.push_back(bounded(make("optim", "clip_norm", K::real, "0", "clip gradients to this global norm; 0 = off",
                           [=](Config& c, const std::string& v) { c.optim.clip_norm = to_real(v); }),
                      0, inf));

  k.push_back(bounded(make("optim", "loss_scale", K::real, "65536",
                           "precision = fp16: initial dynamic loss scale (halved on overflow, the step skipped)",
                           [=](Config& c, const std::string& v) { c.optim.loss_scale = to_real(v); }),
                      1, 1e30));
  k.push_back(bounded(make("optim", "loss_scale_window", K::integer, "2000",
                           "precision = fp16: steps without overflow before the loss scale doubles",
                           [=](Config& c, const std::string& v) { c.optim.loss_scale_window = to_long(v); }),
                      1, kMaxLong));

  // [parallel]
  k.push_back(bounded(make("parallel", "pipeline_parallel", K::integer, "1",
                           "pipeline stages P (the mesh's pp: layer groups per replica); must divide the world size",
                           [=](Config& c, const std::string& v) { c.parallel.pipeline_parallel = to_int(v); }),
                      1, 1 << 20));
  k.push_back(choice("parallel", "pipeline_schedule", {"gpipe", "1f1b"}, "1f1b",
                     "pipeline schedule when pipeline_parallel > 1", [](Config& c, const std::string& v) {
                       c.parallel.pipeline_schedule = pick<PipelineSchedule>(
                           v, {{"gpipe", PipelineSchedule::gpipe}, {"1f1b", PipelineSchedule::one_f_one_b}});
                     }));
  k.push_back(choice("parallel", "comm", {"auto", "mpi", "nccl"}, "auto",
                     "communicator: auto = nccl on cuda, mpi on cpu", [](Config& c, const std::string& v) {
                       c.parallel.comm = pick<CommBackend>(
                           v, {{"auto", CommBackend::auto_}, {"mpi", CommBackend::mpi}, {"nccl", CommBackend::nccl}});
                     }));
  k.push_back(choice("parallel", "host_allreduce", {"auto", "mpi", "shm"}, "auto",
                     "gradient averaging in host memory (comm = mpi): MPI_Allreduce, or shm = through memory shared "
                     "by each node's ranks, then one MPI_Allreduce among the nodes' first ranks; auto = shm "
                     "(docs/parallelism.md); refused with comm = nccl",
                     [](Config& c, const std::string& v) {
                       c.parallel.host_allreduce = pick<HostAllreduce>(
                           v,
                           {{"auto", HostAllreduce::auto_}, {"mpi", HostAllreduce::mpi}, {"shm", HostAllreduce::shm}});
                     }));
  k.push_back(choice("parallel", "cuda_aware_mpi", {"auto", "on", "off"}, "auto",
                     "pass device buffers to MPI directly (auto: when the MPI library reports support)",
                     [](Config& c, const std::string& v) {
                       c.parallel.cuda_aware_mpi =
                           pick<Tristate>(v, {{"auto", Tristate::auto_}, {"on", Tristate::on}, {"off", Tristate::off}});
                     }));
  k.push_back(bounded(make("parallel", "bucket_mb", K::real, "25", "gradient bucket size in MiB",
                           [=](Config& c, const std::string& v) { c.parallel.bucket_mb = to_real(v); }),
                      0, 1e6, true));
  k.push_back(make("parallel", "shard_optimizer", K::boolean, "false",
                   "shard the optimizer state over the data-parallel ranks (ZeRO stage 1): gradients "
                   "reduce-scattered, each rank updates 1/D of the parameters, then all-gathered "
                   "(docs/parallelism.md)",
                   [](Config& c, const std::string& v) { c.parallel.shard_optimizer = parse_bool(v); }));
  k.push_back(
      choice("parallel", "shard_by", {"elements", "tensors"}, "elements",
             "with shard_optimizer: what each rank owns: equal blocks of every gradient bucket "
             "(reduce-scatter, then all-gather), or whole tensors, balanced by size (allreduce, then "
             "each tensor broadcast from its owner; what whole-matrix optimizers such as Muon need)",
             [](Config& c, const std::string& v) {
               c.parallel.shard_by = pick<ShardBy>(v, {{"elements", ShardBy::elements}, {"tensors", ShardBy::tensors}});
             }));
  k.push_back(choice("parallel", "gather_overlap", {"auto", "on", "off"}, "auto",
                     "with shard_optimizer: run the parameters' all-gather after the update during the next "
                     "forward, each layer waiting for its own (float32, one pipeline stage, no cuda_graphs); "
                     "auto = on GPUs only (on a CPU it competes with the forward for the cores)",
                     [](Config& c, const std::string& v) {
                       c.parallel.gather_overlap =
                           pick<Tristate>(v, {{"auto", Tristate::auto_}, {"on", Tristate::on}, {"off", Tristate::off}});
                     }));
  k.push_back(bounded(make("parallel", "watchdog_s", K::real, "300",
                           "seconds a collective may take before the job is aborted (exit 3); 0 = off",
                           [=](Config& c, const std::string& v) { c.parallel.watchdog_s = to_real(v); }),
                      0, 1e7));

  // [checkpoint]
  k.push_back(make("checkpoint", "dir", K::path, "", "checkpoint directory (default: <[run] out_dir>/checkpoints)",
                   [](Config& c, const std::string& v) { c.checkpoint.dir = v; }));
  k.push_back(bounded(make("checkpoint", "every_steps", K::integer, "0", "checkpoint every N steps; 0 = off",
                           [=](Config& c, const std::string& v) { c.checkpoint.every_steps = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("checkpoint", "every_epochs", K::integer, "1", "checkpoint every N epochs; 0 = off",
                           [=](Config& c, const std::string& v) { c.checkpoint.every_epochs = to_long(v); }),
                      0, kMaxLong));
  k.push_back(bounded(make("checkpoint", "every_minutes", K::real, "0", "checkpoint every N minutes; 0 = off",
                           [=](Config& c, const std::string& v) { c.checkpoint.every_minutes = to_real(v); }),
                      0, inf));
  k.push_back(bounded(make("checkpoint", "keep", K::integer, "3", "complete checkpoints kept",
                           [=](Config& c, const std::string& v) { c.checkpoint.keep = to_int(v); }),
                      1, 1 << 20));
  k.push_back(choice("checkpoint", "space_check", {"error", "warn", "off"}, "error",
                     "before training, check the checkpoint directory has room for keep + 1 checkpoints (free space "
                     "plus the older checkpoints rotation deletes): error = refuse to start (exit 2), warn; "
                     "both also skip a checkpoint that no longer fits (exit 4); off = neither check",
                     [](Config& c, const std::string& v) { c.checkpoint.space_check = v; }));
  k.push_back(make("checkpoint", "async", K::boolean, "false",
                   "write checkpoints in the background: the step copies what the file holds to host memory "
                   "(one more copy of the parameters and optimizer state) and training goes on; at most one "
                   "write in flight; the end of the run and a preemption wait for it (docs/checkpoints.md)",
                   [](Config& c, const std::string& v) { c.checkpoint.async = parse_bool(v); }));
  k.push_back(make("checkpoint", "mpiio_hints", K::text, "",
                   "hints for the MPI-IO layer writing checkpoints, key=value,... (e.g. romio_cb_write=enable, "
                   "striping_factor=8, striping_unit=4194304, cb_nodes=4; docs/checkpoints.md)",
                   [](Config& c, const std::string& v) {
                     parse_key_values(v);  // (invalid_argument: the key's error)
                     c.checkpoint.mpiio_hints = v;
                   }));
  k.push_back(make("checkpoint", "alignment", K::text, "auto",
                   "checkpoint datasets start at multiples of this many bytes: auto = the file system's "
                   "preferred I/O size (block size; stripe size on Lustre), none, or a size such as 1M",
                   [](Config& c, const std::string& v) {
                     if (v != "auto" && v != "none") (void)parse_byte_size(v);  // (the same)
                     c.checkpoint.alignment = v;
                   }));
  k.push_back(make("checkpoint", "resume", K::path, "auto",
                   "auto = newest complete checkpoint in dir, none, or a checkpoint file",
                   [](Config& c, const std::string& v) { c.checkpoint.resume = v; }));
  k.push_back(make("checkpoint", "init_from", K::path, "",
                   "fine-tuning: a checkpoint whose parameters initialize the model when the run starts fresh "
                   "(a checkpoint of this run found by resume wins); not its optimizer state or step",
                   [](Config& c, const std::string& v) { c.checkpoint.init_from = v; }));
  k.push_back(make("checkpoint", "init_layers", K::text, "",
                   "layers init_from loads: comma-separated name patterns (e.g. \"conv,h.0\"), each must "
                   "match; empty = every layer whose name and shapes match (the others start fresh, with a warning)",
                   [](Config& c, const std::string& v) { c.checkpoint.init_layers = v; }));
  // Old names, each listed after the key that took its place (same checks; a warning names the new key).
  // `key`: in the new key's section (listed after it), or "section.key" in another (listed last
  // in that section).
  auto renamed = [&](const std::string& key, const std::string& to) {
    for (auto it = k.begin(); it != k.end(); ++it)
      if (it->name() == to) {
        KeySpec old = *it;
        const auto dot = key.find('.');
        if (dot != std::string::npos) old.section = key.substr(0, dot);
        old.key = key.substr(dot == std::string::npos ? 0 : dot + 1);
        old.help = "old name of [" + it->section + "] " + it->key + " (same meaning; a warning says so)";
        old.apply = nullptr;
        old.renamed_to = to;
        auto at = it + 1;
        if (old.section != it->section) {
          at = k.end();
          for (auto j = k.begin(); j != k.end(); ++j)
            if (j->section == old.section) at = j + 1;
        }
        k.insert(at, old);
        return;
      }
    throw std::logic_error("renamed to an unknown key " + to);
  };
  renamed("model_parallel", "parallel.pipeline_parallel");
  renamed("schedule", "parallel.pipeline_schedule");
  renamed("data.block_size", "model.block_size");
  return k;
}

std::string current_key_name(const std::string& name, const std::vector<KeySpec>& schema) {
  for (const KeySpec& s : schema)
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

std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw std::invalid_argument("'" + item + "' is not key=value (e.g. romio_cb_write=enable,striping_factor=8)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

}  // namespace hpctrain
