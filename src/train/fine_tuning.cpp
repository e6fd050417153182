// Fine-tuning: a fresh run's parameters taken from another checkpoint ([checkpoint] init_from,
// init_layers; train/checkpointing.hpp). The optimizer state and the step are not taken.
#include <algorithm>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/train/checkpointing.hpp"

namespace hpctrain {

namespace {
std::string layer_of(const std::string& name) { return name.substr(0, name.rfind('/')); }
std::string leaf_of(const std::string& name) { return name.substr(name.rfind('/') + 1); }

// Why the checkpoint's tensor `name` cannot initialize ours of `shape` ("" when it can).
std::string misfit(const CheckpointFile& file, const std::string& name, const Shape& shape) {
  const std::string ds = "model/" + name;
  if (!file.has(ds)) return "not in the checkpoint";
  const Shape theirs = file.shape(ds);
  return theirs == shape ? ""
                         : "is " + shape_string(shape) + " here but " + shape_string(theirs) + " in the checkpoint";
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}
}  // namespace

InitPlan plan_initialization(const CheckpointFile& file, const std::vector<std::string>& layers,
                             const std::vector<std::pair<std::string, Shape>>& tensors,
                             const std::string& init_layers) {
  const auto patterns = split_patterns(init_layers);
  const std::string where = "[checkpoint] init_from = " + file.path();
  for (const std::string& p : patterns)
    if (std::none_of(layers.begin(), layers.end(), [&](const std::string& l) { return layer_matches(p, l); }))
      throw bad_input("[checkpoint] init_layers: '" + p +
                      "' names no layer of this model (the layers: " + join(layers) + ")");
  InitPlan plan;
  for (const auto& [name, shape] : tensors) {
    const std::string layer = layer_of(name);
    const bool asked =
        std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return layer_matches(p, layer); });
    if (!patterns.empty() && !asked) {
      plan.fresh.push_back(name + " (not in init_layers)");
      continue;
    }
    const std::string why = misfit(file, name, shape);
    if (why.empty()) {
      plan.load.push_back(name);
    } else if (asked) {  // the user named this layer: a mismatch is an error, not a silent fresh start
      throw bad_input(where + ": layer " + layer + ": " + leaf_of(name) + " " + why);
    } else {
      plan.fresh.push_back(name + " (" + why + ")");
      plan.mismatched = true;
    }
  }
  if (plan.load.empty())
    throw bad_input(where + ": no parameter of this model matches the checkpoint by name and shape (" +
                    (plan.fresh.empty() ? "nothing to load" : plan.fresh.front()) + ")");
  return plan;
}

std::string InitPlan::describe() const {
  std::vector<std::string> loaded_layers;
  for (const std::string& n : load)
    if (std::find(loaded_layers.begin(), loaded_layers.end(), layer_of(n)) == loaded_layers.end())
      loaded_layers.push_back(layer_of(n));
  return std::to_string(load.size()) + " tensor(s) of " + join(loaded_layers) +
         (fresh.empty() ? "" : "; fresh: " + join(fresh));
}

std::string Checkpointer::initialize(const std::string& path) {
  // Every rank reads its stage's tensors the plan loads over its freshly initialized ones (the
  // same on every rank of the stage: initialization is by global index).
  InitPlan plan;
  std::string error;
  try {
    const CheckpointFile file(path);
    std::vector<std::pair<std::string, Shape>> tensors;
    for (const ParamInfo& p : model_.param_info()) tensors.emplace_back(p.name, p.shape);
    model_.sync_buffers(true);
    auto buffers = model_.buffers();
    for (const auto& [name, buf] : buffers) tensors.emplace_back(name, Shape{static_cast<std::int64_t>(buf->size())});
    plan = plan_initialization(file, model_.layer_names(), tensors, cfg_.checkpoint.init_layers);
    auto loads = [&](const std::string& name) {
      return std::find(plan.load.begin(), plan.load.end(), name) != plan.load.end();
    };
    std::vector<float> p(static_cast<std::size_t>(model_.parameters().numel()));
    download(model_.parameters(), p.data(), p.size() * sizeof(float));
    for (const ParamInfo& pi : model_.param_info())
      if (loads(pi.name)) file.read("model/" + pi.name, p.data() + pi.offset);
    upload(p.data(), p.size() * sizeof(float), model_.parameters());
    for (auto& [name, buf] : buffers)
      if (loads(name)) file.read("model/" + name, buf->data());
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
