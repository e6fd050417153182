// Shared by the GPU tests: skip (with the reason) where no GPU is visible, and
// the device this rank uses (its local rank), as the runtime would choose; a fixture with host and
// device allocators, seeded random host tensors and their device copies.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

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

// The backend operations compared so far (test_cuda_coverage.cpp checks every one was), and the
// fixture of the operation tests (test_cuda_ops.cpp, test_cuda_volume_ops.cpp).
inline std::set<std::string>& compared() {
  static std::set<std::string> names;
  return names;
}

class CudaOps : public gputest::HostAndDevice {
 protected:
  using HostAndDevice::on_gpu;
  template <typename T>
  const T* on_gpu(const std::vector<T>& v, hpctrain::Tensor& keep) {
    keep = hpctrain::Tensor::zeros({static_cast<std::int64_t>((v.size() * sizeof(T) + 3) / 4)}, dev_);
    hpctrain::upload(v.data(), v.size() * sizeof(T), keep);
    return reinterpret_cast<const T*>(keep.data());
  }
  // Largest |gpu - cpu| / max(1, |cpu|) must be <= tol.
  void expect_close(const char* op, const hpctrain::Tensor& cpu, const hpctrain::Tensor& gpu, double tol) {
    compared().insert(op);
    // The reference is read on the host: a device tensor there would be read through its device
    // pointer (a crash on a GPU machine, seen 2026-12-04), so it is refused instead.
    ASSERT_EQ(cpu.device(), hpctrain::Device::cpu) << op << ": the reference is not a host tensor";
    ASSERT_EQ(cpu.numel(), gpu.numel()) << op;
    ASSERT_EQ(cpu.dtype(), gpu.dtype()) << op;
    if (cpu.dtype() == hpctrain::DType::i32) {  // indices: bit for bit
      std::vector<std::int32_t> g(static_cast<std::size_t>(gpu.numel()));
      hpctrain::download(gpu, g.data(), g.size() * sizeof(std::int32_t));
      const std::int32_t* c = cpu.data_as<std::int32_t>();
      std::int64_t wrong = 0;
      for (std::int64_t i = 0; i < cpu.numel(); ++i) wrong += c[i] != g[static_cast<std::size_t>(i)];
      EXPECT_EQ(wrong, 0) << op << ": indices that differ";
      return;
    }
    const auto g = hpctrain::to_host(gpu);
    double worst = 0;
    std::int64_t at = 0;
    for (std::int64_t i = 0; i < cpu.numel(); ++i) {
      const double c = cpu.data()[i], d = g[static_cast<std::size_t>(i)];
      const double err = (std::isnan(c) || std::isnan(d)) ? (std::isnan(c) && std::isnan(d) ? 0 : INFINITY)
                         : c == d                         ? 0
                                                          : std::fabs(d - c) / std::max(1.0, std::fabs(c));
      if (err > worst) worst = err, at = i;
    }
    EXPECT_LE(worst, tol) << op << ": element " << at << " cpu " << cpu.data()[at] << " gpu "
                          << g[static_cast<std::size_t>(at)];
  }
};

}  // namespace gputest
