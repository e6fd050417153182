// A keyed pseudo-random permutation of [0, n) with O(1) memory and random
// access: perm(i) for any i without materializing the whole permutation.
//
// Definition (the documented sample-order contract):
//   - the domain is widened to [0, 4^b), the smallest power of 4 >= n;
//   - x in [0, 4^b) is split into halves L, R of b bits; 6 Feistel rounds
//       L, R = R, L xor (F(key_r, R) mod 2^b),
//     with F(k, v) = splitmix64(k xor (v * 0x9E3779B97F4A7C15)) and
//     key_r = splitmix64(key + r);
//   - values >= n are encrypted again until they fall in [0, n) (cycle walking).
// The key of epoch e is splitmix64(splitmix64(seed) xor e) (data/sampler.cpp).
#pragma once

#include <cstdint>

#include "hpctrain/core/hash.hpp"  // splitmix64

namespace hpctrain {

class Permutation {
 public:
  Permutation(std::uint64_t n, std::uint64_t key);
  std::uint64_t size() const { return n_; }
  std::uint64_t operator()(std::uint64_t i) const;  // requires i < size()

 private:
  std::uint64_t encrypt(std::uint64_t x) const;
  std::uint64_t n_;
  unsigned half_bits_ = 0;
  std::uint64_t half_mask_ = 0;
  std::uint64_t keys_[6] = {};
};

}  // namespace hpctrain
