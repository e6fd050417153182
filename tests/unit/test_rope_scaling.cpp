// The rotary scaling's spellings (config/rope_scaling.hpp): [model] rope_scaling's text and the
// attention layer's rope_* arguments (layers/rope.hpp Rotary::args, rotary_args) read back as
// written. Its frequencies: tests/gpu (CudaOps.SequenceModelOps, against the CPU), the layers'
// gradient checks (test_layers.cpp) and hf_weights' losses against the float64 reference.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/rope.hpp"

using namespace hpctrain;

// [model] rope_scaling's text reads back as rope_scaling_text writes it, every number to its last bit;
// the comparison holds a kind's numbers alone (linear's context is none of its) and tells a changed one.
TEST(RopeScaling, TextReadsBack) {
  for (const char* text : {"none", "llama3(32, 1, 4, 8192)", "linear(8)",
                           "longrope(32, 1.0900000000000001, 1 1.5 "
                           "0.10000000000000001, 1.25 4 9)",
                           "yarn(4, 32768, 1.1386294361119891, 32, 1, 1)", "yarn(40, 4096, 1.5, 16, 2, 0)"}) {
    const RopeScaling s = rope_scaling_of(text);
    EXPECT_EQ(rope_scaling_text(s), text);
    EXPECT_TRUE(rope_scaling_of(rope_scaling_text(s)) == s) << text;
  }
  EXPECT_EQ(rope_scaling_text(rope_scaling_of("yarn(4, 32768)")), "yarn(4, 32768, 1.1386294361119891, 32, 1, 1)");
  RopeScaling linear = rope_scaling_of("linear(8)"), other = linear;
  other.original_context = 4;
  EXPECT_TRUE(other == linear);  // (linear takes no context)
  RopeScaling llama3 = rope_scaling_of("llama3(32, 1, 4, 8192)");
  other = llama3, other.original_context = 4096;
  EXPECT_TRUE(other != llama3);
  other = llama3, other.high_freq_factor = 8;
  EXPECT_TRUE(other != llama3);
  EXPECT_TRUE(linear != llama3);
}

// The attention layer's rotary arguments read back as Rotary::args writes them, for every scaling
// with and without rope_dims (the numbers exact in float, as rope_amp and rope_yarn are read); a
// Rotary differing in a scaling's number reads back unlike the first (the check can fail).
TEST(RopeScaling, RotaryArgumentsReadBackAsWritten) {
  std::vector<Rotary> cases(6);
  cases[0].theta = 10000;
  cases[1].theta = 500000, cases[1].scaling.factor = 32, cases[1].scaling.original_context = 8192;
  cases[1].scaling.low_freq_factor = 2, cases[1].scaling.high_freq_factor = 8;
  cases[2].theta = 1000000, cases[2].scaling.linear = 8, cases[2].dims = 6;
  cases[3].theta = 10000, cases[3].dims = 6, cases[3].scaling.original_context = 32, cases[3].scaling.amplitude = 1.25;
  cases[3].scaling.short_factor = {1, 1.5, 0.1}, cases[3].scaling.long_factor = {1.25, 4, 9};
  cases[4].theta = 1000000, cases[4].scaling.yarn = 4, cases[4].scaling.original_context = 32768;
  cases[4].scaling.beta_fast = 16, cases[4].scaling.beta_slow = 2, cases[4].scaling.amplitude = 1.5;
  cases[5] = cases[4], cases[5].scaling.truncate = false;
  const auto read = [](const Rotary& r) { return rotary_args(parse_layers("attention(2, " + r.args() + ")").at(0)); };
  for (const Rotary& r : cases) {
    const Rotary back = read(r);
    EXPECT_EQ(back.theta, r.theta) << r.args();
    EXPECT_EQ(back.dims, r.dims) << r.args();
    EXPECT_TRUE(back.scaling == r.scaling) << r.args() << " read back as " << back.args();
  }
  EXPECT_EQ(Rotary().args(), "");  // (no rotation: no arguments)
  Rotary other = cases[1];
  other.scaling.high_freq_factor = 4;
  EXPECT_FALSE(read(other).scaling == cases[1].scaling);
  other = cases[3], other.scaling.long_factor[2] = 8;
  EXPECT_FALSE(read(other).scaling == cases[3].scaling);
  // The usage line's defaults are the ones rotary_args reads when an argument is left out.
  const Rotary usage = rotary_args(parse_layers("attention(2, " + rotary_usage() + ")").at(0));
  const RopeScaling& u = usage.scaling;
  const RopeScaling none;
  EXPECT_EQ(usage.theta, 0);
  EXPECT_EQ(usage.dims, 0);
  EXPECT_EQ(std::make_tuple(u.factor, u.low_freq_factor, u.high_freq_factor, u.original_context, u.linear, u.amplitude,
                            u.yarn, u.beta_fast, u.beta_slow, u.truncate),
            std::make_tuple(none.factor, none.low_freq_factor, none.high_freq_factor, none.original_context,
                            none.linear, none.amplitude, none.yarn, none.beta_fast, none.beta_slow, none.truncate));
  EXPECT_EQ(rotary_arg_names().size(), 14u);
}
