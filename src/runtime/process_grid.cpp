// Implementation of the data-parallel x model-parallel process grid.
#include "hpctrain/runtime/process_grid.hpp"

#include <string>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
std::string divisors_of(int n) {
  std::string out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}
}  // namespace

GridShape make_grid_shape(int world_size, int model_parallel) {
  if (model_parallel < 1 || world_size % model_parallel != 0)
    throw bad_input("[parallel] model_parallel = " + std::to_string(model_parallel) +
                    " does not divide the world size " + std::to_string(world_size) + " (with " +
                    std::to_string(world_size) + " ranks it must be one of " + divisors_of(world_size) + ")");
  return {world_size, world_size / model_parallel, model_parallel};
}

GridCoords grid_coords(int world_rank, const GridShape& s) { return {world_rank / s.mp_size, world_rank % s.mp_size}; }

int grid_world_rank(const GridCoords& c, const GridShape& s) { return c.dp * s.mp_size + c.mp; }

std::vector<int> dp_group_members(int world_rank, const GridShape& s) {
  const auto me = grid_coords(world_rank, s);
  std::vector<int> out;
  for (int dp = 0; dp < s.dp_size; ++dp) out.push_back(grid_world_rank({dp, me.mp}, s));
  return out;
}

std::vector<int> mp_group_members(int world_rank, const GridShape& s) {
  const auto me = grid_coords(world_rank, s);
  std::vector<int> out;
  for (int mp = 0; mp < s.mp_size; ++mp) out.push_back(grid_world_rank({me.dp, mp}, s));
  return out;
}

long per_rank_batch(long global_batch, int micro_batches, const GridShape& s) {
  if (global_batch % s.dp_size != 0)
    throw bad_input("[train] global_batch = " + std::to_string(global_batch) +
                    " is not divisible by the data-parallel size " + std::to_string(s.dp_size) + " (world " +
                    std::to_string(s.world) + " / model_parallel " + std::to_string(s.mp_size) +
                    "): use a multiple of " + std::to_string(s.dp_size));
  const long per_rank = global_batch / s.dp_size;
  if (per_rank % micro_batches != 0)
    throw bad_input("[train] micro_batches = " + std::to_string(micro_batches) +
                    " does not divide the per-rank batch " + std::to_string(per_rank) + " (global_batch " +
                    std::to_string(global_batch) + " / " + std::to_string(s.dp_size) + " data-parallel ranks)");
  return per_rank;
}

ProcessGrid::ProcessGrid(MPI_Comm world, int model_parallel) {
  int size = 0;
  CHECK_MPI(MPI_Comm_rank(world, &world_rank_));
  CHECK_MPI(MPI_Comm_size(world, &size));
  shape_ = make_grid_shape(size, model_parallel);
  coords_ = grid_coords(world_rank_, shape_);
  dp_comm_ = MpiComm::split(world, coords_.mp, coords_.dp);
  mp_comm_ = MpiComm::split(world, coords_.dp, coords_.mp);
}

}  // namespace hpctrain
