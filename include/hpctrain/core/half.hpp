// The 16-bit float formats' bits from and to float32, the one copy every area uses (the CPU
// backend's packing, datasets, safetensors files): bfloat16 (the top half of a float's bits) and
// IEEE binary16 (fp16), rounded to nearest even, infinities and NaN kept (a NaN stays a quiet NaN),
// fp16's subnormals exact and its overflow (|x| >= 65520) an infinity.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hpctrain {

inline std::uint16_t bf16_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u)  // inf stays; NaN stays a (quiet) NaN
    return static_cast<std::uint16_t>((x >> 16) | ((x & 0x007fffffu) ? 0x40u : 0u));
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_value(std::uint16_t h) {
  const std::uint32_t x = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline std::uint16_t half_bits(float f) {
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

inline float half_value(std::uint16_t h) {
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

}  // namespace hpctrain
