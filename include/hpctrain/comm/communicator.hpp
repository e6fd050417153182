// The communicator seam: the collectives training needs, blocking and
// non-blocking, behind one interface with an MPI implementation (host buffers,
// device buffers through CUDA-aware MPI or pinned staging) and an NCCL one.
//
// Buffer rules, the same for every implementation (NCCL's):
//  - counts are elements of `dtype`; count 0 is allowed and is a no-op exchange;
//  - allreduce is in place when send == recv;
//  - allgather / reduce_scatter take `count` elements per rank (equal blocks;
//    padding happens above the seam); in place when send == recv + rank*count
//    (allgather) or recv == send + rank*count (reduce_scatter);
//  - buffers must stay valid until the request completes;
//  - every rank of the communicator issues the same collectives in the same order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "hpctrain/core/dtype.hpp"

namespace hpctrain {

class CollectiveLog;

enum class ReduceOp { sum, avg, max, min };
enum class MemorySpace { host, device };
const char* to_string(ReduceOp op);

// A started non-blocking operation. Destroying an unfinished request waits.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  // True once the operation completed; its results are then visible exactly
  // as after wait(). Never blocks.
  virtual bool test() = 0;
  // Host buffers: blocks until complete. Device buffers (NCCL): orders the
  // compute stream after the operation. Throws hpctrain::Error on failure.
  virtual void wait() = 0;
};
using Request = std::unique_ptr<CommRequest>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;  // "world", "dp[0]", "mp[1]", ...
  virtual const char* backend() const = 0;      // "mpi" or "nccl"
  virtual MemorySpace memory() const = 0;       // where its buffers live
  // Its operations: the watchdog's record, and the calls and bytes of each kind (OpTraffic).
  virtual const CollectiveLog& log() const = 0;

  virtual Request iallreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op) = 0;
  virtual Request ibroadcast(void* buf, std::size_t count, DType dtype, int root) = 0;
  virtual Request iallgather(const void* send, void* recv, std::size_t count_per_rank, DType dtype) = 0;
  virtual Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType dtype,
                                  ReduceOp op) = 0;
  virtual Request isend(const void* buf, std::size_t count, DType dtype, int peer) = 0;
  virtual Request irecv(void* buf, std::size_t count, DType dtype, int peer) = 0;
  virtual Request ibarrier() = 0;

  // Blocking forms.
  void allreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op) {
    iallreduce(send, recv, count, dtype, op)->wait();
  }
  void broadcast(void* buf, std::size_t count, DType dtype, int root) { ibroadcast(buf, count, dtype, root)->wait(); }
  void allgather(const void* send, void* recv, std::size_t count_per_rank, DType dtype) {
    iallgather(send, recv, count_per_rank, dtype)->wait();
  }
  void reduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType dtype, ReduceOp op) {
    ireduce_scatter(send, recv, count_per_rank, dtype, op)->wait();
  }
  void send(const void* buf, std::size_t count, DType dtype, int peer) { isend(buf, count, dtype, peer)->wait(); }
  void recv(void* buf, std::size_t count, DType dtype, int peer) { irecv(buf, count, dtype, peer)->wait(); }
  void barrier() { ibarrier()->wait(); }
};

}  // namespace hpctrain
