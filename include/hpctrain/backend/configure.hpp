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

// The CPUs this process may run on: its affinity mask (sched_getaffinity), which launchers set
// (Open MPI binds each rank to one core when there are at most 2 ranks, to a socket above);
// the machine's count where the mask cannot be read.
int cpus_allowed();

// For [kernels] threads = `threads` on a rank that may run on `allowed` CPUs: "" when they fit,
// else a line saying the threads take turns on fewer CPUs and how to launch so they do not.
std::string threads_beyond_cpus(int threads, int allowed);

}  // namespace hpctrain
