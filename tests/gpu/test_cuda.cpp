// CUDA-side tests. The CUDA error family runs everywhere (the libraries'
// error strings need no GPU); everything that touches a device skips, with
// the reason, where no GPU is visible: device discovery, staging through real
// pinned memory and the device scale kernel, and NCCL collectives against the
// MPI ones (one rank per GPU).
#include <gtest/gtest.h>

#include <vector>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/nccl_communicator.hpp"
#include "hpctrain/core/cuda_check.hpp"

using namespace hpctrain;

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
