// Implementation of the keyed Feistel permutation (data/permutation.hpp).
#include "hpctrain/data/permutation.hpp"

namespace hpctrain {

Permutation::Permutation(std::uint64_t n, std::uint64_t key) : n_(n) {
  half_bits_ = 1;
  while (half_bits_ < 32 && (std::uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  for (unsigned r = 0; r < 6; ++r) keys_[r] = splitmix64(key + r);
}

std::uint64_t Permutation::encrypt(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (const std::uint64_t k : keys_) {
    const std::uint64_t f = splitmix64(k ^ (right * 0x9E3779B97F4A7C15ull)) & half_mask_;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t Permutation::operator()(std::uint64_t i) const {
  std::uint64_t x = encrypt(i);
  while (x >= n_) x = encrypt(x);  // cycle walking stays inside the cycle of i
  return x;
}

}  // namespace hpctrain
