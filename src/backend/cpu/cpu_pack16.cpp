// 16-bit storage of f32 values on the CPU (backend/op_list.inc: pack_16bit, unpack_16bit): bf16 as
// the top half of the float's bits, rounded to nearest even; fp16 by the F16C instructions where
// the CPU has them, else by the same rounding in portable code.
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/core/half.hpp"
#include "vector_clones.hpp"

namespace hpctrain::cpu {

namespace {
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void pack_f16c(const float* s, std::uint16_t* d, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) d[i] = half_bits(s[i]);
}
__attribute__((target("avx,f16c"))) void unpack_f16c(const std::uint16_t* s, float* d, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = half_value(s[i]);
}
#endif

}  // namespace

void pack_16bit(const Tensor& x, Tensor& packed) {
  backend::check_packed(x, packed, "pack_16bit");
  const float* s = x.data();
  auto* d = static_cast<std::uint16_t*>(packed.raw());
  const std::int64_t n = x.numel();
  if (packed.dtype() == DType::bf16) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
    return;
  }
#if defined(__x86_64__)
  if (have_f16c()) return pack_f16c(s, d, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) d[i] = half_bits(s[i]);
}

void unpack_16bit(const Tensor& packed, Tensor& x) {
  backend::check_packed(x, packed, "unpack_16bit");
  const auto* s = static_cast<const std::uint16_t*>(packed.raw());
  float* d = x.data();
  const std::int64_t n = x.numel();
  if (packed.dtype() == DType::bf16) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = bf16_value(s[i]);
    return;
  }
#if defined(__x86_64__)
  if (have_f16c()) return unpack_f16c(s, d, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) d[i] = half_value(s[i]);
}

}  // namespace hpctrain::cpu
