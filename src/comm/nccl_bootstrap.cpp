// Implementation of the MPI-based NCCL bootstrap (comm/nccl_bootstrap.hpp).
#include "hpctrain/comm/nccl_bootstrap.hpp"

#include "hpctrain/core/error.hpp"

namespace hpctrain {

NcclId bootstrap_nccl(MPI_Comm comm, const MakeNcclId& make_id, const InitNcclRank& init) {
  int rank = 0, size = 0;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  NcclId id;
  if (rank == 0) id = make_id();
  CHECK_MPI(MPI_Bcast(id.bytes.data(), static_cast<int>(id.bytes.size()), MPI_BYTE, 0, comm));
  init(id, size, rank);
  return id;
}

}  // namespace hpctrain
