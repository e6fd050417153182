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
#include "vector_clones.hpp"

namespace hpctrain::cpu {

namespace {
std::uint16_t bf16_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u)  // inf stays; NaN stays a (quiet) NaN
    return static_cast<std::uint16_t>((x >> 16) | ((x & 0x007fffffu) ? 0x40u : 0u));
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

std::uint16_t half_bits(float f) {  // IEEE half, round to nearest even, overflow to infinity
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (x >= 0x477ff000u) return sign | 0x7c00u;                                // >= 65520: inf
  if (x < 0x38800000u) {                                                      // below 2^-14: subnormal steps of 2^-24
    float a;
    std::memcpy(&a, &x, 4);
    return sign | static_cast<std::uint16_t>(std::nearbyint(a * 16777216.f));
  }
  return sign | static_cast<std::uint16_t>((x + 0xfffu + ((x >> 13) & 1u) - 0x38000000u) >> 13);
}

float half_value(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  const std::uint32_t x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

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
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint32_t bits = static_cast<std::uint32_t>(s[i]) << 16;
      std::memcpy(d + i, &bits, 4);
    }
    return;
  }
#if defined(__x86_64__)
  if (have_f16c()) return unpack_f16c(s, d, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) d[i] = half_value(s[i]);
}

}  // namespace hpctrain::cpu
