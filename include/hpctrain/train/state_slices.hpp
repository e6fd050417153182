// The optimizer state a checkpoint writer needs, without the whole state on any rank.
//
// A checkpoint stores the optimizer state laid out like the parameters, and each data-parallel
// rank writes whole chunks of every tensor (io/checkpoint_file.hpp: writer_elements). A rank holds
// the state of the elements it owns: all of them, or its shard with [parallel] shard_optimizer.
// Before a write, each rank gathers exactly the state it writes (its slice, ~1/D of the stage's
// state): its own elements by a copy, the others' from their owners by point-to-point messages.
// Elements nobody owns (frozen layers) are written as zeros.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/model/param_store.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// Who sends what, for one rank (`me` of D). Element ranges of the parameters' flat layout.
struct SlicePlan {
  Ranges writes;             // what this rank writes: one range per parameter, in the order of `params`
  std::vector<Ranges> take;  // [peer]: the part of `writes` taken from peer (take[me]: a local copy)
  std::vector<Ranges> give;  // [peer]: the part of peer's writes this rank sends it
};

// Pure. `params`: (offset, shape) of the stage's parameters; `owned[q]`: rank q's owned elements.
// A writer takes an element from itself when it owns it, else from the lowest-numbered owner.
SlicePlan plan_slices(const std::vector<std::pair<std::int64_t, Shape>>& params, const std::vector<Ranges>& owned,
                      int me);

// Collective over `dp` (host memory): every rank's owned ranges (the optimizer's runs).
std::vector<Ranges> gather_owned(Communicator& dp, const Optimizer& opt);

// Collective over `dp`: `slice` = for each of the optimizer's state_names() in turn, the state of
// plan.writes (in its order), from the owners' `compact` host copies of their state.
void gather_slices(Communicator& dp, const Optimizer& opt, const SlicePlan& plan, const float* compact,
                   std::vector<float>& slice);

}  // namespace hpctrain
