// The CPU backend's float32 GEMM, through one of two libraries ([kernels] cpu_gemm):
//  - openblas: cblas_sgemm, with the kernels OpenBLAS picks for the CPU it recognizes;
//  - onednn:   oneDNN's dnnl_sgemm, whose JIT kernels use what the CPU has (AVX-512 included)
//              whatever its name.
// auto takes OpenBLAS, and says so when its kernels are older than the CPU: OpenBLAS falls back to
// its Prescott (SSE3) kernels on a CPU whose model it does not recognize, as on the development
// VM ("Intel Xeon Processor" with AVX-512), where its sgemm ran at 30 GFLOP/s against oneDNN's
// 100-155 on the GPT's shapes (docs/performance.md). oneDNN is opt-in until a heap corruption seen
// inside dnnl_sgemm (2 of about 10 signal-stopped MNIST runs at 2 ranks) is understood.
#pragma once

#include <cstdint>
#include <string>

namespace hpctrain::cpu {

enum class CpuGemm { automatic, openblas, onednn };

// Chooses the library (automatic: the rule above); onednn without oneDNN compiled in is refused.
void set_cpu_gemm(CpuGemm g);
CpuGemm cpu_gemm();  // openblas or onednn: what sgemm() calls
// One line for the run header: the library, and for auto why.
std::string cpu_gemm_description();

// Row-major c = alpha op(a) op(b) + beta c with leading dimensions (strided views allowed).
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

}  // namespace hpctrain::cpu
