// The process mesh's arithmetic and its communicators (runtime/mesh.hpp).
#include "hpctrain/runtime/mesh.hpp"

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
std::size_t index(MeshDim d) { return static_cast<std::size_t>(d); }
}  // namespace

const char* dim_name(MeshDim d) {
  switch (d) {
    case MeshDim::tp: return "tp";
    case MeshDim::sp: return "sp";
    case MeshDim::pp: return "pp";
    case MeshDim::dp: return "dp";
  }
  return "?";
}

int MeshShape::world() const {
  int w = 1;
  for (int s : sizes) w *= s;
  return w;
}

int MeshShape::stride(MeshDim d) const {
  int s = 1;
  for (MeshDim f : kMeshOrder) {
    if (f == d) break;
    s *= size(f);
  }
  return s;
}

MeshShape make_mesh_shape(int world_size, const ParallelConfig& p) {
  return make_mesh_shape(world_size, p.pipeline_parallel, p.tensor_parallel, p.spatial_parallel);
}

MeshShape make_mesh_shape(int world_size, int pipeline_parallel, int tensor_parallel, int spatial_parallel) {
  const int inner = pipeline_parallel * tensor_parallel * spatial_parallel;
  if (pipeline_parallel < 1 || tensor_parallel < 1 || spatial_parallel < 1 || world_size % inner != 0) {
    const std::string what = tensor_parallel == 1 && spatial_parallel == 1
                                 ? "[parallel] pipeline_parallel = " + std::to_string(pipeline_parallel)
                             : spatial_parallel == 1 ? "pipeline_parallel x tensor_parallel = " + std::to_string(inner)
                             : tensor_parallel == 1
                                 ? "pipeline_parallel x spatial_parallel = " + std::to_string(inner)
                                 : "pipeline_parallel x tensor_parallel x spatial_parallel = " + std::to_string(inner);
    throw bad_input(what + " does not divide the world size " + std::to_string(world_size) + " (with " +
                    std::to_string(world_size) + " ranks it must be one of " + divisors_of(world_size) + ")");
  }
  MeshShape s;
  s.sizes[index(MeshDim::tp)] = tensor_parallel;
  s.sizes[index(MeshDim::sp)] = spatial_parallel;
  s.sizes[index(MeshDim::pp)] = pipeline_parallel;
  s.sizes[index(MeshDim::dp)] = world_size / inner;
  return s;
}

MeshCoords mesh_coords(int world_rank, const MeshShape& s) {
  MeshCoords c;
  for (MeshDim d : kMeshOrder) c[d] = world_rank / s.stride(d) % s.size(d);
  return c;
}

int mesh_world_rank(const MeshCoords& c, const MeshShape& s) {
  int r = 0;
  for (MeshDim d : kMeshOrder) r += c[d] * s.stride(d);
  return r;
}

std::vector<int> mesh_group_members(int world_rank, const MeshShape& s, MeshDim d) {
  MeshCoords c = mesh_coords(world_rank, s);
  std::vector<int> out;
  for (int i = 0; i < s.size(d); ++i) {
    c[d] = i;
    out.push_back(mesh_world_rank(c, s));
  }
  return out;
}

std::string mesh_group_name(const MeshCoords& c, const MeshShape& s, MeshDim d) {
  std::string where;
  for (auto it = kMeshOrder.rbegin(); it != kMeshOrder.rend(); ++it)  // slowest first: dp, pp, sp, tp
    if (*it != d && s.size(*it) > 1)
      where += std::string(where.empty() ? "" : ",") + dim_name(*it) + "=" + std::to_string(c[*it]);
  return std::string(dim_name(d)) + (where.empty() ? "" : "[" + where + "]");
}

long per_rank_batch(long global_batch, int micro_batches, const MeshShape& s) {
  const int dp = s.size(MeshDim::dp);
  if (global_batch % dp != 0)
    throw bad_input("[train] global_batch = " + std::to_string(global_batch) +
                    " is not divisible by the data-parallel size " + std::to_string(dp) + " (world " +
                    std::to_string(s.world()) + " / pipeline_parallel " + std::to_string(s.size(MeshDim::pp)) +
                    "): use a multiple of " + std::to_string(dp));
  const long per_rank = global_batch / dp;
  if (per_rank % micro_batches != 0)
    throw bad_input("[train] micro_batches = " + std::to_string(micro_batches) +
                    " does not divide the per-rank batch " + std::to_string(per_rank) + " (global_batch " +
                    std::to_string(global_batch) + " / " + std::to_string(dp) + " data-parallel ranks)");
  return per_rank;
}

int micro_batches_for(const TrainConfig& train, const MeshShape& s) {
  if (train.micro_batch == 0) return train.micro_batches;
  const long per_rank = per_rank_batch(train.global_batch, 1, s);
  if (per_rank % train.micro_batch != 0 || per_rank / train.micro_batch > 65536)
    throw bad_input("[train] micro_batch = " + std::to_string(train.micro_batch) +
                    " does not divide the per-rank batch " + std::to_string(per_rank) + " (global_batch " +
                    std::to_string(train.global_batch) + " / " + std::to_string(s.size(MeshDim::dp)) +
                    " data-parallel ranks)");
  return static_cast<int>(per_rank / train.micro_batch);
}

Mesh::Mesh(MPI_Comm world, const MeshShape& shape) : shape_(shape) {
  int size = 0;
  CHECK_MPI(MPI_Comm_rank(world, &world_rank_));
  CHECK_MPI(MPI_Comm_size(world, &size));
  HPCT_CHECK(size == shape.world(), "the mesh's sizes do not multiply to the world size");
  coords_ = mesh_coords(world_rank_, shape_);
  for (MeshDim d : kMeshOrder) {
    // The group along d: the ranks whose other coordinates equal ours (color), ordered along d (key).
    MeshCoords base = coords_;
    base[d] = 0;
    comms_[index(d)] = MpiComm::split(world, mesh_world_rank(base, shape_), coords_[d]);
  }
}

}  // namespace hpctrain
