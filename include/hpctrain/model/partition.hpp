// Model-parallel layer groups: which consecutive top-level layers of
// [model] layers each pipeline stage holds ([model] groups, one group per
// stage of [parallel] pipeline_parallel). Layers keep their model-wide names
// ("dense.1") on whichever stage holds them, so checkpoints have the same
// layout for every number of stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

struct LayerGroup {
  std::size_t first = 0, last = 0;  // layers [first, last)
};

// groups = "auto": contiguous groups that minimize the largest group's
// parameter count, every group non-empty; among equal choices the later cut,
// so a parameter-free layer (relu) stays in the group of the layer before it.
// Explicit: one inclusive range per stage, "0-3 4-7" (spaces or commas; a
// single layer as "5"), in order, covering every layer once.
// bad_input naming the key and the problem: more stages than layers, an
// empty or reversed range, a gap or overlap, a wrong number of ranges.
std::vector<LayerGroup> partition_layers(const std::vector<std::int64_t>& layer_params, int stages,
                                         const std::string& groups);

// The stage holding layer `layer`.
int stage_of_layer(const std::vector<LayerGroup>& groups, std::size_t layer);

class Model;
// Parameters of each top-level layer of `model`, for partition_layers().
std::vector<std::int64_t> layer_parameter_counts(const Model& model);

}  // namespace hpctrain
