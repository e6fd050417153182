// Implementation of the synthetic dataset generator (data/synthetic.hpp).
#include "hpctrain/data/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hpctrain/data/permutation.hpp"

namespace hpctrain {

namespace {
// Uniform in [-1, 1) from a 64-bit hash.
double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * (2.0 / 9007199254740992.0) - 1.0; }

std::int64_t elems_of(const SyntheticSpec& s) {
  std::int64_t n = 1;
  for (auto d : s.sample_shape) n *= d;
  return n;
}
}  // namespace

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFF) == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

std::int32_t synthetic_label(const SyntheticSpec& spec, std::int64_t index) {
  return static_cast<std::int32_t>(splitmix64(spec.seed * 0x51ED27u ^ static_cast<std::uint64_t>(index)) %
                                   static_cast<std::uint64_t>(spec.num_classes));
}

void synthetic_sample(const SyntheticSpec& spec, std::int64_t index, void* out) {
  const std::int64_t n = elems_of(spec);
  const auto label = static_cast<std::uint64_t>(synthetic_label(spec, index));
  const std::uint64_t proto_key = splitmix64(spec.seed ^ (0x70726F746Full + label));
  const std::uint64_t noise_key =
      splitmix64(spec.seed ^ 0x6E6F697365ull) ^ static_cast<std::uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  for (std::int64_t k = 0; k < n; ++k) {
    const double proto = unit(splitmix64(proto_key + static_cast<std::uint64_t>(k)));
    const double v = std::clamp(
        proto * (1 - spec.noise) + spec.noise * unit(splitmix64(noise_key + static_cast<std::uint64_t>(k))), -1.0, 1.0);
    switch (spec.type) {
      case SampleType::u8:
        static_cast<std::uint8_t*>(out)[k] = static_cast<std::uint8_t>(std::lround((v + 1) * 127.5));
        break;
      case SampleType::f16: static_cast<std::uint16_t*>(out)[k] = float_to_half(static_cast<float>(v)); break;
      case SampleType::f32: static_cast<float*>(out)[k] = static_cast<float>(v); break;
      case SampleType::i32: static_cast<std::int32_t*>(out)[k] = static_cast<std::int32_t>(std::lround(v)); break;
      case SampleType::u16:
        static_cast<std::uint16_t*>(out)[k] = static_cast<std::uint16_t>(std::lround((v + 1) * 32767.5));
        break;
    }
  }
}

}  // namespace hpctrain
