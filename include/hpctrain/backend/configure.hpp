// The process-wide settings of the math libraries behind the backend, made in one call before
// any op runs: OpenBLAS's and oneDNN's thread counts, bf16 GEMMs on the CPU (oneDNN, where the
// CPU runs them natively), and cuBLAS's compute type on a GPU (tensor cores for bf16/fp16,
// TF32 when [precision] tf32 allows it).
#pragma once

#include <string>

#include "hpctrain/backend/cpu/sgemm.hpp"
#include "hpctrain/core/precision.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

struct BackendSettings {
  Device device = Device::cpu;
  int threads = 1;  // CPU math threads per rank ([kernels] threads)
  Precision precision = Precision::fp32;
  bool tf32 = false;                                // float32 GEMMs on a GPU may use TF32 ([precision] tf32)
  cpu::CpuGemm cpu_gemm = cpu::CpuGemm::automatic;  // [kernels] cpu_gemm
};

void configure_backend(const BackendSettings& s);

// How reduced-precision GEMMs run under the settings made, for the run summary.
std::string gemm_description(Device device);

}  // namespace hpctrain
