// Shared by the GPU tests: skip (with the reason) where no GPU is visible, and
// the device this rank uses (its local rank), as the runtime would choose.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "hpctrain/backend/cuda/device_api.hpp"

namespace gputest {

inline std::string no_gpu_reason() {
  std::string why;
  const auto gpus = hpctrain::cuda::visible_gpus(&why);
  if (gpus.empty()) return "no GPU visible (" + why + ")";
  int local = 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (local >= static_cast<int>(gpus.size())) return "more ranks than GPUs on this node";
  hpctrain::cuda::set_device(local);
  return "";
}

}  // namespace gputest

#define REQUIRE_GPU()                                  \
  do {                                                 \
    const std::string why_ = gputest::no_gpu_reason(); \
    if (!why_.empty()) GTEST_SKIP() << why_;           \
  } while (0)
