// trainer --export (checkpoint/export.hpp).
#include "hpctrain/checkpoint/export.hpp"

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
// [model] vocab_multiple of the run that wrote `file`: the vocabulary V of its embedding or lm_head
// and the padded row count; 0 when nothing is padded. The layers string and the multiple as the
// checkpoint records them (an arch = gpt | llama deck has no layers string: its run built one),
// else the deck's.
std::pair<std::int64_t, std::int64_t> vocab_padding(const CheckpointFile& file, const Config& cfg) {
  const auto stored = ini_values(file.info().run.ini, "checkpoint " + file.path());
  const auto recorded = [&stored](const char* key, const std::string& deck) {
    const auto it = stored.find(key);
    return it == stored.end() || it->second.empty() ? deck : it->second;
  };
  const std::int64_t multiple = std::stoll(recorded("model.vocab_multiple", std::to_string(cfg.model.vocab_multiple)));
  if (multiple <= 1) return {0, 0};
  for (const LayerArgs& a : parse_layers(recorded("model.layers", cfg.model.layers)))
    if ((a.type == "embedding" || a.type == "lm_head") && !a.positional.empty()) {
      return {a.positional[0], padded_vocab(a.positional[0], multiple)};
    }
  return {0, 0};
}

void collect(const CheckpointFile& file, const std::string& group, std::vector<LazyTensor>& out,
             std::pair<std::int64_t, std::int64_t> padding) {
  const std::string type = file.group_type(group);
  for (const std::string& c : file.children(group)) {
    const std::string path = group + "/" + c;
    if (!file.group_type(path).empty()) {  // a layer's group (nested ones: residual blocks)
      collect(file, path, out, padding);
      continue;
    }
    LazyTensor t;
    t.name = path.substr(path.find('/') + 1);  // without "model/" (format 1: "07_res.01_attention.qkv_weight")
    for (char& ch : t.name)
      if (ch == '/') ch = '.';
    const std::string layer_type = file.version() >= 2 ? file.string_attribute(path, "layer_type") : type;
    const std::string leaf = t.name.substr(t.name.rfind('.') + 1);
    t.shape = file.shape(path);
    const bool table = (layer_type == "embedding" || layer_type == "lm_head") && leaf == "weight";
    if (table && padding.first > 0 && !t.shape.empty() && t.shape[0] == padding.second)
      t.shape[0] = padding.first;  // the padding rows (the last ones) are left out
    t.rows = [&file, path, width = t.row_width()](std::int64_t first, std::int64_t count, float* to) {
      file.read_elements(path, first * width, count * width, to);
    };
    out.push_back(std::move(t));
  }
}
}  // namespace

DType export_dtype(const Config& cfg) {
  const Precision p = cfg.checkpoint.export_dtype;
  return p == Precision::fp32 ? DType::f32 : storage_dtype(p);
}

const char* torch_dtype_name(DType stored) {
  return stored == DType::bf16 ? "bfloat16" : stored == DType::f16 ? "float16" : "float32";
}

std::vector<LazyTensor> checkpoint_tensors(const CheckpointFile& file, const Config* cfg) {
  std::vector<LazyTensor> out;
  collect(file, "model", out, cfg ? vocab_padding(file, *cfg) : std::pair<std::int64_t, std::int64_t>{0, 0});
  return out;
}

std::string export_weights(const Config& cfg, Runtime& rt, const std::string& out) {
  return compute_on_root(
             rt.world(),
             [&] {
               const std::string path = resume_selection(cfg);
               if (path.empty())
                 throw bad_input("--export " + out + ": no checkpoint to export ([checkpoint] resume = " +
                                 cfg.checkpoint.resume.text() + ", dir " + cfg.checkpoint.dir + ")");
               const CheckpointFile file(path);
               const auto tensors = checkpoint_tensors(file, &cfg);
               const RunRecord& run = file.info().run;
               std::map<std::string, std::string> meta{{"format", "pt"},
                                                       {"hpctrain_deck", run.ini},
                                                       {"hpctrain_step", std::to_string(file.info().state.step)},
                                                       {"hpctrain_software", run.software}};
               if (!run.tokenizer.empty()) {
                 meta["hpctrain_tokenizer"] = run.tokenizer;
                 meta["hpctrain_vocabulary"] = run.vocabulary;
               }
               const DType stored = export_dtype(cfg);
               write_safetensors(out, tensors, meta, stored);
               std::int64_t values = 0;
               for (const LazyTensor& t : tensors) values += numel(t.shape);
               return std::vector<std::string>{"exported " + path + " (step " + std::to_string(file.info().state.step) +
                                               "): " + std::to_string(tensors.size()) + " tensors, " +
                                               std::to_string(values) + " " + torch_dtype_name(stored) +
                                               " values, to " + out};
             })
      .at(0);
}

}  // namespace hpctrain
