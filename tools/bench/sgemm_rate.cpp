// sgemm-rate: single-core OpenBLAS sgemm throughput (GFLOP/s), the yardstick
// the training benchmark compares the MLP's speed against (11.2 MFLOP per sample).
//   sgemm-rate [n=1024] [repeats=20]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024, repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  openblas_set_num_threads(1);
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size(), 0.f);
  double best = 1e30;
  for (int r = -2; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 0) best = std::min(best, s);
  }
  std::printf("%.1f\n", 2.0 * n * n * static_cast<double>(n) / best / 1e9);
  return 0;
}
