// Which optimizer state each data-parallel rank writes into a checkpoint: its own elements, from
// where it holds them, with no message between the ranks.
//
// A checkpoint stores the optimizer state laid out like the parameters (/optimizer/<name>/<tensor>).
// A rank holds the state of the elements it owns (opt.runs()): all of them, or its shard with
// [parallel] shard_optimizer. Each owned element is written by exactly one of its owners: the one
// whose writer rows (io/checkpoint_file.hpp writer_elements, the rows it writes of the
// parameters) hold it, else the lowest-numbered owner. Sharded, that is every rank's own shard
// (one owner each); unsharded, every rank its writer rows. The datasets' chunks may then be
// shared by several writers (HDF5 >= 1.10.2 writes filtered datasets collectively); elements
// nobody owns (frozen layers: whole tensors) are not written and read as the fill value, zero.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/range.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// Pure. `params`: (offset, shape) of the stage's parameters in buffer order; `owned[q]`: rank q's
// owned elements (sorted, disjoint). What rank `me` writes, sorted and disjoint.
Ranges plan_state_writes(const std::vector<std::pair<std::int64_t, Shape>>& params, const std::vector<Ranges>& owned,
                         int me);

// Collective over `dp` (host memory): every rank's owned elements (the optimizer's runs).
std::vector<Ranges> gather_owned(Communicator& dp, const Optimizer& opt);

// Where owned element `e` sits in each block of the optimizer's compact state (its runs' packing).
std::int64_t state_position(const std::vector<DecayRun>& runs, std::int64_t e);

}  // namespace hpctrain
