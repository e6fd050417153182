// Implementation of the layer registry and the [model] layers parser.
#include "hpctrain/layers/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

void LayerRegistry::add(const std::string& type, const std::string& usage, LayerFactory factory) {
  HPCT_CHECK(!factories_.count(type), "layer type '" + type + "' registered twice");
  factories_[type] = Entry{usage, std::move(factory)};
}

std::vector<std::string> LayerRegistry::usages() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories_) out.push_back(v.usage);
  return out;
}

std::vector<std::string> LayerRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories_) out.push_back(k);
  return out;
}

namespace {
// What a user of another framework may have meant by `type`, or "".
std::string meant(const std::string& type, const std::vector<std::string>& known) {
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "softmax" || lower == "log_softmax" || lower == "logsoftmax")
    return "; the loss includes the softmax: end the model with the layer that makes the logits";
  static const std::map<std::string, std::string> names = {
      {"conv2d", "conv"},        {"conv1d", "conv"},           {"maxpool2d", "maxpool"},
      {"avgpool2d", "avgpool"},  {"batchnorm2d", "batchnorm"}, {"batchnorm1d", "batchnorm"},
      {"gelu_new", "gelu_tanh"}, {"adaptiveavgpool2d", "gap"}, {"globalaveragepooling2d", "gap"}};
  if (const auto it = names.find(lower); it != names.end()) return " (did you mean " + it->second + "?)";
  if (lower != type && std::find(known.begin(), known.end(), lower) != known.end())
    return " (did you mean " + lower + "? layer types are lower case)";
  return "";
}
}  // namespace

std::unique_ptr<Layer> LayerRegistry::make(const LayerArgs& args) const {
  const auto it = factories_.find(args.type);
  if (it == factories_.end()) {
    std::string known;
    const auto all = types();
    for (const auto& t : all) known += (known.empty() ? "" : ", ") + t;
    throw bad_input("[model] layers: unknown layer type '" + args.type + "' in '" + args.text + "'" +
                    meant(args.type, all) + " (known: " + known + ")");
  }
  return it->second.factory(args);
}

namespace {
// Parts of letters, digits, '_' and {} (repeat()'s index) joined by '.'.
bool valid_name(const std::string& name) {
  std::size_t part = 0;  // characters in the current part
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '.') {
      if (part == 0) return false;
      part = 0;
    } else if (c == '{' && i + 1 < name.size() && name[i + 1] == '}') {
      ++i;
      part += 2;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      ++part;
    } else {
      return false;
    }
  }
  return part > 0;
}
}  // namespace

namespace {
using Fail = std::function<void(const std::string&)>;  // throws the parser's one-line error

constexpr std::int64_t kMaxArgument = 2147483647;  // a layer's integer arguments: at most 2^31 - 1

// repeat(N, layers...): the layers N times over, as if written out, {} in names and blocks
// replaced by the index.
void expand_repeat(const std::string& inside, const std::string& name, const Fail& fail, std::vector<LayerArgs>& out) {
  const auto comma = inside.find(',');
  std::int64_t times = 0;
  try {
    std::size_t used = 0;
    times = std::stoll(inside.substr(0, comma), &used);
    if (inside.substr(0, comma).find_first_not_of(' ', used) != std::string::npos) times = 0;
  } catch (const std::exception&) {
  }
  if (comma == std::string::npos || times < 1 || times > 10000)
    fail("repeat needs a count from 1 to 10000 and layers, e.g. repeat(4, res(dense(8) relu))");
  if (!name.empty()) fail("repeat takes no name (name the layers inside it, with {} for the index)");
  const auto body = parse_layers(inside.substr(comma + 1));
  for (std::int64_t r = 0; r < times; ++r)
    for (LayerArgs b : body) {
      for (std::string* s : {&b.name, &b.body})
        for (auto at = s->find("{}"); at != std::string::npos; at = s->find("{}")) s->replace(at, 2, std::to_string(r));
      out.push_back(std::move(b));
    }
}

// "8, 3, pad=1": integers in order and key=value pairs.
void parse_arguments(const std::string& inside, LayerArgs& a, const Fail& fail) {
  std::size_t p = 0;
  while (p <= inside.size() && !inside.empty()) {
    const auto comma = inside.find(',', p);
    std::string arg = inside.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    arg.erase(0, arg.find_first_not_of(' '));
    arg.erase(arg.find_last_not_of(' ') + 1);
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      a.named[arg.substr(0, eq)] = arg.substr(eq + 1);
    } else {
      a.numbers.push_back(arg);
      bool integer = false;
      try {
        std::size_t used = 0;
        const std::int64_t v = std::stoll(arg, &used);
        integer = used == arg.size();
        if (integer) a.positional.push_back(v);
      } catch (const std::exception&) {
      }
      // (no size or count past 2^31 - 1: conv(164294967296, 3) took the process's memory in
      // configure; found by tests/fuzz/fuzz_layers.cpp)
      if (integer && (a.positional.back() > kMaxArgument || a.positional.back() < -kMaxArgument))
        fail("argument " + arg + " of " + a.type + " is out of range (at most " + std::to_string(kMaxArgument) + ")");
      try {  // (a number that is not an integer: for number_arg, as leaky_relu(0.3))
        std::size_t used = 0;
        if (!integer && (std::stod(arg, &used), used != arg.size())) throw std::invalid_argument(arg);
      } catch (const std::exception&) {
        fail("argument '" + arg + "' of " + a.type + " is not an integer");
      }
    }
    if (comma == std::string::npos) break;
    p = comma + 1;
  }
}

// The position of the ')' matching the '(' at `open`, allowing nested blocks; npos if none.
std::size_t matching_paren(const std::string& text, std::size_t open) {
  std::size_t depth = 0;
  for (std::size_t close = open; close < text.size(); ++close) {
    if (text[close] == '(') ++depth;
    if (text[close] == ')' && --depth == 0) return close;
  }
  return std::string::npos;
}
}  // namespace

std::vector<LayerArgs> parse_layers(const std::string& text) {
  std::vector<LayerArgs> out;
  std::size_t i = 0;
  const Fail fail = [&](const std::string& what) {
    throw bad_input("[model] layers = '" + text + "': " + what + " at character " + std::to_string(i + 1));
  };
  auto word = [&](bool dots) {
    std::string w;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' ||
                               (dots && (text[i] == '.' || text[i] == '{' || text[i] == '}'))))
      w += text[i++];
    return w;
  };
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    LayerArgs a;
    a.type = word(true);
    if (i < text.size() && text[i] == ':') {  // name:type
      a.name = a.type;
      ++i;
      if (!valid_name(a.name))
        fail("layer name '" + a.name + "' must be parts of letters, digits, '_' and {} joined by '.'");
      a.type = word(false);
    }
    if (a.type.empty()) fail("expected a layer name");
    if (a.type.find_first_of(".{}") != std::string::npos)
      fail("unknown layer type '" + a.type + "' (a name needs ':')");
    if (i < text.size() && text[i] == '(') {
      const std::size_t close = matching_paren(text, i);
      if (close == std::string::npos) fail("unclosed '('");
      const std::string inside = text.substr(i + 1, close - i - 1);
      if (a.type == "repeat") {
        expand_repeat(inside, a.name, fail, out);
        i = close + 1;
        continue;
      }
      if (a.type == "res")  // a block of layers, parsed by the residual layer
        a.body = inside;
      else
        parse_arguments(inside, a, fail);
      i = close + 1;
    }
    a.text = text.substr(start, i - start);
    out.push_back(a);
  }
  if (out.empty())
    throw bad_input("[model] layers is empty: list the layers, e.g. 'flatten dense(128) relu dense(10)'");
  return out;
}

std::vector<std::string> layer_names(const std::vector<LayerArgs>& layers) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const LayerArgs& a : layers) {
    if (a.name.find("{}") != std::string::npos)
      throw bad_input("[model] layers: " + a.text +
                      ": {} in a name stands for repeat()'s index, outside one it means nothing");
    out.push_back(a.name.empty() ? a.type + "." + std::to_string(seen[a.type]++) : a.name);
  }
  return out;
}

std::string legacy_layer_name(std::size_t index, const std::string& type) {
  char name[64];
  std::snprintf(name, sizeof(name), "%02zu_%s", index, type.c_str());
  return name;
}

std::string Layer::legacy_name(const std::string& tensor) const {
  std::string out = tensor;
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

std::int64_t vocab_block_rows(std::int64_t rows, int tp, const std::string& layer) {
  if (rows % tp != 0)
    throw bad_input("[model] layers: " + layer + ": " + std::to_string(rows) +
                    " rows do not divide among [parallel] tensor_parallel = " + std::to_string(tp) +
                    " ranks (vocabulary-parallel); set [model] vocab_multiple to a multiple of " + std::to_string(tp) +
                    " (64 is customary)");
  return rows / tp;
}

Communicator& Layer::sp_comm() const {
  HPCT_CHECK(ctx_ && ctx_->sp_comm && ctx_->sp_comm->size() == sp_.size,
             std::string(type()) + ": split over " + std::to_string(sp_.size) +
                 " spatial ranks but called without their communicator");
  return *ctx_->sp_comm;
}

Shape Layer::whole_shape(const Shape& slab) const {
  Shape whole = slab;
  if (whole.size() >= 4) whole[whole.size() - 3] *= sp_.size;  // (the depth: [.., C, D, H, W])
  return whole;
}

Tensor Layer::whole_volume(const Tensor& slab, std::size_t k, bool keep, bool kept) {
  const Shape& s = slab.shape();
  HPCT_CHECK(s.size() == 5, std::string(type()) + ": a slab gather needs [rows, C, D, H, W]");
  const Shape whole = whole_shape(s);
  if (kept) return saved(k, whole, slab.device());
  Tensor out = keep ? saved(k, whole, slab.device()) : temp(k, whole, slab.device());
  Tensor blocks = temp(k + 1, {sp_.size * slab.numel()}, slab.device());
  gather_slabs(sp_comm(), slab, s[2], s[3] * s[4], blocks, out);
  return out;
}

void Layer::slab_gradient(const Tensor& whole, Tensor& slab) {
  const Shape& s = slab.shape();
  slab_of(whole, s[2], s[3] * s[4], sp_.rank, sp_.size, slab);
}

void Layer::tp_sum(Tensor& t) {
  if (tp_.size == 1) return;
  HPCT_CHECK(ctx_ && ctx_->tp_comm && ctx_->tp_comm->size() == tp_.size,
             std::string(type()) + ": split over " + std::to_string(tp_.size) +
                 " tensor-parallel ranks but called without their communicator");
  ctx_->tp_comm->allreduce(t.data(), t.data(), static_cast<std::size_t>(t.numel()), DType::f32, ReduceOp::sum);
}

namespace {
// Between [rows, size, part] (sample-major: the layout of [rows, T, ...]) and [size, rows, part]
// (rank-major: the collectives' blocks), element blocks of `part` copied one by one.
void regroup(const Tensor& from, Tensor& to, std::int64_t rows, int size, std::int64_t part, bool to_rank_major) {
  for (int r = 0; r < size; ++r)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t sample_major = (i * size + r) * part, rank_major = (r * rows + i) * part;
      Tensor dst = to.view(to_rank_major ? rank_major : sample_major, {part});
      copy(from.view(to_rank_major ? sample_major : rank_major, {part}), dst);
    }
}
}  // namespace

void Layer::refuse_every_position(const Shape& in) const {
  if (sequence_split() && !in.empty() && in[0] == tp_.sequence)
    throw bad_input(std::string("[parallel] sequence_parallel: [model] layers: a ") + type() +
                    " between a tp=column and a tp=row layer (where every rank holds every position) is not "
                    "supported; put it outside the pair");
}

Tensor Layer::sequence_gather(const Tensor& local, std::size_t k) {
  if (!sequence_split()) return local;
  HPCT_CHECK(ctx_ && ctx_->tp_comm && local.shape().size() >= 2,
             std::string(type()) + ": a sequence gather needs the tensor-parallel group and [rows, T, ...]");
  const int size = tp_.size;
  const std::int64_t rows = local.shape()[0], part = local.numel() / rows;
  Shape shape = local.shape();
  shape[1] *= size;
  Tensor full = temp(k, shape, local.device());
  Tensor blocks = rows == 1 ? full : temp(k + 1, {size * local.numel()}, local.device());
  ctx_->tp_comm->allgather(local.data(), blocks.data(), static_cast<std::size_t>(local.numel()), DType::f32);
  if (rows > 1) regroup(blocks, full, rows, size, part, false);
  return full;
}

Tensor Layer::sequence_whole(Tensor& local, std::size_t k) {
  if (!sequence_split()) return local;
  Shape shape = local.shape();
  shape[1] *= tp_.size;
  return temp(k, shape, local.device());
}

void Layer::sequence_reduce_scatter(Tensor& full, Tensor& local, std::size_t k) {
  if (!sequence_split()) {
    tp_sum(full);
    if (full.data() != local.data()) copy(full, local);
    return;
  }
  HPCT_CHECK(ctx_ && ctx_->tp_comm && local.numel() * tp_.size == full.numel() && local.shape().size() >= 2,
             std::string(type()) + ": a sequence reduce-scatter needs the tensor-parallel group and [rows, T, ...]");
  const std::int64_t rows = local.shape()[0], part = local.numel() / rows;
  Tensor blocks = full;
  if (rows > 1) {
    blocks = temp(k, {full.numel()}, full.device());
    regroup(full, blocks, rows, tp_.size, part, true);
  }
  ctx_->tp_comm->reduce_scatter(blocks.data(), local.data(), static_cast<std::size_t>(local.numel()), DType::f32,
                                ReduceOp::sum);
}

std::int64_t int_arg(const LayerArgs& a, std::size_t index, const std::string& what) {
  if (index >= a.positional.size() || a.positional.size() != a.numbers.size())
    throw bad_input("[model] layers: " + a.text + " needs " + what + " as an integer (e.g. " + a.type + "(128))");
  if (a.positional[index] < 1) throw bad_input("[model] layers: " + a.text + ": " + what + " must be >= 1");
  return a.positional[index];
}

double number_arg(const LayerArgs& a, std::size_t index, const std::string& what) {
  if (index >= a.numbers.size())
    throw bad_input("[model] layers: " + a.text + " needs " + what + " (e.g. " + a.type + "(0.5))");
  const double v = std::stod(a.numbers[index]);  // (parse_arguments checked it is a number)
  if (!std::isfinite(v)) throw bad_input("[model] layers: " + a.text + ": " + what + " must be finite");
  return v;
}

std::int64_t layer_named_int(const LayerArgs& a, const std::string& key, std::int64_t fallback, std::int64_t min) {
  const auto it = a.named.find(key);
  if (it == a.named.end()) return fallback;
  try {
    std::size_t used = 0;
    const std::int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= min && v <= kMaxArgument) return v;
  } catch (const std::exception&) {
  }
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second + "' must be an integer in " +
                  std::to_string(min) + ".." + std::to_string(kMaxArgument));
}

namespace {
// `text` whole as a number v with least <= v < beyond, or none.
std::optional<float> number_in(const std::string& text, float least, float beyond) {
  try {
    std::size_t used = 0;
    const float v = std::stof(text, &used);
    if (used == text.size() && v >= least && v < beyond) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

float layer_named_number(const LayerArgs& a, const std::string& key, float fallback) {
  const auto it = a.named.find(key);
  if (it == a.named.end()) return fallback;
  if (const auto v = number_in(it->second, 0, std::numeric_limits<float>::infinity())) return *v;
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second + "' must be a number >= 0");
}

std::string float_arg_text(double v) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.9g", v);
  return s;
}

float layer_named_eps(const LayerArgs& a, const std::string& key, int fallback_power) {
  const auto it = a.named.find(key);
  const std::string text = it == a.named.end() ? std::to_string(fallback_power) : it->second;
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 2 && std::stoi(text) >= 1)
    return std::stof("1e-" + text);
  if (const auto v = number_in(text, 0, 1); v && *v > 0) return *v;
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + text +
                  "' must be a whole K >= 1 (10^-K) or an epsilon between 0 and 1");
}

float layer_named_std(const LayerArgs& a, const std::string& key) {
  const auto it = a.named.find(key);
  if (it == a.named.end()) return 0.02f;
  if (const auto v = number_in(it->second, 0, 10)) return *v;
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second +
                  "' must be a number >= 0 (the initial weights' standard deviation; 0: zeros)");
}

bool layer_named_bool(const LayerArgs& a, const std::string& key, bool fallback) {
  const auto it = a.named.find(key);
  if (it == a.named.end()) return fallback;
  if (it->second == "1" || it->second == "true") return true;
  if (it->second == "0" || it->second == "false") return false;
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second + "' must be 0 or 1");
}

void expect_named_only(const LayerArgs& a, std::size_t positional, const std::vector<std::string>& keys) {
  if (a.numbers.size() > positional)
    throw bad_input("[model] layers: " + a.text + " takes " + std::to_string(positional) + " number(s)");
  for (const auto& [k, v] : a.named)
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      std::string known;
      for (const auto& key : keys) known += (known.empty() ? "" : ", ") + key + "=";
      throw bad_input("[model] layers: " + a.text + ": unknown argument '" + k + "'" +
                      (known.empty() ? " (it takes none)" : " (known: " + known + ")"));
    }
}

void expect_no_args(const LayerArgs& a) {
  if (!a.numbers.empty() || !a.named.empty()) throw bad_input("[model] layers: " + a.text + " takes no arguments");
}

}  // namespace hpctrain

namespace hpctrain {

void register_dense(LayerRegistry& r);
void register_flatten(LayerRegistry& r);
void register_activations(LayerRegistry& r);
void register_conv2d(LayerRegistry& r, ConvImpl impl);
void register_maxpool(LayerRegistry& r);
void register_conv3d(LayerRegistry& r, ConvImpl impl);
void register_pooling3d(LayerRegistry& r);
void register_pooling(LayerRegistry& r);
void register_dropout(LayerRegistry& r);
void register_batchnorm(LayerRegistry& r);
void register_residual(LayerRegistry& r);
void register_embedding(LayerRegistry& r, std::int64_t vocab_multiple);
void register_position_embedding(LayerRegistry& r);
void register_layernorm(LayerRegistry& r);
void register_rmsnorm(LayerRegistry& r);
void register_swiglu(LayerRegistry& r);
void register_linear(LayerRegistry& r);
void register_attention(LayerRegistry& r);
void register_lm_head(LayerRegistry& r, std::int64_t vocab_multiple);

void register_builtin_layers(LayerRegistry& r, const LayerOptions& options) {
  register_dense(r);
  register_flatten(r);
  register_activations(r);
  register_conv2d(r, options.conv);
  register_maxpool(r);
  register_pooling(r);
  register_conv3d(r, options.conv);
  register_pooling3d(r);
  register_dropout(r);
  register_batchnorm(r);
  register_residual(r);
  register_embedding(r, options.vocab_multiple);
  register_position_embedding(r);
  register_layernorm(r);
  register_rmsnorm(r);
  register_swiglu(r);
  register_linear(r);
  register_attention(r);
  register_lm_head(r, options.vocab_multiple);
}

}  // namespace hpctrain
