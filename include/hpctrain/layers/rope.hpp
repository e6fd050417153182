// Rotary position embeddings' frequencies (the attention layer's rope=THETA and [model] rope_theta,
// rope_scaling): inv_freq[i] = theta^(-2i/D) for the D/2 pairs of a head, or Llama 3's scaled set.
#pragma once

#include <cstdint>
#include <vector>

namespace hpctrain {

// Llama 3's rope_scaling (rope_type "llama3", Hugging Face's _compute_llama3_parameters): pairs whose
// wavelength 2 pi / f is longer than context / low_freq_factor turn `factor` times slower, those
// shorter than context / high_freq_factor unchanged, those between by a smooth blend. factor 0: none.
// linear (rope_type "linear", _compute_linear_scaling_rope_parameters: position interpolation, Gemma
// 3 4B-27B's global layers): every pair `linear` times slower. 0: none.
struct RopeScaling {
  double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
  std::int64_t original_context = 8192;
  double linear = 0;
};

std::vector<float> rope_inv_freq(double theta, std::int64_t head_dim, const RopeScaling& scaling = {});

}  // namespace hpctrain
