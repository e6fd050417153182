// The CPU backend's bf16 GEMM: oneDNN's matmul on bfloat16 operands with
// float32 accumulation and output (AVX-512 BF16 instructions where the CPU has
// them), and the switch to bf16 math on the CPU. [precision] dtype = bf16 turns
// it on when the CPU runs it natively (bf16_gemm_native()); the operands are rounded to bf16 (nearest
// even) on the way in, which for the layers' already-rounded operands changes
// nothing. Measured 4x OpenBLAS sgemm on one core of the development machine
// (docs/training.md "Mixed precision").
//
// Built when oneDNN is found; otherwise bf16_gemm_native() is false and
// bf16_gemm throws.
#pragma once

namespace hpctrain::cpu {

// oneDNN was found and picked a native bf16 implementation on this CPU (not a reference one).
bool bf16_gemm_native();
// oneDNN makes bf16 primitives here at all, native or reference (oneDNN 2.x: on AVX-512 CPUs only;
// an AVX2 CPU has none, and bf16_gemm throws there).
bool bf16_gemm_available();
// What oneDNN runs for bf16 matmul here ("brg:avx512_core_bf16"), or why there is none.
const char* bf16_gemm_implementation();
// c = alpha * op(a) op(b) + beta * c, row-major, as cblas_sgemm with CblasRowMajor; a and b are
// rounded to bf16.
void bf16_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc);

// Whether the CPU backend computes in bf16: cpu::gemm through bf16_gemm, and oneDNN convolutions on
// bf16 operands with float32 outputs (backend/cpu/onednn_conv.hpp). The trainer sets it from
// [precision] dtype when bf16_gemm_native(); off by default.
void set_bf16_math(bool on);
bool bf16_math_enabled();

}  // namespace hpctrain::cpu
