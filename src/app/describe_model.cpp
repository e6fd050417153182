// trainer DECK --describe-model (app/app.hpp describe_model): the model as JSON.
#include <nlohmann/json.hpp>

#include "hpctrain/app/app.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

namespace {
// One layer as the grammar reads it: type, arguments, and the layers inside a res block.
nlohmann::ordered_json layer_json(const LayerArgs& a, const std::string& name) {
  nlohmann::ordered_json j;
  j["name"] = name;  // layer_names(): its tensors' names start with it
  j["type"] = a.type;
  j["positional"] = a.positional;
  j["numbers"] = a.numbers;  // every positional argument as written (leaky_relu(0.3): "0.3")
  j["named"] = a.named;
  j["text"] = a.text;
  if (!a.body.empty()) {
    j["body"] = nlohmann::ordered_json::array();
    const auto inner = parse_layers(a.body);
    const auto names = layer_names(inner);
    for (std::size_t k = 0; k < inner.size(); ++k) j["body"].push_back(layer_json(inner[k], names[k]));
  }
  return j;
}

// The layers string `layers` on samples of `sample_shape` as JSON (describe_model's fields).
nlohmann::ordered_json describe(const std::string& layers, const std::vector<std::int64_t>& sample_shape,
                                const LayerOptions& options) {
  Allocator alloc;
  LayerRegistry registry;
  register_builtin_layers(registry, options);
  // Layer 0 held (no buffers for the rest): names, shapes and the whole model's tensors.
  const Model model(layers, sample_shape, registry, alloc, 0, 1);
  const auto specs = parse_layers(layers);  // repeat() written out, as the model names them
  nlohmann::ordered_json j;
  j["layers_text"] = layers;
  j["sample_shape"] = sample_shape;
  j["input"] = specs.front().type == "embedding" ? "int32 token ids" : "float32 samples";
  j["vocab_multiple"] = options.vocab_multiple;
  j["layers"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < specs.size(); ++i)
    j["layers"].push_back(layer_json(specs[i], model.all_layer_names()[i]));
  j["tensors"] = nlohmann::ordered_json::array();
  for (const ParamInfo& p : model.all_param_info())
    j["tensors"].push_back({{"name", p.name}, {"shape", p.shape}, {"layer", p.layer}});
  j["buffers"] = nlohmann::ordered_json::array();
  for (const auto& b : model.all_buffers())
    j["buffers"].push_back({{"name", b.name}, {"size", b.size}, {"layer", b.layer}});
  j["output_shape"] = model.whole_output_shape();
  return j;
}
}  // namespace

std::string describe_model(const Config& cfg, const DatasetIndex& index) {
  const Config with_model = with_architecture(cfg, index);
  auto j = describe(with_model.model.layers, index.train.sample_shape,
                    LayerOptions{cfg.kernels.conv, cfg.model.vocab_multiple});
  j["arch"] = cfg.resolved_value("model.arch");
  if (index.train.tokens) j["input"] = "int32 token ids";
  return j.dump(1);
}

std::string describe_layers(const std::string& layers, const std::string& input_shape, long vocab_multiple) {
  std::vector<std::int64_t> shape;
  std::size_t at = 0;
  while (at <= input_shape.size()) {
    const auto comma = input_shape.find(',', at);
    const std::string part = input_shape.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    std::size_t used = 0;
    long long d = 0;
    try {
      d = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || d < 1)
      throw bad_input("--input-shape '" + input_shape + "': expected sizes >= 1 separated by commas, e.g. 28,28");
    shape.push_back(d);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (vocab_multiple < 1) throw bad_input("--vocab-multiple " + std::to_string(vocab_multiple) + ": expected >= 1");
  auto j = describe(layers, shape, LayerOptions{ConvImpl::auto_, vocab_multiple});
  j["arch"] = "layers";
  return j.dump(1);
}

}  // namespace hpctrain
