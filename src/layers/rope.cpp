// Implementation of layers/rope.hpp.
#include "hpctrain/layers/rope.hpp"

#include <cmath>

namespace hpctrain {

std::vector<float> rope_inv_freq(double theta, std::int64_t head_dim, const RopeScaling& s) {
  const double pi = 3.14159265358979323846;
  std::vector<float> out(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    if (s.factor > 0) {
      const double context = static_cast<double>(s.original_context), wavelen = 2 * pi / f;
      if (wavelen > context / s.low_freq_factor) {
        f /= s.factor;
      } else if (wavelen >= context / s.high_freq_factor) {  // between the two: blended
        const double smooth = (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (s.linear > 0) f /= s.linear;
    out[i] = static_cast<float>(f);
  }
  return out;
}

}  // namespace hpctrain
