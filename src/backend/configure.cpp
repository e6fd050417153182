// The math libraries' process-wide settings (backend/configure.hpp).
#include "hpctrain/backend/configure.hpp"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/cpu/sgemm.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"

namespace hpctrain {

void configure_backend(const BackendSettings& s) {
  const bool gpu = s.device == Device::cuda;
  openblas_set_num_threads(s.threads);
  cpu::set_cpu_gemm(s.cpu_gemm);
  cpu::set_onednn_threads(s.threads);
  // bf16 on the CPU: real bf16 GEMMs where the CPU has them natively, else the float32 emulation.
  cpu::set_bf16_math(!gpu && s.precision == Precision::bf16 && cpu::bf16_gemm_native());
  if (gpu)  // bf16/fp16: the layers' operands are rounded to the format, so its tensor cores multiply exactly
    cuda::set_gemm_math(s.precision == Precision::bf16   ? cuda::GemmMath::bf16
                        : s.precision == Precision::fp16 ? cuda::GemmMath::fp16
                        : s.tf32                         ? cuda::GemmMath::tf32
                                                         : cuda::GemmMath::fp32);
}

std::string gemm_description(Device device) {
  if (device == Device::cuda) return "tensor-core GEMMs";
  if (cpu::bf16_math_enabled()) return std::string("bf16 GEMMs: oneDNN ") + cpu::bf16_gemm_implementation();
  return "float32: " + cpu::cpu_gemm_description();
}

int cpus_allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string threads_beyond_cpus(int threads, int allowed) {
  if (threads <= allowed) return "";
  const std::string t = std::to_string(threads);
  return "[kernels] threads = " + t + ", but this rank may run on " + std::to_string(allowed) + " CPU" +
         (allowed == 1 ? "" : "s") +
         " (its affinity mask: mpirun binds each rank to one core by default), so its threads take turns; "
         "launch with mpirun --bind-to none or --map-by slot:PE=" +
         t + " (Slurm: srun --cpus-per-task=" + t + ")";
}

}  // namespace hpctrain
