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
#include "hpctrain/config/rope_scaling.hpp"

namespace hpctrain::hf {

struct Rope {
  std::int64_t theta = -1;  // rope_theta; -1: not in the file
  RopeScaling scaling;      // (amplitude: longrope's and yarn's attention_factor, or derived)
  double partial = -1;      // a rope_parameters section's partial_rotary_factor; -1: not in it
  bool operator==(const Rope& o) const { return theta == o.theta && partial == o.partial && scaling == o.scaling; }
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
