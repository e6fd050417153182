// CUDA-side tests. The CUDA error family runs everywhere (the libraries'
// error strings need no GPU); everything that touches a device skips, with
// the reason, where no GPU is visible: device discovery, staging through real
// pinned memory and the device scale kernel, NCCL collectives against the
// MPI ones (one rank per GPU), and the GPU's telemetry through the real NVML.
#include <gtest/gtest.h>
#include <link.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/cuda/cublas_api.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/nccl_communicator.hpp"
#include "hpctrain/core/cuda_check.hpp"
#include "hpctrain/core/gpu_telemetry.hpp"

using namespace hpctrain;

namespace {
bool mapped(const char* prefix) {
  return dl_iterate_phdr(
             [](dl_phdr_info* info, std::size_t, void* p) {
               const char* base = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
               const char* want = static_cast<const char*>(p);
               return base && std::strncmp(base + 1, want, std::strlen(want)) == 0 ? 1 : 0;
             },
             const_cast<char*>(prefix)) != 0;
}
}  // namespace

// First in this binary (nothing before it asks for cuBLAS): a program linked with hpctrain does
// not load cuBLAS (nor its 540 MB libcublasLt, ~0.3 s of CPU at every start) until the first
// call needs it; then the table loads and names statuses (no GPU needed).
TEST(CublasTable, LoadedOnFirstUseOnly) {
  EXPECT_FALSE(mapped("libcublasLt.so")) << "linked with cuBLAS: it loads at every start";
  EXPECT_FALSE(mapped("libcublas.so"));
  EXPECT_EQ(cuda::cublas_status_text(CUBLAS_STATUS_INVALID_VALUE).rfind("CUBLAS_STATUS_INVALID_VALUE: ", 0), 0u);
  EXPECT_TRUE(mapped("libcublas.so"));
}

TEST(CudaChecks, ReportLibraryNamesAndStrings) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto cuda_msg = message([] { CHECK_CUDA(cudaErrorInvalidValue); });
  EXPECT_NE(cuda_msg.find("failed: CUDA cudaErrorInvalidValue: invalid argument"), std::string::npos) << cuda_msg;
  const auto blas_msg = message([] { CHECK_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED); });
  EXPECT_NE(blas_msg.find("failed: cuBLAS CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << blas_msg;
  const auto dnn_msg = message([] { CHECK_CUDNN(CUDNN_STATUS_BAD_PARAM); });
  EXPECT_NE(dnn_msg.find("failed: cuDNN CUDNN_STATUS_BAD_PARAM"), std::string::npos) << dnn_msg;
  const auto nccl_msg = message([] { CHECK_NCCL(ncclInvalidArgument); });
  EXPECT_NE(nccl_msg.find("failed: NCCL invalid argument"), std::string::npos) << nccl_msg;
  EXPECT_NE(nccl_msg.find("test_cuda.cpp:"), std::string::npos) << nccl_msg;
}

TEST(CudaDevice, DiscoveryAndVersions) {
  EXPECT_TRUE(cuda::compiled());
  EXPECT_FALSE(cuda::runtime_version().empty());
  EXPECT_EQ(cuda::nccl_version().rfind("2.", 0), 0u) << cuda::nccl_version();
  REQUIRE_GPU();
  std::string why;
  const auto gpus = cuda::visible_gpus(&why);
  ASSERT_FALSE(gpus.empty());
  EXPECT_GT(gpus[0].memory_bytes, 0u);
  EXPECT_GE(gpus[0].cc_major, 7);
}

// The real NVML (the driver's libnvidia-ml.so.1) finds this GPU by the PCI bus id CUDA reports,
// and its figures are plausible; energy grows while the GPU works.
TEST(CudaTelemetry, RealNvmlReadsTheGpuCudaUses) {
  REQUIRE_GPU();
  std::string why;
  const auto gpus = cuda::visible_gpus(&why);
  ASSERT_FALSE(gpus.empty());
  EXPECT_EQ(gpus[0].pci_bus_id.size(), 16u) << gpus[0].pci_bus_id;  // "00000000:3B:00.0"
  GpuTelemetry t(gpus[0].pci_bus_id);
  ASSERT_TRUE(t.available()) << t.why_not();
  const std::size_t bytes = std::size_t{1} << 30;
  void* buf = cuda::device_allocate(bytes);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1500)) {
    for (int i = 0; i < 20; ++i) cuda::memset_zero(buf, bytes);
    cuda::synchronize();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto s = t.sample(elapsed);
  cuda::device_release(buf, bytes);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->util_pct && s->mem_used_mib && s->mem_total_mib && s->temp_c);
  EXPECT_GE(*s->util_pct, 0);
  EXPECT_LE(*s->util_pct, 100);
  const double cuda_mib = static_cast<double>(gpus[0].memory_bytes) / (1 << 20);
  EXPECT_NEAR(*s->mem_total_mib, cuda_mib, 0.05 * cuda_mib);  // the same GPU (NVML counts reserved memory too)
  EXPECT_GE(*s->mem_used_mib, 1024);                          // our 1 GiB at least
  EXPECT_GT(*s->temp_c, 0);
  EXPECT_LT(*s->temp_c, 120);
  ASSERT_TRUE(s->energy_j) << "energy from " << t.energy_source();
  EXPECT_GT(*s->energy_j, 0);
  std::printf("NVML: %s, util %.0f%%, memory %.0f of %.0f MiB, power %.0f W, %.0f C, %.1f J in %.2f s (%s)\n",
              gpus[0].pci_bus_id.c_str(), *s->util_pct, *s->mem_used_mib, *s->mem_total_mib, s->power_w.value_or(-1),
              *s->temp_c, *s->energy_j, elapsed, t.energy_source());
}

TEST(CudaStaging, MpiCommunicatorOnRealDeviceBuffers) {
  REQUIRE_GPU();
  auto dev = cuda::make_device_memory();
  MpiCommOptions o;
  o.name = "staged";
  o.memory = MemorySpace::device;
  o.cuda_aware = false;
  o.device = dev.get();
  MpiCommunicator comm(MPI_COMM_WORLD, o);
  const std::size_t n = 4097;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  comm.allreduce(d, d, n, DType::f32, ReduceOp::avg);
  std::vector<float> back(n);
  CHECK_CUDA(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, host);  // the average of identical inputs is the input
  EXPECT_GT(comm.staged_bytes(), 0u);
  dev->scale(d, n, DType::f32, 0.5);
  CHECK_CUDA(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back[4096], 2048.f);
  CHECK_CUDA(cudaFree(d));
}

TEST(Nccl, CollectivesMatchMpi) {
  REQUIRE_GPU();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto nccl = make_nccl_communicator(MPI_COMM_WORLD, NcclCommOptions{});
  MpiCommunicator mpi(MPI_COMM_WORLD, MpiCommOptions{});
  const std::size_t n = 10007;
  std::vector<float> host(n), ref(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i * 3 + static_cast<std::size_t>(rank)) % 17);
  mpi.allreduce(host.data(), ref.data(), n, DType::f32, ReduceOp::sum);
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  nccl->allreduce(d, d, n, DType::f32, ReduceOp::sum);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> got(n);
  CHECK_CUDA(cudaMemcpy(got.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, ref);
  nccl->broadcast(d, n, DType::f32, 0);
  nccl->barrier();
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(d));
}
