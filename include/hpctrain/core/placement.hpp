// How a tensor lies along the mesh dimensions that may split one tensor (runtime/mesh.hpp: tp,
// sp): a layer says it in its ParamSpec (layers/layer.hpp), the parameter store lays the tensor
// out by it (model/param_store.hpp local_blocks, local_shape).
#pragma once

#include <cstdint>
#include <vector>

namespace hpctrain {

// How one tensor lies along one mesh dimension of size n.
struct Placement {
  enum class Kind { replicated, sharded };
  Kind kind = Kind::replicated;
  int axis = 0;                     // sharded: the tensor axis that is cut
  std::vector<std::int64_t> parts;  // sharded: sizes along `axis` of fused parts, each cut into
                                    // n equal blocks on its own; empty: the whole axis is one part
  static Placement replicated() { return {}; }
  static Placement sharded(int axis, std::vector<std::int64_t> parts = {}) {
    return {Kind::sharded, axis, std::move(parts)};
  }
};

// The placements of a tensor along the dimensions that may split it (runtime/mesh.hpp).
struct Placements {
  Placement tp, sp;
};

}  // namespace hpctrain
