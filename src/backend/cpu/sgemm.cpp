// The CPU backend's float32 GEMM library switch (backend/cpu/sgemm.hpp).
#include "hpctrain/backend/cpu/sgemm.hpp"

#include <cblas.h>
#if HPCTRAIN_HAVE_ONEDNN
#include <dnnl.h>
#endif

#include <cstring>

#include "hpctrain/core/error.hpp"

extern "C" char* openblas_get_corename(void);

namespace hpctrain::cpu {

namespace {
CpuGemm g_gemm = CpuGemm::openblas;  // the process-wide choice, set once by configure_backend
std::string g_why = "OpenBLAS";

// OpenBLAS kernels without AVX2/FMA: on a CPU that has AVX2, OpenBLAS fell back to them.
bool openblas_kernels_outdated() {
  static const char* old[] = {"Prescott", "Core2",      "Penryn",    "Dunnington", "Nehalem",     "Atom",
                              "Katmai",   "Coppermine", "Northwood", "Banias",     "Sandybridge", "Barcelona"};
  const char* core = openblas_get_corename();
  if (!core || !__builtin_cpu_supports("avx2")) return false;
  for (const char* o : old)
    if (std::strcmp(core, o) == 0) return true;
  return false;
}
}  // namespace

void set_cpu_gemm(CpuGemm g) {
#if HPCTRAIN_HAVE_ONEDNN
  constexpr bool onednn = true;
#else
  constexpr bool onednn = false;
#endif
  if (g == CpuGemm::onednn && !onednn)
    throw bad_input("[kernels] cpu_gemm = onednn, but hpctrain was built without oneDNN (libdnnl-dev)");
  const std::string core = openblas_get_corename() ? openblas_get_corename() : "?";
  if (g == CpuGemm::automatic) {
    // oneDNN stays opt-in for now: a heap corruption inside dnnl_sgemm was seen in 2 of about 10
    // MNIST MLP runs at 2 ranks stopped by SIGUSR1 (docs/performance.md); auto says when it would help.
    g = CpuGemm::openblas;
    g_why =
        "OpenBLAS sgemm (auto: " + core + " kernels" +
        (onednn && openblas_kernels_outdated() ? ", older than this CPU: [kernels] cpu_gemm = onednn may be faster)" : ")");
  } else {
    g_why = g == CpuGemm::onednn ? "oneDNN sgemm ([kernels] cpu_gemm)"
                                 : "OpenBLAS sgemm, " + core + " kernels ([kernels] cpu_gemm)";
  }
  g_gemm = g;
}

CpuGemm cpu_gemm() { return g_gemm; }
std::string cpu_gemm_description() { return g_why; }

void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
#if HPCTRAIN_HAVE_ONEDNN
  if (g_gemm == CpuGemm::onednn) {
    HPCT_CHECK(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success,
               "dnnl_sgemm failed");
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace hpctrain::cpu
