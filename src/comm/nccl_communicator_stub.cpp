// make_nccl_communicator for builds without CUDA.
#include "hpctrain/comm/nccl_communicator.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, NcclCommOptions) {
  throw bad_input("[parallel] comm = nccl: hpctrain was built without CUDA/NCCL");
}

}  // namespace hpctrain
