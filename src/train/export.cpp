// trainer --export (train/export.hpp).
#include "hpctrain/train/export.hpp"

#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/train/checkpointing.hpp"

namespace hpctrain {

namespace {
void collect(const CheckpointFile& file, const std::string& group, std::vector<NamedTensor>& out) {
  for (const std::string& c : file.children(group)) {
    const std::string path = group + "/" + c;
    if (!file.group_type(path).empty()) {  // a layer's group (nested ones: residual blocks)
      collect(file, path, out);
      continue;
    }
    NamedTensor t;
    t.name = path.substr(path.find('/') + 1);  // without "model/"
    for (char& ch : t.name)
      if (ch == '/') ch = '.';
    t.shape = file.shape(path);
    t.data.resize(static_cast<std::size_t>(numel(t.shape)));
    file.read(path, t.data.data());
    out.push_back(std::move(t));
  }
}
}  // namespace

std::vector<NamedTensor> checkpoint_tensors(const CheckpointFile& file) {
  std::vector<NamedTensor> out;
  collect(file, "model", out);
  return out;
}

std::string export_weights(const Config& cfg, Runtime& rt, const std::string& out) {
  return compute_on_root(
             rt.world(),
             [&] {
               const std::string path = resume_selection(cfg);
               if (path.empty())
                 throw bad_input("--export " + out + ": no checkpoint to export ([checkpoint] resume = " +
                                 cfg.checkpoint.resume + ", dir " + cfg.checkpoint.dir + ")");
               const CheckpointFile file(path);
               const auto tensors = checkpoint_tensors(file);
               const RunRecord& run = file.info().run;
               std::map<std::string, std::string> meta{{"format", "pt"},
                                                       {"hpctrain_deck", run.ini},
                                                       {"hpctrain_step", std::to_string(file.info().state.step)},
                                                       {"hpctrain_software", run.software}};
               if (!run.tokenizer.empty()) {
                 meta["hpctrain_tokenizer"] = run.tokenizer;
                 meta["hpctrain_vocabulary"] = run.vocabulary;
               }
               write_safetensors(out, tensors, meta);
               std::int64_t values = 0;
               for (const NamedTensor& t : tensors) values += numel(t.shape);
               return std::vector<std::string>{"exported " + path + " (step " + std::to_string(file.info().state.step) +
                                               "): " + std::to_string(tensors.size()) + " tensors, " +
                                               std::to_string(values) + " float32 values, to " + out};
             })
      .at(0);
}

}  // namespace hpctrain
