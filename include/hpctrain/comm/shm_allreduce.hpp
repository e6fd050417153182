// Allreduce (a float32 sum) through memory the ranks of a node share, instead of MPI's
// shared-memory transport: each rank copies its buffer into its own slot of an MPI-3
// shared-memory window, sums one slice of every rank's slot into slot 0 (rank r the r-th of
// size slices, slots added in rank order, so every rank of the node gets the same bits), and
// every rank copies the result out. Across nodes (hierarchical, as Horovod and NCCL do): the
// node's sum in slot 0 is summed over the nodes by one MPI_Allreduce among the nodes' first
// ranks before the node's ranks copy it out. Buffers larger than a slot go through in
// slot-sized pieces. Used by MpiCommunicator for host-memory sums when [parallel]
// host_allreduce selects it.
//
// On one node also a reduce-scatter and an all-gather of float32 blocks (the sharded optimizer's
// collectives): per piece, every rank's slot holds a part of every block, so each rank sums (or
// copies out) the same amount and none waits on another's share.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpctrain {

class ShmAllreduce {
 public:
  // Collective over `comm` (split by node; each node's ranks map a slot of `slot_bytes` each;
  // the nodes' first ranks get a communicator of their own when the group spans nodes).
  explicit ShmAllreduce(MPI_Comm comm, std::size_t slot_bytes = std::size_t{256} << 10);
  int nodes() const { return nodes_; }         // how many nodes the group spans
  int widest_node() const { return widest_; }  // the most ranks of the group on one node
  ~ShmAllreduce();
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  // Collective: out = the sum over ranks of in (`count` floats; in == out allowed), times
  // `scale` (an average: 1 / ranks; the product the same bits as scaling the sum afterwards).
  void sum(const float* in, float* out, std::size_t count, float scale = 1.f);
  // One node only (nodes() == 1). Collective: out = the sum over ranks of block `rank` of in
  // (`size` blocks of `count` floats; summed in rank order; out == in + rank * count allowed),
  // times `scale`.
  void reduce_scatter(const float* in, float* out, std::size_t count, float scale = 1.f);
  // The same for int64 sums ([run] reproducible = layout's fixed-point limbs): exact.
  void reduce_scatter(const std::int64_t* in, std::int64_t* out, std::size_t count);
  // One node only. Collective: block r of out (`count` floats each) = rank r's in (in == out +
  // rank * count allowed).
  void allgather(const float* in, float* out, std::size_t count);

 private:
  template <typename T>
  void reduce_scatter_of(const T* in, T* out, std::size_t count, float scale);
  void sync();                        // every rank's stores before it are visible to every rank after it
  MPI_Comm comm_ = MPI_COMM_NULL;     // this node's ranks of the group
  MPI_Comm leaders_ = MPI_COMM_NULL;  // the nodes' first ranks (on those, when nodes_ > 1)
  int nodes_ = 1, widest_ = 1;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<float*> slots_;
  int rank_ = 0, size_ = 1;
  std::size_t capacity_ = 0;  // floats per slot
};

}  // namespace hpctrain
