// The registry of layer types, filled explicitly by register_builtin_layers()
// (no static initializers), and the parser of [model] layers strings.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/layers/layer.hpp"

namespace hpctrain {

using LayerFactory = std::function<std::unique_ptr<Layer>(const LayerArgs&)>;

class LayerRegistry {
 public:
  // `usage`: the layer's grammar and meaning in one line, as --help prints it
  // ("dense(n): n outputs, weight [n, in] and bias").
  void add(const std::string& type, const std::string& usage, LayerFactory factory);
  // bad_input naming the layer and listing the known types when unknown.
  std::unique_ptr<Layer> make(const LayerArgs& args) const;
  std::vector<std::string> types() const;
  // Every type's usage line, in type order.
  std::vector<std::string> usages() const;

 private:
  struct Entry {
    std::string usage;
    LayerFactory factory;
  };
  std::map<std::string, Entry> factories_;
};

// Choices that change how built-in layers compute, not what (from [run]).
struct LayerOptions {
  ConvImpl conv = ConvImpl::auto_;
  // [model] vocab_multiple: embedding(V, C) and lm_head(V) hold round_up(V, M) rows, the rows past
  // V zero (ParamSpec::live_rows); lm_head's logits past V are -inf, so no softmax, loss or draw
  // sees them and their rows get no gradient (they stay zero).
  std::int64_t vocab_multiple = 1;
};
// The padded row count of a V-row table: round_up(V, vocab_multiple).
inline std::int64_t padded_vocab(std::int64_t vocab, std::int64_t multiple) {
  return (vocab + multiple - 1) / multiple * multiple;
}
// The rows of a (padded) vocabulary table that each of `tp` tensor-parallel ranks holds
// (embedding and lm_head are vocabulary-parallel): rows / tp; bad_input naming `layer` and
// [model] vocab_multiple when tp does not divide them.
std::int64_t vocab_block_rows(std::int64_t rows, int tp, const std::string& layer);

void register_builtin_layers(LayerRegistry& registry, const LayerOptions& options = {});

// "flatten dense(128) relu dense(10)" -> one LayerArgs per layer; bad_input on syntax errors.
// A layer may be named, "attn:attention(4)" (letters, digits, '_' and '.'; inside repeat(N, ...)
// {} in a name is the repetition's index: "h.{}:res(...)" gives h.0, h.1, ...; '#' would start an
// INI comment).
std::vector<LayerArgs> parse_layers(const std::string& text);
// The layers' names at one level (the model's, or a res block's): a layer's own, else
// "<type>.<k>", k counting that type's unnamed layers before it ("conv2d.0 relu.0 conv2d.1").
// Tensor names join them with '.': "h.3.attn.qkv.weight", "conv2d.1.bias".
std::vector<std::string> layer_names(const std::vector<LayerArgs>& layers);
// Format-1 checkpoints' positional layer name: "07_res".
std::string legacy_layer_name(std::size_t index, const std::string& type);

// Helpers for factories: the i-th positional argument, or a named one, as an integer.
std::int64_t int_arg(const LayerArgs& a, std::size_t index, const std::string& what);
void expect_no_args(const LayerArgs& a);
// Positional argument `index` as a number (integers too): bad_input when missing or not finite.
double number_arg(const LayerArgs& a, std::size_t index, const std::string& what);
// A named argument (pad=1) as an integer >= min, or `fallback` when absent.
std::int64_t layer_named_int(const LayerArgs& a, const std::string& key, std::int64_t fallback, std::int64_t min);
// A named number >= 0 (softcap=50), `fallback` when absent.
float layer_named_number(const LayerArgs& a, const std::string& key, float fallback);
// A float argument's text as layer_named_number and layer_named_eps read it back, to the float's
// last bit (9 significant digits: "1.25", "0.0141421356").
std::string float_arg_text(double v);
// A norm's epsilon: key=K, a whole K >= 1, is 10^-K ("eps=6": 1e-6); key=E, a number in (0, 1), is E
// itself ("eps=1.5625e-07", GLM-4 9B's); absent: 10^-fallback_power.
float layer_named_eps(const LayerArgs& a, const std::string& key, int fallback_power);
// A named standard deviation of initial weights (std=0.02), 0.02 when absent.
float layer_named_std(const LayerArgs& a, const std::string& key);
// A named 0/1 switch (bias=0), `fallback` when absent.
bool layer_named_bool(const LayerArgs& a, const std::string& key, bool fallback);
// bad_input unless `a` has at most `positional` numbers and only the named arguments `keys`.
void expect_named_only(const LayerArgs& a, std::size_t positional, const std::vector<std::string>& keys);

}  // namespace hpctrain
