// The CUDA backend's per-process state, for CUDA sources only (includes the
// libraries' headers): the compute stream every kernel and library call runs
// on, the cuBLAS and cuDNN handles bound to it, the precision cuBLAS may
// multiply float32 GEMM operands in, and a grow-only scratch area for operations that need
// temporary device memory (reductions, staged host arguments).
//
// One context per process, made on first use for the device current then
// (the runtime sets the device first), like the CUDA runtime's own current
// device. The compute stream is a blocking stream, so plain cudaMemcpy calls
// (the MPI communicator's staging) stay ordered after its work.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hpctrain/backend/cuda/cublas_api.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/cuda_check.hpp"

namespace hpctrain::cuda {

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  cudnnHandle_t dnn();  // made on first use (cuDNN loads its kernels lazily)
  // The compute type of float32 GEMMs (device_api.hpp set_gemm_math).
  cublasComputeType_t gemm_compute() const { return gemm_compute_; }
  GemmMath gemm_math() const { return gemm_math_; }
  void set_gemm_math(GemmMath m, cublasComputeType_t t) { gemm_math_ = m, gemm_compute_ = t; }
  // At least `bytes` of device scratch, valid until the next call (the stream orders its users).
  // Growing it frees the old area: refused while the stream is being recorded, and counted in
  // scratch_generation() so graphs holding the old address are recorded again.
  void* scratch(std::size_t bytes);
  std::uint64_t scratch_generation() const { return scratch_generation_; }
  bool capturing() const;  // the compute stream is being recorded as a graph
  int sm_count() const { return sms_; }
  // A second stream for checkpoint downloads (made on first use), ordered after the compute
  // stream by copy_ready(), an event recorded there.
  cudaStream_t copy_stream();
  cudaEvent_t copy_ready() const { return copy_ready_; }

 private:
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t copy_ready_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  static constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;
  void* blas_workspace_ = nullptr;
  cublasComputeType_t gemm_compute_ = CUBLAS_COMPUTE_32F;
  GemmMath gemm_math_ = GemmMath::fp32;
  void* scratch_ = nullptr;
  std::uint64_t scratch_generation_ = 0;
  std::size_t scratch_bytes_ = 0;
  int sms_ = 1;
};

Context& context();

// Launch geometry for a grid-stride loop over n elements.
inline unsigned blocks_for(std::size_t n, unsigned threads = 256) {
  const std::size_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);
}

}  // namespace hpctrain::cuda
