// Shared by the GPU tests: skip (with the reason) where no GPU is visible, and
// the device this rank uses (its local rank), as the runtime would choose; a fixture with host and
// device allocators, seeded random host tensors and their device copies.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/tensor/tensor.hpp"

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

namespace gputest {

// Skips without a GPU; random(shape, seed) on the host, uniform in [lo, hi); on_gpu(t): a device copy.
class HostAndDevice : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_GPU(); }
  hpctrain::Allocator host_{hpctrain::Device::cpu}, dev_{hpctrain::Device::cuda};

  hpctrain::Tensor random(const hpctrain::Shape& s, std::uint32_t seed, float lo = -1.f, float hi = 1.f) {
    hpctrain::Tensor t = hpctrain::Tensor::zeros(s, host_);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = u(rng);
    return t;
  }
  hpctrain::Tensor on_gpu(const hpctrain::Tensor& h) {
    hpctrain::Tensor d = hpctrain::Tensor::zeros(h.shape(), dev_, h.dtype());
    hpctrain::upload(h.raw(), h.bytes(), d);
    return d;
  }
};

}  // namespace gputest
