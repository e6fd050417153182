// sgemm-rate: single-core GEMM throughput (GFLOP/s): OpenBLAS sgemm, the
// yardstick the training benchmark compares the MLP's speed against (11.2
// MFLOP per sample), or with --bf16 the CPU's bf16 GEMM (oneDNN, operands
// rounded to bf16 per call, float32 accumulation: backend/cpu/onednn_matmul.hpp), or with
// --onednn oneDNN's float32 sgemm ([kernels] cpu_gemm = onednn: backend/cpu/sgemm.hpp).
//   sgemm-rate [n=1024] [repeats=20] [--bf16 | --onednn]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/cpu/sgemm.hpp"

int main(int argc, char** argv) {
  bool bf16 = false, onednn = false;
  std::vector<int> nums;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bf16") == 0)
      bf16 = true;
    else if (std::strcmp(argv[i], "--onednn") == 0)
      onednn = true;
    else
      nums.push_back(std::atoi(argv[i]));
  }
  const int n = nums.size() > 0 ? nums[0] : 1024, repeats = nums.size() > 1 ? nums[1] : 20;
  openblas_set_num_threads(1);
  hpctrain::cpu::set_onednn_threads(1);
  if (onednn) hpctrain::cpu::set_cpu_gemm(hpctrain::cpu::CpuGemm::onednn);
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size(), 0.f);
  double best = 1e30;
  for (int r = -2; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (bf16)
      hpctrain::cpu::bf16_gemm(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    else if (onednn)
      hpctrain::cpu::sgemm(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 0) best = std::min(best, s);
  }
  std::printf("%.1f\n", 2.0 * n * n * static_cast<double>(n) / best / 1e9);
  return 0;
}
