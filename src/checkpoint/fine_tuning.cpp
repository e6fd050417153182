// Fine-tuning: a fresh run's parameters taken from another checkpoint ([checkpoint] init_from,
// init_layers; checkpoint/checkpointing.hpp). The optimizer state and the step are not taken.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace hpctrain {

namespace {
// Why the checkpoint's copy of `t` cannot initialize it ("" when it can).
std::string misfit(const CheckpointFile& file, const ModelTensor& t) {
  const std::string ds = "model/" + stored_name(file, t.name, t.legacy);
  if (!file.has(ds)) return "not in the checkpoint";
  const Shape theirs = file.shape(ds);
  return theirs == t.shape ? ""
                           : "is " + shape_string(t.shape) + " here but " + shape_string(theirs) +
                                 " in the checkpoint" + vocabulary_rows_hint(t.name, t.shape, theirs);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A tensor's layer: its name's part before the leaf ("h.0.attn.qkv.weight" -> "h.0.attn.qkv").
std::string layer_of(const std::string& name) { return name.substr(0, name.rfind('.')); }
}  // namespace

std::vector<ModelTensor> model_tensors(const Model& model, bool whole) {
  const auto& names = model.all_layer_names();
  const std::size_t first = model.first_layer(), last = first + model.layers();
  std::vector<ModelTensor> out;
  for (const ParamInfo& p : whole ? model.all_param_info() : model.param_info())
    out.push_back({p.name, p.legacy, names[p.layer], p.global_shape});  // (a checkpoint's datasets are whole)
  for (const auto& b : model.all_buffers())
    if (whole || (b.layer >= first && b.layer < last)) out.push_back({b.name, b.legacy, names[b.layer], {b.size}});
  return out;
}

InitPlan plan_initialization(const CheckpointFile& file, const std::vector<std::string>& layers,
                             const std::vector<ModelTensor>& tensors, const std::string& init_layers) {
  const auto patterns = split_patterns(init_layers);
  const std::string where = "[checkpoint] init_from = " + file.path();
  auto names = [&](const std::string& p, const ModelTensor& t) {
    return layer_matches(p, t.layer) || layer_matches(p, layer_of(t.name));
  };
  for (const std::string& p : patterns)
    if (std::none_of(layers.begin(), layers.end(), [&](const std::string& l) { return layer_matches(p, l); }) &&
        std::none_of(tensors.begin(), tensors.end(), [&](const ModelTensor& t) { return names(p, t); }))
      throw bad_input("[checkpoint] init_layers: '" + p +
                      "' names no layer of this model (the layers: " + join(layers) + ")");
  InitPlan plan;
  for (const ModelTensor& t : tensors) {
    const bool asked = std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return names(p, t); });
    if (!patterns.empty() && !asked) {
      plan.fresh.push_back(t.name + " (not in init_layers)");
      continue;
    }
    const std::string why = misfit(file, t);
    if (why.empty()) {
      plan.load.push_back(t.name);
      if (std::find(plan.loaded_layers.begin(), plan.loaded_layers.end(), t.layer) == plan.loaded_layers.end())
        plan.loaded_layers.push_back(t.layer);
    } else if (asked) {  // the user named this layer: a mismatch is an error, not a silent fresh start
      throw bad_input(where + ": " + t.name + " " + why);
    } else {
      plan.fresh.push_back(t.name + " (" + why + ")");
      plan.mismatched = true;
    }
  }
  if (plan.load.empty())
    throw bad_input(where + ": no parameter of this model matches the checkpoint by name and shape (" +
                    (plan.fresh.empty() ? "nothing to load" : plan.fresh.front()) + ")");
  return plan;
}

std::string InitPlan::describe() const {
  return std::to_string(load.size()) + " tensor(s) of " + join(loaded_layers) +
         (fresh.empty() ? "" : "; fresh: " + join(fresh));
}

std::string Checkpointer::initialize(const std::string& path) {
  // Every rank reads its stage's tensors the plan loads over its freshly initialized ones (the
  // same on every rank of the stage: initialization is by global index); with the parameters
  // sharded, only the elements it owns, each by its hyperslabs.
  InitPlan plan;
  std::string error;
  try {
    const CheckpointFile file(path);
    hf_files_ = file.info().run.hf_files;  // (a Hugging Face import's files, for --export-hf later)
    const auto tensors = model_tensors(model_, false);
    model_.sync_buffers(true);
    plan = plan_initialization(file, model_.layer_names(), tensors, cfg_.checkpoint.init_layers);
    const std::set<std::string> planned(plan.load.begin(), plan.load.end());
    std::map<std::string, std::string> loads;  // name -> the dataset, for the tensors the plan loads
    for (const ModelTensor& t : tensors)
      if (planned.count(t.name)) loads[t.name] = "model/" + stored_name(file, t.name, t.legacy);
    std::vector<ParamInfo> loaded;
    for (const ParamInfo& pi : model_.param_info())
      if (loads.count(pi.name)) loaded.push_back(pi);
    std::vector<float> p(static_cast<std::size_t>(model_.parameters().numel()));
    download(model_.parameters(), p.data(), p.size() * sizeof(float));
    read_parameters(file, loaded, p.data());
    upload(p.data(), p.size() * sizeof(float), model_.parameters());
    for (auto& [name, buf] : model_.buffers())
      if (loads.count(name)) file.read(loads[name], buf->data());
    model_.sync_buffers(false);  // device copies of the buffers follow the loaded values
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) throw;
    error = e.what();
  }
  raise_if_any(rt_.world(), error);
  if (plan.mismatched && rt_.mesh().coord(MeshDim::dp) == 0)  // layers that start fresh for want of a match: say so
    warn("[checkpoint] init_from = " + path + ": some layers start fresh: " + plan.describe());
  return plan.describe();
}

}  // namespace hpctrain
