// Implementation of rank-aware logging (core/log.hpp).
// The layering rule for core (tools/check_layering.py): core may only ask MPI for the rank and
// gather log lines (here and in error.cpp's rank-tagged messages); every other collective goes
// through a Communicator (comm/), where the watchdog sees it.
#include "hpctrain/core/log.hpp"

#include <cstdio>
#include <numeric>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
int world_rank_or_zero() {
  int initialized = 0, finalized = 0, rank = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
}  // namespace

void log0(const std::string& line) {
  if (world_rank_or_zero() != 0) return;
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

void warn(const std::string& line) {
  std::fprintf(stderr, "warning [%s]: %s\n", rank_and_host().c_str(), line.c_str());
  std::fflush(stderr);
}

void log_error(const std::string& line) {
  std::fprintf(stderr, "error [%s]: %s\n", rank_and_host().c_str(), line.c_str());
  std::fflush(stderr);
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 0;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank == 0 ? size : 0);
  CHECK_MPI(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm));
  std::vector<int> displs(lens.size());
  if (rank == 0) std::exclusive_scan(lens.begin(), lens.end(), displs.begin(), 0);
  std::string all(rank == 0 ? static_cast<std::size_t>(std::accumulate(lens.begin(), lens.end(), 0)) : 0, '\0');
  CHECK_MPI(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, comm));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(lens[i])));
  return out;
}

}  // namespace hpctrain
