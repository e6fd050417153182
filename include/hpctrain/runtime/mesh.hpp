// The process mesh: the world as a grid of named dimensions (shared/DESIGN.md, docs/parallelism.md).
//   tp  tensor-parallel ranks (size 1 until tensor parallelism exists)
//   sp  spatial: ranks that split each volume's depth ([parallel] spatial_parallel)
//   pp  pipeline stages ([parallel] pipeline_parallel)
//   dp  data-parallel replicas (the rest: world / (tp x sp x pp))
// Placement: tp varies fastest, then sp, then pp, then dp slowest, so one replica's stages sit on
// adjacent ranks and a tensor-parallel group shares a node whenever it fits on one. Every rank
// belongs to one group along each dimension (the ranks that differ from it only there); code asks
// for a dimension's communicator, coordinate or size by name. Adding a dimension: docs/contributing.md.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/config/config.hpp"

namespace hpctrain {

enum class MeshDim { tp, sp, pp, dp };
inline constexpr std::size_t kMeshDims = 4;
// Fastest-varying first: the placement order.
inline constexpr std::array<MeshDim, kMeshDims> kMeshOrder{MeshDim::tp, MeshDim::sp, MeshDim::pp, MeshDim::dp};
const char* dim_name(MeshDim d);  // "tp", "sp", "pp", "dp"

struct MeshShape {
  std::array<int, kMeshDims> sizes{1, 1, 1, 1};  // by MeshDim
  int size(MeshDim d) const { return sizes[static_cast<std::size_t>(d)]; }
  int world() const;
  // World-rank distance between neighbours along `d`: the product of the faster dimensions' sizes.
  int stride(MeshDim d) const;
};

// The mesh for `world_size` ranks with the given pipeline (tensor, spatial) sizes; dp is what remains.
// Throws bad_input naming the numbers (and the sizes that would fit) when they do not divide.
MeshShape make_mesh_shape(int world_size, int pipeline_parallel, int tensor_parallel = 1, int spatial_parallel = 1);
// The mesh [parallel] asks for: pipeline_parallel, tensor_parallel and spatial_parallel.
MeshShape make_mesh_shape(int world_size, const ParallelConfig& p);

struct MeshCoords {
  std::array<int, kMeshDims> at{0, 0, 0, 0};  // by MeshDim
  int operator[](MeshDim d) const { return at[static_cast<std::size_t>(d)]; }
  int& operator[](MeshDim d) { return at[static_cast<std::size_t>(d)]; }
};

MeshCoords mesh_coords(int world_rank, const MeshShape& shape);
int mesh_world_rank(const MeshCoords& c, const MeshShape& shape);
// World ranks of `world_rank`'s group along `d` (same coordinates elsewhere), in coordinate order.
std::vector<int> mesh_group_members(int world_rank, const MeshShape& shape, MeshDim d);
// The name of the group along `d` that `c` belongs to: "dp[pp=1]", "pp[dp=0]"; the coordinates of
// the other dimensions larger than 1 identify it, so with one such group it is just "dp". Tables,
// the watchdog and error messages use it.
std::string mesh_group_name(const MeshCoords& c, const MeshShape& shape, MeshDim d);

// The batch contract: per-rank batch = global_batch / dp, split into micro_batches. Throws bad_input
// with the numbers when it does not divide.
long per_rank_batch(long global_batch, int micro_batches, const MeshShape& shape);
// [train] micro_batches for this mesh: as given, or per-rank batch / micro_batch when
// [train] micro_batch = N (bad_input when N does not divide the per-rank batch).
int micro_batches_for(const TrainConfig& train, const MeshShape& shape);

class Mesh {
 public:
  Mesh(MPI_Comm world, const MeshShape& shape);  // collective over world; one split per dimension
  const MeshShape& shape() const { return shape_; }
  const MeshCoords& coords() const { return coords_; }
  int size(MeshDim d) const { return shape_.size(d); }
  int coord(MeshDim d) const { return coords_[d]; }
  int world_rank() const { return world_rank_; }
  MPI_Comm comm(MeshDim d) const { return comms_[static_cast<std::size_t>(d)].get(); }
  std::string group_name(MeshDim d) const { return mesh_group_name(coords_, shape_, d); }

 private:
  MeshShape shape_;
  MeshCoords coords_;
  int world_rank_ = 0;
  std::array<MpiComm, kMeshDims> comms_;
};

}  // namespace hpctrain
