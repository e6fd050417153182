// The MPI implementation of the communicator seam. One progress thread per
// communicator carries out the operations in call order while the caller
// computes: collectives as blocking MPI calls (Open MPI's fastest algorithms),
// point-to-point as non-blocking ones it keeps testing. Without such a thread
// Open MPI would advance an operation only inside MPI calls made by the caller,
// and overlap with compute would be fiction.
// Device buffers go to MPI directly when it is CUDA-aware, else through
// pinned host staging buffers (copies in the caller's thread).
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/comm/collective_log.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/comm/shm_allreduce.hpp"

namespace hpctrain {

class Watchdog;

struct MpiCommOptions {
  std::string name = "world";
  MemorySpace memory = MemorySpace::host;
  bool cuda_aware = false;               // pass device buffers to MPI directly
  cuda::DeviceMemory* device = nullptr;  // needed when memory == device
  Watchdog* watchdog = nullptr;          // optional
  // Host-memory float32 sums and averages through node-shared memory (comm/shm_allreduce.hpp)
  // instead of MPI_Allreduce; across nodes, hierarchically (one MPI_Allreduce among the nodes'
  // first ranks).
  bool shm_allreduce = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `comm` (duplicates it). Requests must not outlive this.
  MpiCommunicator(MPI_Comm comm, MpiCommOptions options);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return options_.name; }
  const char* backend() const override { return "mpi"; }
  MemorySpace memory() const override { return options_.memory; }

  Request iallreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op) override;
  Request ibroadcast(void* buf, std::size_t count, DType dtype, int root) override;
  Request iallgather(const void* send, void* recv, std::size_t count_per_rank, DType dtype) override;
  Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType dtype, ReduceOp op) override;
  Request isend(const void* buf, std::size_t count, DType dtype, int peer) override;
  Request irecv(void* buf, std::size_t count, DType dtype, int peer) override;
  Request ibarrier() override;

  // A duplicate of the communicator for MPI facilities used from the caller's thread (the
  // node-shared window, parallel HDF5's MPI-IO), never touched by the progress thread.
  MPI_Comm facility_handle() const { return facility_comm_.get(); }

  // How many nodes float32 sums span through node-shared memory (0: MPI_Allreduce).
  int shm_allreduce_nodes() const { return shm_ ? shm_->nodes() : 0; }
  // Bytes copied through host staging buffers so far (tests check the path).
  std::size_t staged_bytes() const;
  const CollectiveLog& log() const override { return log_; }

 private:
  struct Op;
  class OpRequest;
  struct Pinned {
    void* ptr;
    std::size_t bytes;
    bool busy;
  };

  std::unique_ptr<ShmAllreduce> shm_;  // (used by the progress thread only)
  Request submit(std::shared_ptr<Op> op);
  // Whether node-shared memory does `op` (float32 sums and averages; the reduce-scatter and
  // all-gather on one node) instead of MPI.
  bool through_shm(const Op& op) const;
  // The factor node-shared memory applies to `op`'s sum (1 / size for an average, which it then
  // marks scaled; else 1).
  float shm_scale(Op& op) const;
  void stage_in(Op& op);
  void start(Op& op);   // progress thread: issue the MPI call(s)
  void finish(Op& op);  // caller thread: copy back, average, release
  void wait_done(Op& op);
  bool is_done(Op& op);
  void progress_loop();
  void* acquire_pinned(std::size_t bytes);
  void release_pinned(void* p);

  MpiCommOptions options_;
  MpiComm coll_comm_, barrier_comm_, p2p_comm_;  // separate so mismatched kinds never cross-match
  MpiComm facility_comm_;
  int rank_ = 0, size_ = 1;
  CollectiveLog log_;

  std::mutex mu_;
  std::condition_variable wake_;  // progress thread: new work or stop
  std::condition_variable done_;  // callers: an op finished
  std::deque<std::shared_ptr<Op>> queue_;
  bool stop_ = false;
  std::thread progress_;

  std::mutex pinned_mu_;
  std::vector<Pinned> pinned_;
  std::size_t staged_bytes_ = 0;
};

// The MPI communicator under `comm` for MPI facilities (facility_handle()); an internal error
// when `comm` is not an MpiCommunicator (host communicators always are).
MPI_Comm mpi_facility_handle(Communicator& comm);

}  // namespace hpctrain
