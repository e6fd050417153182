// --generate's draw (train/token_draw.hpp): greedy at temperature 0, and over many keys the
// frequencies of softmax(logits / temperature) restricted to the top k, then to the nucleus of
// top p, against those computed here in double (4 binomial standard deviations of 40,000 draws);
// on a vocabulary of 50,257 the nucleus is the one a full sort finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/train/token_draw.hpp"

using namespace hpctrain;

namespace {
constexpr int kDraws = 40000;

SamplingOptions options(double temperature, std::int64_t top_k, double top_p) {
  SamplingOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  return o;
}

std::vector<double> frequencies(const std::vector<float>& logits, const SamplingOptions& o) {
  std::vector<double> f(logits.size(), 0.0);
  for (int key = 0; key < kDraws; ++key) f[draw_token(logits, o, 0x5eed0000u + static_cast<std::uint64_t>(key))] += 1;
  for (double& x : f) x /= kDraws;
  return f;
}

// softmax(logits / t) over `kept` (ids), 0 elsewhere.
std::vector<double> expected(const std::vector<float>& logits, double t, const std::vector<std::size_t>& kept) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0;
  for (std::size_t id : kept) sum += p[id] = std::exp(logits[id] / t);
  for (double& x : p) x /= sum;
  return p;
}

void expect_frequencies(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double sd = std::sqrt(std::max(want[i] * (1 - want[i]), 1e-12) / kDraws);
    if (want[i] == 0)
      EXPECT_EQ(got[i], 0.0) << what << ": token " << i << " is outside the kept ones";
    else
      EXPECT_NEAR(got[i], want[i], 4 * sd) << what << ": token " << i;
  }
}

const std::vector<float> kLogits{1.0f, 2.5f, 0.2f, 2.0f, -1.0f, 1.5f};  // likeliest: 1, 3, 5, 0, 2, 4
}  // namespace

TEST(TokenDraw, TemperatureZeroIsTheLikeliestTheLowestIdAmongEquals) {
  EXPECT_EQ(draw_token(kLogits, options(0, 0, 1), 1), 1u);
  EXPECT_EQ(draw_token({0.f, 3.f, 1.f, 3.f}, options(0, 0, 1), 7), 1u);
  EXPECT_EQ(draw_token(kLogits, options(1, 1, 1), 99), 1u);  // (--top-k 1: the same)
}

TEST(TokenDraw, WholeVocabularyAtTwoTemperatures) {
  const std::vector<std::size_t> all{0, 1, 2, 3, 4, 5};
  expect_frequencies(frequencies(kLogits, options(1, 0, 1)), expected(kLogits, 1, all), "temperature 1");
  expect_frequencies(frequencies(kLogits, options(2.5, 0, 1)), expected(kLogits, 2.5, all), "temperature 2.5");
}

TEST(TokenDraw, TopKThenTopP) {
  expect_frequencies(frequencies(kLogits, options(1, 3, 1)), expected(kLogits, 1, {1, 3, 5}), "top-k 3");
  // softmax: token 1 0.41, 3 0.25, 5 0.15, 0 0.09, ...: top-p 0.6 keeps 1 and 3 (0.66)
  const std::vector<double> p = expected(kLogits, 1, {0, 1, 2, 3, 4, 5});
  ASSERT_LT(p[1], 0.6);
  ASSERT_GE(p[1] + p[3], 0.6);
  expect_frequencies(frequencies(kLogits, options(1, 0, 0.6)), expected(kLogits, 1, {1, 3}), "top-p 0.6");
  // top-k 2 then top-p 0.5 of those two: token 1 holds 0.62 of them alone
  expect_frequencies(frequencies(kLogits, options(1, 2, 0.5)), expected(kLogits, 1, {1}), "top-k 2, top-p 0.5");
}

// min_p (Hugging Face's MinPLogitsWarper, after top-k and top-p): only the tokens at least min_p
// times as likely as the likeliest, at the temperature. kLogits relative to token 1's at 1: token 3
// 0.61, 5 0.37, 0 0.22, 2 0.10, 4 0.03; at 2: 3 0.78, 5 0.61, 0 0.47, 2 0.32, 4 0.17.
TEST(TokenDraw, MinPAfterTopKAndTopP) {
  auto with_min_p = [](SamplingOptions o, double m) {
    o.min_p = m;
    return o;
  };
  expect_frequencies(frequencies(kLogits, with_min_p(options(1, 0, 1), 0.2)), expected(kLogits, 1, {0, 1, 3, 5}),
                     "min-p 0.2");
  expect_frequencies(frequencies(kLogits, with_min_p(options(2, 0, 1), 0.3)), expected(kLogits, 2, {0, 1, 2, 3, 5}),
                     "temperature 2, min-p 0.3");
  expect_frequencies(frequencies(kLogits, with_min_p(options(1, 3, 1), 0.2)), expected(kLogits, 1, {1, 3, 5}),
                     "top-k 3, min-p 0.2");
  expect_frequencies(frequencies(kLogits, with_min_p(options(1, 0, 0.9), 0.5)), expected(kLogits, 1, {1, 3}),
                     "top-p 0.9, min-p 0.5");
  expect_frequencies(frequencies(kLogits, with_min_p(options(1, 0, 1), 1)), expected(kLogits, 1, {1}), "min-p 1");
  EXPECT_THROW(check_sampling_options(with_min_p(options(1, 0, 1), 1.5)), Error);
  std::string applied;
  SamplingOptions o = options(1, 0, 1);
  o.min_p_given = false;
  EXPECT_DOUBLE_EQ(sampling_defaults(o, R"({"min_p": 0.05})", "g.json", applied).min_p, 0.05);
  EXPECT_EQ(applied, "min_p 0.05");
  EXPECT_THROW(sampling_defaults(o, R"({"min_p": 2})", "g.json", applied), Error);
}

// GPT-2's vocabulary width: the nucleus (more than the first 256 sorted: the draw sorts more) is
// the one a full sort finds, and nothing outside it is drawn.
TEST(TokenDraw, NucleusOfAWideVocabularyAsAFullSortFindsIt) {
  std::mt19937 rng(5);
  std::normal_distribution<float> z(0.f, 1.f);
  std::vector<float> logits(50257);
  for (float& x : logits) x = z(rng);
  std::vector<std::size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  double total = 0;
  for (float x : logits) total += std::exp(x);
  std::vector<std::size_t> nucleus;
  for (double mass = 0; mass < 0.3 * total;) {
    nucleus.push_back(order[nucleus.size()]);
    mass += std::exp(logits[nucleus.back()]);
  }
  ASSERT_GT(nucleus.size(), 256u);
  std::vector<bool> inside(logits.size(), false);
  for (std::size_t id : nucleus) inside[id] = true;
  for (int key = 0; key < 200; ++key) {
    const std::uint32_t id = draw_token(logits, options(1, 0, 0.3), static_cast<std::uint64_t>(key));
    ASSERT_TRUE(inside[id]) << "token " << id << " outside the nucleus of " << nucleus.size();
  }
}

TEST(TokenDraw, OptionsOutOfRangeAreOneLine) {
  EXPECT_THROW(check_sampling_options(options(-0.5, 0, 1)), Error);
  EXPECT_THROW(check_sampling_options(options(1, -1, 1)), Error);
  EXPECT_THROW(check_sampling_options(options(1, 0, 0)), Error);
  EXPECT_THROW(check_sampling_options(options(1, 0, 1.5)), Error);
  EXPECT_NO_THROW(check_sampling_options(options(0, 0, 1)));
}

// A checkpoint's generation_config.json supplies the sampling options the command line left out
// (Hugging Face's generate() defaults): temperature, top_k and top_p where not given, greedy for
// do_sample false, eos_token_id's stop tokens, nothing for a file without them; a value of the
// wrong type or range is refused.
TEST(TokenDraw, GenerationConfigFillsTheOptionsNotGiven) {
  SamplingOptions o;
  o.temperature_given = o.top_k_given = o.top_p_given = false;
  std::string applied;
  SamplingOptions got = sampling_defaults(o, R"({"temperature": 0.6, "top_p": 0.9, "top_k": 20})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.temperature, 0.6);
  EXPECT_DOUBLE_EQ(got.top_p, 0.9);
  EXPECT_EQ(got.top_k, 20);
  EXPECT_EQ(applied, "temperature 0.6, top_k 20, top_p 0.9");
  o.temperature_given = true;
  o.temperature = 1.5;
  got = sampling_defaults(o, R"({"temperature": 0.6, "do_sample": true})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.temperature, 1.5);  // (given: kept)
  EXPECT_EQ(applied, "");
  o.temperature_given = false;
  o.temperature = 1.0;
  got = sampling_defaults(o, R"({"do_sample": false, "temperature": 0.6})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.temperature, 0.0);
  got = sampling_defaults(o, R"({"bos_token_id": 1})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.temperature, 1.0);
  EXPECT_EQ(applied, "");
  EXPECT_THROW(sampling_defaults(o, R"({"top_p": 2})", "g.json", applied), Error);
  EXPECT_THROW(sampling_defaults(o, R"({"temperature": "hot"})", "g.json", applied), Error);
  EXPECT_THROW(sampling_defaults(o, "{", "g.json", applied), Error);
  // eos_token_id, one id or a list, ends a sample unless ignore_eos.
  EXPECT_EQ(sampling_defaults(o, R"({"eos_token_id": 7})", "g.json", applied).stop_ids, std::vector<std::uint32_t>{7});
  EXPECT_EQ(applied, "eos_token_id 7");
  EXPECT_EQ(sampling_defaults(o, R"({"eos_token_id": [1, 2]})", "g.json", applied).stop_ids,
            (std::vector<std::uint32_t>{1, 2}));
  o.ignore_eos = true;
  EXPECT_TRUE(sampling_defaults(o, R"({"eos_token_id": [1, 2]})", "g.json", applied).stop_ids.empty());
  o.ignore_eos = false;
  EXPECT_THROW(sampling_defaults(o, R"({"eos_token_id": "</s>"})", "g.json", applied), Error);
}

// Hugging Face's repetition penalty: each seen token's logit once, divided when positive,
// multiplied when not (0 stays 0); ids past the logits ignored; 1 changes nothing.
TEST(TokenDraw, RepetitionPenaltyAsHuggingFaceApplies) {
  std::vector<float> logits = {2.f, -1.f, 0.f, 3.f, 0.5f};
  penalize_repeats(logits, {0, 1, 0, 2, 9, 1}, 2.0);
  EXPECT_EQ(logits, (std::vector<float>{1.f, -2.f, 0.f, 3.f, 0.5f}));
  // Greedy: 2.0 against 1.9, the first seen: the second wins at 1.5 (2 / 1.5 = 1.33), not at 1.
  SamplingOptions o;
  o.temperature = 0;
  for (const double penalty : {1.0, 1.5}) {
    std::vector<float> l = {2.f, 1.9f, -1.f};
    penalize_repeats(l, {0}, penalty);
    EXPECT_EQ(draw_token(l, o, 1), penalty == 1.0 ? 0u : 1u) << penalty;
  }
}

// generation_config.json's repetition_penalty applies greedy or sampled (a flag given wins), a
// value <= 0 is one line naming the file, and settings hpctrain does not apply are listed.
TEST(TokenDraw, GenerationConfigRepetitionPenaltyAndWhatIsNotApplied) {
  SamplingOptions o;
  o.repetition_penalty_given = false;
  o.temperature_given = false;
  std::string applied;
  SamplingOptions got = sampling_defaults(
      o, R"({"do_sample": false, "repetition_penalty": 1.3, "num_beams": 4, "min_p": 0})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.repetition_penalty, 1.3);
  EXPECT_DOUBLE_EQ(got.temperature, 0.0);
  EXPECT_EQ(applied, "repetition_penalty 1.3, do_sample false (greedy); not applied: num_beams 4");
  got =
      sampling_defaults(o, R"({"repetition_penalty": 1.1, "min_new_tokens": 3, "typical_p": 0.9})", "g.json", applied);
  EXPECT_DOUBLE_EQ(got.repetition_penalty, 1.1);
  EXPECT_EQ(applied, "repetition_penalty 1.1; not applied: typical_p 0.9, min_new_tokens 3");
  o.repetition_penalty_given = true;
  EXPECT_DOUBLE_EQ(sampling_defaults(o, R"({"repetition_penalty": 1.3})", "g.json", applied).repetition_penalty, 1.0);
  o.repetition_penalty_given = false;
  try {
    sampling_defaults(o, R"({"repetition_penalty": 0})", "g.json", applied);
    ADD_FAILURE() << "no error for repetition_penalty 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("g.json: \"repetition_penalty\" = 0 is not > 0"), std::string::npos)
        << e.what();
  }
  o.repetition_penalty = 0;
  EXPECT_THROW(check_sampling_options(o), Error);
}

// Hugging Face's no_repeat_ngram_size: the tokens that follow the sequence's last n - 1 tokens
// somewhere before are banned (-inf); n = 1 bans every token in it; a sequence shorter than
// n - 1 bans nothing. Greedy then takes the next likeliest.
TEST(TokenDraw, NoRepeatNgramBansWhatWouldRepeat) {
  const std::vector<std::uint32_t> seq = {1, 2, 3, 1, 2};
  const auto banned = [&](std::int64_t n, const std::vector<std::uint32_t>& s) {
    std::vector<float> l(6, 0.f);
    ban_repeated_ngrams(l, s, n);
    std::vector<std::uint32_t> out;
    for (std::uint32_t id = 0; id < l.size(); ++id)
      if (std::isinf(l[id])) out.push_back(id);
    return out;
  };
  EXPECT_EQ(banned(3, seq), (std::vector<std::uint32_t>{3}));  // "1 2" was followed by 3
  EXPECT_EQ(banned(2, seq), (std::vector<std::uint32_t>{3}));  // "2" was followed by 3
  EXPECT_EQ(banned(1, seq), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(banned(4, seq), (std::vector<std::uint32_t>{}));  // "3 1 2" never followed by anything
  EXPECT_EQ(banned(7, seq), (std::vector<std::uint32_t>{}));  // shorter than the n-gram
  EXPECT_EQ(banned(2, {5, 5, 5}), (std::vector<std::uint32_t>{5}));
  std::vector<float> l = {0.f, 1.f, 0.5f, 3.f};
  ban_repeated_ngrams(l, seq, 3);
  EXPECT_EQ(draw_token(l, options(0, 0, 1), 1), 1u);  // (3, the likeliest, banned)
  SamplingOptions o = options(1, 0, 1);
  o.no_repeat_ngram_given = false;
  std::string applied;
  EXPECT_EQ(sampling_defaults(o, R"({"no_repeat_ngram_size": 3})", "g.json", applied).no_repeat_ngram, 3);
  EXPECT_EQ(applied, "no_repeat_ngram_size 3");
  o.no_repeat_ngram = -1;
  EXPECT_THROW(check_sampling_options(o), Error);
}
