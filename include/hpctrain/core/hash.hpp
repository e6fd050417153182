// splitmix64: the one integer hash behind every keyed random choice (the sampler's permutation
// keys, parameter initialization, dropout's counter-based draws, synthetic data). One definition
// for host and device code: CPU and GPU dropout masks are identical only because both call this.
#pragma once

#include <cstdint>

#include "hpctrain/core/host_device.hpp"

namespace hpctrain {

HPCT_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace hpctrain
