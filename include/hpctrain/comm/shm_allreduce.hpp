// Allreduce (a float32 sum) through memory the ranks of one node share, instead of MPI's
// shared-memory transport: each rank copies its buffer into its own slot of an MPI-3
// shared-memory window, sums one slice of every rank's slot into slot 0 (rank r the r-th of
// size slices, slots added in rank order, so every rank gets the same bits), and every rank
// copies the result out. Buffers larger than a slot go through in slot-sized pieces. Used by
// MpiCommunicator for host-memory sums when [parallel] host_allreduce selects it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace hpctrain {

class ShmAllreduce {
 public:
  // Whether every rank of `comm` shares this node's memory. Collective.
  static bool on_one_node(MPI_Comm comm);
  // Collective over `comm` (duplicated; its ranks must share one node: on_one_node). Each rank
  // maps a slot of `slot_bytes`.
  explicit ShmAllreduce(MPI_Comm comm, std::size_t slot_bytes = std::size_t{256} << 10);
  ~ShmAllreduce();
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  // Collective: out = the sum over ranks of in (`count` floats; in == out allowed).
  void sum(const float* in, float* out, std::size_t count);

 private:
  void sync();  // every rank's stores before it are visible to every rank after it
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<float*> slots_;
  int rank_ = 0, size_ = 1;
  std::size_t capacity_ = 0;  // floats per slot
};

}  // namespace hpctrain
