// Names of the number formats (core/precision.hpp).
#include "hpctrain/core/precision.hpp"

#include <cmath>

namespace hpctrain {

const char* to_string(Precision v) {
  switch (v) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

bool exact_in(float v, Precision p) {
  if (p == Precision::fp32 || v == 0.f) return true;
  if (!std::isfinite(v)) return true;
  int e;
  const float m = std::frexp(std::fabs(v), &e);                                  // v = m 2^e, m in [0.5, 1)
  const int bits = p == Precision::bf16 ? 8 : 11;                                // significant bits
  if (p == Precision::fp16 && (e > 16 || e < -23)) return false;                 // past 65504, or below the subnormals
  const int usable = p == Precision::fp16 && e < -13 ? bits - (-13 - e) : bits;  // fp16 subnormals have fewer
  const float scaled = std::ldexp(m, usable);
  return scaled == std::floor(scaled);
}

}  // namespace hpctrain
