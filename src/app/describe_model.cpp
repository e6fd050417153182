// trainer DECK --describe-model (app/app.hpp describe_model): the model as JSON.
#include <nlohmann/json.hpp>

#include "hpctrain/app/app.hpp"
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
}  // namespace

std::string describe_model(const Config& cfg, const DatasetIndex& index) {
  const Config with_model = with_architecture(cfg, index.train);
  Allocator alloc;
  LayerRegistry registry;
  register_builtin_layers(registry, LayerOptions{cfg.run.conv, cfg.model.vocab_multiple});
  // Layer 0 held (no buffers for the rest): names, shapes and the whole model's tensors.
  const Model model(with_model.model.layers, index.train.sample_shape, registry, alloc, 0, 1);
  nlohmann::ordered_json j;
  j["arch"] = cfg.resolved_value("model.arch");
  j["layers_text"] = with_model.model.layers;
  j["sample_shape"] = index.train.sample_shape;
  j["input"] = index.train.tokens ? "int32 token ids" : "float32 samples";
  j["vocab_multiple"] = cfg.model.vocab_multiple;
  const auto specs = parse_layers(with_model.model.layers);  // repeat() written out, as the model names them
  j["layers"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    j["layers"].push_back(layer_json(specs[i], model.all_layer_names()[i]));
  }
  j["tensors"] = nlohmann::ordered_json::array();
  for (const ParamInfo& p : model.all_param_info())
    j["tensors"].push_back({{"name", p.name}, {"shape", p.shape}, {"layer", p.layer}});
  j["buffers"] = nlohmann::ordered_json::array();
  for (const auto& b : model.all_buffers())
    j["buffers"].push_back({{"name", b.name}, {"size", b.size}, {"layer", b.layer}});
  j["output_shape"] = model.whole_output_shape();
  return j.dump(1);
}

}  // namespace hpctrain
