// Implementation of the layer registry and the [model] layers parser.
#include "hpctrain/layers/registry.hpp"

#include <cctype>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

void LayerRegistry::add(const std::string& type, LayerFactory factory) { factories_[type] = std::move(factory); }

std::vector<std::string> LayerRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories_) out.push_back(k);
  return out;
}

std::unique_ptr<Layer> LayerRegistry::make(const LayerArgs& args) const {
  const auto it = factories_.find(args.type);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& t : types()) known += (known.empty() ? "" : ", ") + t;
    throw bad_input("[model] layers: unknown layer type '" + args.type + "' in '" + args.text + "' (known: " + known +
                    ")");
  }
  return it->second(args);
}

std::vector<LayerArgs> parse_layers(const std::string& text) {
  std::vector<LayerArgs> out;
  std::size_t i = 0;
  auto fail = [&](const std::string& what) {
    throw bad_input("[model] layers = '" + text + "': " + what + " at character " + std::to_string(i + 1));
  };
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    LayerArgs a;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
      a.type += text[i++];
    if (a.type.empty()) fail("expected a layer name");
    if (i < text.size() && text[i] == '(') {
      std::size_t close = i, depth = 0;  // the matching ')', allowing nested blocks
      for (; close < text.size(); ++close) {
        if (text[close] == '(') ++depth;
        if (text[close] == ')' && --depth == 0) break;
      }
      if (close >= text.size()) fail("unclosed '('");
      const std::string inside = text.substr(i + 1, close - i - 1);
      if (a.type == "res") {  // a block of layers, parsed by the residual layer
        a.body = inside;
        i = close + 1;
        a.text = text.substr(start, i - start);
        out.push_back(a);
        continue;
      }
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
          try {
            std::size_t used = 0;
            a.positional.push_back(std::stoll(arg, &used));
            if (used != arg.size()) throw std::invalid_argument(arg);
          } catch (const std::exception&) {
            fail("argument '" + arg + "' of " + a.type + " is not an integer");
          }
        }
        if (comma == std::string::npos) break;
        p = comma + 1;
      }
      i = close + 1;
    }
    a.text = text.substr(start, i - start);
    out.push_back(a);
  }
  if (out.empty())
    throw bad_input("[model] layers is empty: list the layers, e.g. 'flatten dense(128) relu dense(10)'");
  return out;
}

std::int64_t int_arg(const LayerArgs& a, std::size_t index, const std::string& what) {
  if (index >= a.positional.size())
    throw bad_input("[model] layers: " + a.text + " needs " + what + " (e.g. " + a.type + "(128))");
  if (a.positional[index] < 1) throw bad_input("[model] layers: " + a.text + ": " + what + " must be >= 1");
  return a.positional[index];
}

std::int64_t layer_named_int(const LayerArgs& a, const std::string& key, std::int64_t fallback, std::int64_t min) {
  const auto it = a.named.find(key);
  if (it == a.named.end()) return fallback;
  try {
    std::size_t used = 0;
    const std::int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second +
                  "' must be an integer >= " + std::to_string(min));
}

void expect_no_args(const LayerArgs& a) {
  if (!a.positional.empty() || !a.named.empty()) throw bad_input("[model] layers: " + a.text + " takes no arguments");
}

}  // namespace hpctrain

namespace hpctrain {

void register_dense(LayerRegistry& r);
void register_flatten(LayerRegistry& r);
void register_activations(LayerRegistry& r);
void register_conv2d(LayerRegistry& r, ConvImpl impl);
void register_maxpool(LayerRegistry& r);
void register_pooling(LayerRegistry& r);
void register_dropout(LayerRegistry& r);
void register_batchnorm(LayerRegistry& r);
void register_residual(LayerRegistry& r);

void register_builtin_layers(LayerRegistry& r, const LayerOptions& options) {
  register_dense(r);
  register_flatten(r);
  register_activations(r);
  register_conv2d(r, options.conv);
  register_maxpool(r);
  register_pooling(r);
  register_dropout(r);
  register_batchnorm(r);
  register_residual(r);
}

}  // namespace hpctrain
