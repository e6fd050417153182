// Rotary position embeddings' frequencies (the attention layer's rope=THETA and [model] rope_theta,
// rope_scaling, rope_dims): inv_freq[i] = theta^(-2i/R) for the R/2 pairs of a head's R rotated
// columns (R: the head's width, or fewer: rope_dims), or a scaling's (config/rope_scaling.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/config/rope_scaling.hpp"

namespace hpctrain {

struct LayerArgs;

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
  // The arguments rotary_args reads back as these ("rope=THETA[, rope_dims=R][, the scaling's]");
  // empty when theta is 0.
  std::string args() const;

 private:
  std::vector<float> freq_, long_freq_;
};
const std::vector<std::string>& rotary_arg_names();
// "rope=0, rope_dims=0, ..., rope_truncate=1": the arguments with their defaults, for a usage line.
std::string rotary_usage();
Rotary rotary_args(const LayerArgs& a);

}  // namespace hpctrain
