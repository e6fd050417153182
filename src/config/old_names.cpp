// The old names of configuration keys, kept working with a warning (config/schema.hpp add_old_names).
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "hpctrain/config/schema.hpp"

namespace hpctrain {

namespace {
// `old` ("key" in the section of `to`, or "section.key") keeps working as "section.key" `to`: the
// same checks, a warning names the new key. Listed after `to`, or last in its own section.
void add_old_name(std::vector<KeySpec>& k, const std::string& old, const std::string& to,
                  std::map<std::string, std::string> old_values = {}) {
  for (auto it = k.begin(); it != k.end(); ++it) {
    if (it->name() != to) continue;
    KeySpec o = *it;
    const auto dot = old.find('.');
    if (dot != std::string::npos) o.section = old.substr(0, dot);
    o.key = old.substr(dot == std::string::npos ? 0 : dot + 1);
    o.help = "old name of [" + it->section + "] " + it->key + " (same meaning; a warning says so)";
    if (!old_values.empty()) {
      std::map<std::string, std::string> spellings;  // the new value -> its old spellings, a|b|c
      for (const auto& [was, now] : old_values) spellings[now] += (spellings[now].empty() ? "" : "|") + was;
      o.help = "old form of [" + it->section + "] " + it->key + ":";
      for (const auto& [now, was] : spellings) o.help += " " + was + " = " + now + ",";
      o.help.back() = ' ';
      o.help += "(a warning says so)";
      o.kind = ValueKind::text;
      o.choices.clear();
    }
    o.old_values = std::move(old_values);
    o.apply = nullptr;
    o.renamed_to = to;
    auto at = it + 1;
    if (o.section != it->section) {
      at = k.end();
      for (auto j = k.begin(); j != k.end(); ++j)
        if (j->section == o.section) at = j + 1;
    }
    k.insert(at, o);
    return;
  }
  throw std::logic_error("renamed to an unknown key " + to);
}

}  // namespace

void add_old_names(std::vector<KeySpec>& k) {
  const std::pair<const char*, const char*> old_names[] = {
      {"model_parallel", "parallel.pipeline_parallel"},
      {"schedule", "parallel.pipeline_schedule"},
      {"data.block_size", "model.block_size"},
      {"run.precision", "precision.dtype"},
      {"run.tf32", "precision.tf32"},
      {"optim.loss_scale", "precision.loss_scale"},
      {"optim.loss_scale_window", "precision.loss_scale_window"},
      {"run.cpu_gemm", "kernels.cpu_gemm"},
      {"run.conv", "kernels.conv"},
      {"run.fusion", "kernels.fusion"},
      {"run.cuda_graphs", "kernels.cuda_graphs"},
      {"run.threads", "kernels.threads"},
      {"train.log_every", "log.log_every"},
      {"train.metrics_file", "log.metrics_file"},
      {"train.tensorboard", "log.tensorboard"},
  };
  for (const auto& [old, to] : old_names) add_old_name(k, old, to);
  // A boolean that became a choice: its values are translated.
  add_old_name(k, "shard_optimizer", "parallel.shard",
               {{"true", "optimizer"},
                {"on", "optimizer"},
                {"yes", "optimizer"},
                {"1", "optimizer"},
                {"false", "none"},
                {"off", "none"},
                {"no", "none"},
                {"0", "none"}});
}

}  // namespace hpctrain
