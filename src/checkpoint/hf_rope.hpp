// The rotary embedding of a Llama-family config.json, in either of the layouts transformers
// saves: transformers 4 keeps rope_theta and rope_scaling (null: none) at the top level, and Gemma
// 3's local base as rope_local_base_freq; transformers 5 keeps them inside rope_parameters
// (modeling_rope_utils.py's RotaryEmbeddingConfigMixin), one section {rope_type, rope_theta,
// factor, ...} for every layer or one per layer kind, {"full_attention": {...},
// "sliding_attention": {...}} (Gemma 3's). Internal to checkpoint/hf_llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/checkpoint/hf_layouts.hpp"

namespace hpctrain::hf {

struct Rope {
  std::int64_t theta = -1;                                     // rope_theta; -1: not in the file
  std::int64_t linear = 0;                                     // linear's factor; 0: none
  std::int64_t factor = 0, low = 1, high = 4, context = 8192;  // llama3's; factor 0: none
  std::vector<double> short_factor, long_factor;               // longrope's (context too); empty: none
  double amplitude = 1;                                        // longrope's attention_factor
  double partial = -1;                             // a rope_parameters section's partial_rotary_factor; -1: not in it
  double yarn = 0, beta_fast = 32, beta_slow = 1;  // yarn's factor (0: none) and bounds (context, amplitude too)
  bool truncate = true;
  bool operator==(const Rope& o) const {
    return theta == o.theta && linear == o.linear && factor == o.factor && short_factor == o.short_factor &&
           long_factor == o.long_factor && amplitude == o.amplitude && partial == o.partial && yarn == o.yarn &&
           beta_fast == o.beta_fast && beta_slow == o.beta_slow && truncate == o.truncate &&
           ((factor == 0 && short_factor.empty() && yarn == 0) || context == o.context) &&
           (factor == 0 || (low == o.low && high == o.high));
  }
  bool scaled() const { return linear > 0 || factor > 0 || !short_factor.empty() || yarn > 0; }
};

struct RopeKeys {
  Rope global;  // every layer's, or the full_attention layers' where the file says each kind's
  Rope local;   // Gemma 3's sliding layers' (theta alone: they scale nothing; -1: not in the file)
};

// `c`'s rotations in either layout; `local_base`: the model rotates its sliding layers with a base of
// their own (Gemma 3), else a file that gives them another rotation is one line. A rope_type other
// than default, linear, llama3, longrope and yarn, a key of no such type, or rope_scaling and rope_parameters
// that disagree: one line naming `file` and the key.
RopeKeys rope_keys(const Json& c, const std::string& file, bool local_base);

}  // namespace hpctrain::hf
