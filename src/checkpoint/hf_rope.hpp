// The rotary embedding of a Llama-family config.json, in either of the layouts transformers
// saves: transformers 4 keeps rope_theta and rope_scaling (null: none) at the top level, and Gemma
// 3's local base as rope_local_base_freq; transformers 5 keeps them inside rope_parameters
// (modeling_rope_utils.py's RotaryEmbeddingConfigMixin), one section {rope_type, rope_theta,
// factor, ...} for every layer or one per layer kind, {"full_attention": {...},
// "sliding_attention": {...}} (Gemma 3's). Internal to checkpoint/hf_llama.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "hpctrain/checkpoint/hf_layouts.hpp"

namespace hpctrain::hf {

struct Rope {
  std::int64_t theta = -1;                                     // rope_theta; -1: not in the file
  std::int64_t linear = 0;                                     // linear's factor; 0: none
  std::int64_t factor = 0, low = 1, high = 4, context = 8192;  // llama3's; factor 0: none
  bool operator==(const Rope& o) const {
    return theta == o.theta && linear == o.linear && factor == o.factor &&
           (factor == 0 || (low == o.low && high == o.high && context == o.context));
  }
  bool scaled() const { return linear > 0 || factor > 0; }
};

struct RopeKeys {
  Rope global;  // every layer's, or the full_attention layers' where the file says each kind's
  Rope local;   // Gemma 3's sliding layers' (theta alone: they scale nothing; -1: not in the file)
};

// `c`'s rotations in either layout; `local_base`: the model rotates its sliding layers with a base of
// their own (Gemma 3), else a file that gives them another rotation is one line. A rope_type other
// than default, linear and llama3, a key of no such type, RoPE on part of a head, or rope_scaling and
// rope_parameters that disagree: one line naming `file` and the key.
RopeKeys rope_keys(const Json& c, const std::string& file, bool local_base);

}  // namespace hpctrain::hf
