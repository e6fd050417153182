// Implementation of the MPI RAII handles (runtime/mpi_handles.hpp).
#include "hpctrain/comm/mpi_handles.hpp"

#include <hdf5.h>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

MpiSession::MpiSession(int* argc, char*** argv) {
  CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_));
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  // HDF5 errors are reported through CHECK_H5 (innermost stack entry), not printed.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (provided_ < MPI_THREAD_MULTIPLE) {
    const int level = provided_;
    MPI_Finalize();
    throw Error(ExitCode::internal, Scope::every_rank,
                std::string("the MPI library provides thread level ") + thread_level_name(level) +
                    ", but hpctrain needs MPI_THREAD_MULTIPLE (its progress and watchdog threads call MPI)");
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int MpiComm::rank() const {
  int r = -1;
  CHECK_MPI(MPI_Comm_rank(comm_, &r));
  return r;
}

int MpiComm::size() const {
  int s = 0;
  CHECK_MPI(MPI_Comm_size(comm_, &s));
  return s;
}

void MpiComm::reset() {
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

MpiComm MpiComm::dup(MPI_Comm c) {
  MPI_Comm out = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_dup(c, &out));
  CHECK_MPI(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return MpiComm(out);
}

MpiComm MpiComm::split(MPI_Comm c, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split(c, color, key, &out));
  if (out != MPI_COMM_NULL) CHECK_MPI(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return MpiComm(out);
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
  }
}

void broadcast_string(MPI_Comm comm, std::string& text, int root) {
  int rank = 0;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  unsigned long long len = text.size();
  CHECK_MPI(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, root, comm));
  if (rank != root) text.assign(len, '\0');
  HPCT_CHECK(len < (1ull << 31), "broadcast_string of " + std::to_string(len) + " bytes");
  CHECK_MPI(MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, root, comm));
}

std::vector<int> world_ranks_of(MPI_Comm comm) {
  MPI_Group group, world;
  CHECK_MPI(MPI_Comm_group(comm, &group));
  CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  int n = 0;
  CHECK_MPI(MPI_Group_size(group, &n));
  std::vector<int> mine(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = i;
  CHECK_MPI(MPI_Group_translate_ranks(group, n, mine.data(), world, out.data()));
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

}  // namespace hpctrain
