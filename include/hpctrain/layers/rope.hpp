// Rotary position embeddings' frequencies (the attention layer's rope=THETA and [model] rope_theta,
// rope_scaling, rope_dims): inv_freq[i] = theta^(-2i/R) for the R/2 pairs of a head's R rotated
// columns (R: the head's width, or fewer: rope_dims), or a scaling's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

struct LayerArgs;

// Llama 3's rope_scaling (rope_type "llama3", Hugging Face's _compute_llama3_parameters): pairs whose
// wavelength 2 pi / f is longer than context / low_freq_factor turn `factor` times slower, those
// shorter than context / high_freq_factor unchanged, those between by a smooth blend. factor 0: none.
// linear (rope_type "linear", _compute_linear_scaling_rope_parameters: position interpolation, Gemma
// 3 4B-27B's global layers): every pair `linear` times slower. 0: none.
// longrope (rope_type "longrope", _compute_longrope_parameters: Phi-3.5 mini's, Phi-4 mini's): pair
// i turns short_factor[i] times slower, or long_factor[i] times in a pass whose positions run past
// original_context (dynamic_rope_update's choice, made per forward), and the rotated columns of the
// queries and keys scale by `amplitude` (attention_factor). Empty: none.
// yarn (rope_type "yarn", _compute_yarn_parameters as transformers 5 and vLLM compute it): pairs that
// turn fewer than beta_slow times over original_context positions turn `yarn` times slower, those
// that turn more than beta_fast times keep their frequency, a linear ramp over the pair indices
// between (its ends rounded outward when `truncate`), and the rotated columns times `amplitude`. 0: none.
struct RopeScaling {
  double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
  std::int64_t original_context = 8192;
  double linear = 0;
  std::vector<double> short_factor, long_factor;
  double amplitude = 1;
  double yarn = 0, beta_fast = 32, beta_slow = 1;
  bool truncate = true;
};

// `positions`: the pass's last position + 1 (longrope's choice of factors).
std::vector<float> rope_inv_freq(double theta, std::int64_t rotated, const RopeScaling& scaling = {},
                                 std::int64_t positions = 0);

// The attention layer's rotary arguments: rope=THETA (0: none), rope_dims=R (the columns of each head
// that rotate, the first R; 0: all), rope_factor, rope_low, rope_high, rope_context (llama3's;
// rope_context also longrope's and yarn's original context), rope_linear=F, rope_short=F1:F2:..,
// rope_long=F1:F2:.. (longrope's), rope_yarn=F, rope_beta_fast, rope_beta_slow, rope_truncate (yarn's),
// rope_amp=M (longrope's and yarn's).
struct Rotary {
  double theta = 0;
  std::int64_t dims = 0;
  RopeScaling scaling;
  // The rotated columns of a head of `width`; bad_input naming `layer` when they are odd, more than
  // the head or longrope's factors are not one a pair.
  std::int64_t rotated(std::int64_t width, const std::string& layer) const;
  // The frequencies of a pass reaching `positions`, made once for each of longrope's two sets.
  const std::vector<float>& frequencies(std::int64_t width, std::int64_t positions);

 private:
  std::vector<float> freq_, long_freq_;
};
const std::vector<std::string>& rotary_arg_names();
Rotary rotary_args(const LayerArgs& a);

}  // namespace hpctrain
