// The process grid: world = D data-parallel replicas x M model-parallel stages.
// Rank r sits at mp = r % M, dp = r / M (one replica's stages on adjacent
// ranks). One communicator per data-parallel group (ranks sharing mp, size D,
// rank = dp) and per model-parallel group (ranks sharing dp, size M, rank = mp).
#pragma once

#include <string>
#include <vector>

#include "hpctrain/comm/mpi_handles.hpp"

namespace hpctrain {

struct GridShape {
  int world = 1;
  int dp_size = 1;  // D
  int mp_size = 1;  // M
};

struct GridCoords {
  int dp = 0;
  int mp = 0;
};

// Throws bad_input naming the numbers when M does not divide the world size.
GridShape make_grid_shape(int world_size, int model_parallel);
GridCoords grid_coords(int world_rank, const GridShape& shape);
int grid_world_rank(const GridCoords& c, const GridShape& shape);
// World ranks of rank `world_rank`'s data-parallel group (same mp) and
// model-parallel group (same dp), in group-rank order.
std::vector<int> dp_group_members(int world_rank, const GridShape& shape);
std::vector<int> mp_group_members(int world_rank, const GridShape& shape);

// The batch contract: per-rank batch = global_batch / D, split into
// micro_batches. Throws bad_input with the numbers when it does not divide.
long per_rank_batch(long global_batch, int micro_batches, const GridShape& shape);

class ProcessGrid {
 public:
  ProcessGrid(MPI_Comm world, int model_parallel);  // collective over world
  const GridShape& shape() const { return shape_; }
  const GridCoords& coords() const { return coords_; }
  int world_rank() const { return world_rank_; }
  MPI_Comm dp_comm() const { return dp_comm_.get(); }
  MPI_Comm mp_comm() const { return mp_comm_.get(); }
  // Names used in tables and watchdog reports: "dp[<mp>]" and "mp[<dp>]".
  std::string dp_name() const { return "dp[" + std::to_string(coords_.mp) + "]"; }
  std::string mp_name() const { return "mp[" + std::to_string(coords_.dp) + "]"; }

 private:
  GridShape shape_;
  GridCoords coords_;
  int world_rank_ = 0;
  MpiComm dp_comm_;
  MpiComm mp_comm_;
};

}  // namespace hpctrain
