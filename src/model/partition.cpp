// Model-parallel layer groups (model/partition.hpp).
#include "hpctrain/model/partition.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/model/model.hpp"

namespace hpctrain {

namespace {

std::string where(int stages) { return "[model] groups with [parallel] pipeline_parallel = " + std::to_string(stages); }

// Linear partition: best[k][i] = the smallest possible largest group over the first i layers in k groups.
std::vector<LayerGroup> balance(const std::vector<std::int64_t>& params, int stages) {
  const std::size_t n = params.size(), m = static_cast<std::size_t>(stages);
  std::vector<std::int64_t> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + params[i];
  const std::int64_t inf = std::numeric_limits<std::int64_t>::max();
  std::vector<std::vector<std::int64_t>> best(m + 1, std::vector<std::int64_t>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(m + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= m; ++k)
    for (std::size_t i = k; i <= n; ++i)
      for (std::size_t j = k - 1; j < i; ++j) {  // the last group is layers [j, i)
        if (best[k - 1][j] == inf) continue;
        const std::int64_t worst = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (worst <= best[k][i]) {  // ties: the latest cut, so a parameter-free layer stays with the one before
          best[k][i] = worst;
          cut[k][i] = j;
        }
      }
  std::vector<LayerGroup> out(m);
  std::size_t end = n;
  for (std::size_t k = m; k >= 1; --k) {
    out[k - 1] = {cut[k][end], end};
    end = cut[k][end];
  }
  return out;
}

std::size_t parse_index(const std::string& text, const std::string& range, int stages) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw bad_input(where(stages) + ": '" + range + "' is not a layer range like 0-3");
  return static_cast<std::size_t>(std::stoull(text));
}

std::vector<LayerGroup> parse(const std::string& groups, std::size_t layers, int stages) {
  std::string text = groups;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<LayerGroup> out;
  for (std::string range; in >> range;) {
    const auto dash = range.find('-');
    const std::size_t a = parse_index(range.substr(0, dash), range, stages);
    const std::size_t b = dash == std::string::npos ? a : parse_index(range.substr(dash + 1), range, stages);
    if (b < a) throw bad_input(where(stages) + ": group " + std::to_string(out.size()) + " ('" + range + "') is empty");
    const std::size_t expect = out.empty() ? 0 : out.back().last;
    if (a != expect)
      throw bad_input(where(stages) + ": group " + std::to_string(out.size()) + " ('" + range + "') starts at layer " +
                      std::to_string(a) + " but must start at layer " + std::to_string(expect) +
                      (a > expect ? " (layers in between would belong to no group)" : " (groups overlap)"));
    if (b >= layers)
      throw bad_input(where(stages) + ": group " + std::to_string(out.size()) + " ('" + range + "') names layer " +
                      std::to_string(b) + " but [model] layers has " + std::to_string(layers) + " (0-" +
                      std::to_string(layers - 1) + ")");
    out.push_back({a, b + 1});
  }
  if (static_cast<int>(out.size()) != stages)
    throw bad_input(where(stages) + ": '" + groups + "' gives " + std::to_string(out.size()) +
                    " group(s); one per stage is needed");
  if (out.back().last != layers)
    throw bad_input(where(stages) + ": '" + groups + "' leaves out layers " + std::to_string(out.back().last) + "-" +
                    std::to_string(layers - 1));
  return out;
}

}  // namespace

std::vector<LayerGroup> partition_layers(const std::vector<std::int64_t>& layer_params, int stages,
                                         const std::string& groups) {
  const std::size_t n = layer_params.size();
  if (stages < 1) throw bad_input(where(stages) + ": needs at least one stage");
  if (static_cast<std::size_t>(stages) > n)
    throw bad_input("[parallel] pipeline_parallel = " + std::to_string(stages) +
                    " stages but [model] layers has only " + std::to_string(n) +
                    " layer(s): every stage needs at least one");
  if (groups.empty() || groups == "auto") return balance(layer_params, stages);
  return parse(groups, n, stages);
}

std::vector<std::int64_t> layer_parameter_counts(const Model& model) {
  std::vector<std::int64_t> out(model.all_layer_names().size(), 0);
  for (const ParamInfo& p : model.all_param_info()) out[p.layer] += numel(p.shape);
  return out;
}

int stage_of_layer(const std::vector<LayerGroup>& groups, std::size_t layer) {
  for (std::size_t s = 0; s < groups.size(); ++s)
    if (layer >= groups[s].first && layer < groups[s].last) return static_cast<int>(s);
  HPCT_CHECK(false, "layer " + std::to_string(layer) + " is in no group");
  return -1;
}

}  // namespace hpctrain
