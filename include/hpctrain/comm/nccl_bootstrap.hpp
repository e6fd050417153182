// Bootstrapping an NCCL communicator through MPI, with the two NCCL calls
// injected so the protocol is testable on machines without a GPU: rank 0 of
// the MPI communicator makes the unique id, MPI_Bcast hands it to every rank,
// and each rank initializes its NCCL rank with it.
#pragma once

#include <mpi.h>

#include <array>
#include <functional>

namespace hpctrain {

constexpr std::size_t kNcclIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct NcclId {
  std::array<char, kNcclIdBytes> bytes{};
};

using MakeNcclId = std::function<NcclId()>;                                        // ncclGetUniqueId
using InitNcclRank = std::function<void(const NcclId& id, int nranks, int rank)>;  // ncclCommInitRank

// Collective over `comm`. Returns the id every rank used.
NcclId bootstrap_nccl(MPI_Comm comm, const MakeNcclId& make_id, const InitNcclRank& init);

}  // namespace hpctrain
