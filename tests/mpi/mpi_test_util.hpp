// Small helpers shared by the MPI tests.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "hpctrain/comm/mpi_handles.hpp"

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Collective: an empty directory under the temporary directory, the same path on every rank.
inline std::string shared_dir(const char* tag) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / (std::string(tag) + std::to_string(getpid()))).string();
  hpctrain::broadcast_string(MPI_COMM_WORLD, dir, 0);
  if (world_rank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}
