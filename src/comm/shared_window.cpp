// Node-shared memory (comm/shared_window.hpp).
#include "hpctrain/comm/shared_window.hpp"

#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

SharedWindow::SharedWindow(Communicator& node, std::uint64_t bytes) {
  const MPI_Comm comm = mpi_facility_handle(node);
  const MPI_Aint mine = node.rank() == 0 ? static_cast<MPI_Aint>(bytes) : 0;
  void* ptr = nullptr;
  CHECK_MPI(MPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, comm, &ptr, &win_));
  MPI_Aint size = 0;
  int disp = 0;
  CHECK_MPI(MPI_Win_shared_query(win_, 0, &size, &disp, &base_));
}

SharedWindow::~SharedWindow() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (win_ != MPI_WIN_NULL && !finalized) MPI_Win_free(&win_);
}

void SharedWindow::fence() { CHECK_MPI(MPI_Win_fence(0, win_)); }

}  // namespace hpctrain
