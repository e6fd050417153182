// Implementation of the synthetic dataset generator (data/synthetic.hpp).
#include "hpctrain/data/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hpctrain/core/half.hpp"
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
      case SampleType::f16: static_cast<std::uint16_t*>(out)[k] = half_bits(static_cast<float>(v)); break;
      case SampleType::f32: static_cast<float*>(out)[k] = static_cast<float>(v); break;
      case SampleType::i32: static_cast<std::int32_t*>(out)[k] = static_cast<std::int32_t>(std::lround(v)); break;
      case SampleType::u16:
        static_cast<std::uint16_t*>(out)[k] = static_cast<std::uint16_t>(std::lround((v + 1) * 32767.5));
        break;
    }
  }
}

}  // namespace hpctrain
