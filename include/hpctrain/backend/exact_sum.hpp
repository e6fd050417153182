// Sums whose result does not depend on the order of the additions ([run] reproducible = layout):
// each element's running sum is a fixed-point number in units of 2^-64, held in two int64 limbs,
// lo (kept in [0, 2^56) between additions) and hi (the rest, in units of 2^-8, signed). Adding a
// float32 is exact but for its bits below 2^-64, which are dropped (toward zero: the same for the
// same value whatever comes before or after), so any order of the same additions, on one rank or
// with the limbs summed over ranks as int64 (no carries for up to 128 ranks), gives the same limbs.
// Magnitudes of 2^24 and more (and values that are not finite) are refused: the caller flags an
// overflow. The CPU and CUDA backends share these functions (ops exact_accumulate and exact_round).
#pragma once

#include <cmath>
#include <cstdint>

#include "hpctrain/core/host_device.hpp"

namespace hpctrain::exact {

constexpr int kLoBits = 56;
constexpr std::int64_t kLoMask = (std::int64_t{1} << kLoBits) - 1;

// (lo, hi) with lo in [0, 2^56): lo's carries moved into hi (>> is arithmetic: floor division).
HPCT_HOST_DEVICE inline void normalize(std::int64_t& lo, std::int64_t& hi) {
  hi += lo >> kLoBits;
  lo &= kLoMask;
}

// Adds x; false (nothing added) when x is not finite or |x| >= 2^24. Branch-free arithmetic, all
// of it exact: h = trunc(x 2^8) (x 2^8 < 2^32 is a float whose integer part it holds exactly),
// r = x - h 2^-8 (|r| < 2^-8, exact), l = trunc(r 2^64) (|l| < 2^56; what is below 2^-64 dropped,
// toward zero as r has x's sign), so x = h 2^-8 + l 2^-64 + (the dropped bits).
HPCT_HOST_DEVICE inline bool add(float x, std::int64_t& lo, std::int64_t& hi) {
  if (!(fabsf(x) < 16777216.f)) return false;  // (NaN too)
  const float scaled = x * 256.f;
  const auto h = static_cast<std::int64_t>(scaled);
  const float r = x - static_cast<float>(h) * 0.00390625f;
  lo += static_cast<std::int64_t>(r * 18446744073709551616.f);  // 2^64
  hi += h;
  normalize(lo, hi);
  return true;
}

// The sum as a double (host: interval sums) and rounded to float32 (through that double): the same
// limbs always give the same value.
HPCT_HOST_DEVICE inline double value_double(std::int64_t lo, std::int64_t hi) {
  normalize(lo, hi);
  return static_cast<double>(hi) * 0x1p-8 + static_cast<double>(lo) * 0x1p-64;
}
HPCT_HOST_DEVICE inline float value(std::int64_t lo, std::int64_t hi) {
  return static_cast<float>(value_double(lo, hi));
}

// A double as limbs (a checkpoint's interval sums restored): deterministic, exact to within 2^-64.
inline void from_double(double v, std::int64_t& lo, std::int64_t& hi) {
  const double units = std::floor(v * 0x1p8);  // in 2^-8
  hi = static_cast<std::int64_t>(units);
  lo = static_cast<std::int64_t>(std::floor((v * 0x1p8 - units) * 0x1p56));
  normalize(lo, hi);
}

}  // namespace hpctrain::exact
