// A rotary embedding's scaling: the one value [model] rope_scaling's text, the attention layer's
// rope_* arguments (layers/rope.hpp) and a Hugging Face config.json's rope_scaling or
// rope_parameters (checkpoint/hf_rope.hpp) are read into and written from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

// At most one kind is set (layers/rope.cpp rope_inv_freq computes each):
// llama3 (rope_type "llama3", Hugging Face's _compute_llama3_parameters): pairs whose wavelength
// 2 pi / f is longer than context / low_freq_factor turn `factor` times slower, those shorter than
// context / high_freq_factor unchanged, those between by a smooth blend. factor 0: none.
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
// llama3's numbers and linear's factor are whole (the text and the layer arguments say them so).
struct RopeScaling {
  double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
  std::int64_t original_context = 8192;
  double linear = 0;
  std::vector<double> short_factor, long_factor;
  double amplitude = 1;
  double yarn = 0, beta_fast = 32, beta_slow = 1;
  bool truncate = true;

  bool scaled() const { return factor > 0 || linear > 0 || !short_factor.empty() || yarn > 0; }
  // The same scaling: the same kind with the same numbers (the context and llama3's bounds where
  // the kind uses them).
  bool operator==(const RopeScaling& o) const;
  bool operator!=(const RopeScaling& o) const { return !(*this == o); }
};

// [model] rope_scaling's text: "none", "llama3(FACTOR, LOW, HIGH, CONTEXT)" in whole numbers with
// HIGH > LOW >= 1, "linear(FACTOR)" (whole, >= 1), "longrope(CONTEXT, AMPLITUDE, S1 S2 .., L1 L2 ..)"
// (positive numbers, as many long factors as short) or "yarn(FACTOR, CONTEXT[, AMPLITUDE[,
// BETA_FAST, BETA_SLOW[, TRUNCATE]]])" (FACTOR >= 1; defaults 0.1 ln FACTOR + 1, 32, 1, 1).
// Anything else: bad_input naming the key and the forms.
RopeScaling rope_scaling_of(const std::string& text);
// The text rope_scaling_of reads back as `s`, every number to its last bit.
std::string rope_scaling_text(const RopeScaling& s);
// The numbers of `v` each to its last bit (%.17g) joined by `separator`: longrope's factors in that
// text (" ") and in the attention layer's rope_short and rope_long (":"), as layers strings recorded
// in checkpoints have them (a resume compares them as text).
std::string exact_numbers(const std::vector<double>& v, const char* separator);

}  // namespace hpctrain
