// The NCCL implementation of the communicator seam (CUDA builds only): device
// buffers, a communicator bootstrapped through MPI, operations on its own CUDA
// stream ordered against the compute stream with events. A request's wait()
// makes the compute stream wait for the operation (it does not block the host).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "hpctrain/comm/collective_log.hpp"
#include "hpctrain/comm/communicator.hpp"

namespace hpctrain {

class Watchdog;

struct NcclCommOptions {
  std::string name = "world";
  void* compute_stream = nullptr;  // cudaStream_t the caller computes on (nullptr = legacy default)
  Watchdog* watchdog = nullptr;
};

// Collective over `comm`. Throws when hpctrain was built without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, NcclCommOptions options);

}  // namespace hpctrain
