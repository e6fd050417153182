// The next token from one position's logits (train/token_draw.hpp).
#include "hpctrain/train/token_draw.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/core/json_depth.hpp"

namespace hpctrain {

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature >= 0)) throw bad_input("--temperature must be >= 0 (0: the likeliest token)");
  if (o.tokens < 0 || o.top_k < 0) throw bad_input("--tokens and --top-k must be >= 0");
  if (!(o.top_p > 0 && o.top_p <= 1)) throw bad_input("--top-p must be in (0, 1]");
  if (o.samples < 1) throw bad_input("--samples must be >= 1");
  if (!(o.repetition_penalty > 0)) throw bad_input("--repetition-penalty must be > 0 (1: none)");
  if (!(o.min_p >= 0 && o.min_p <= 1)) throw bad_input("--min-p must be in [0, 1] (0: none)");
  if (o.no_repeat_ngram < 0) throw bad_input("--no-repeat-ngram must be >= 0 (0: none)");
  if (o.prefill_chunk < 0) throw bad_input("--prefill-chunk must be >= 0 (0: the whole prompt in one forward)");
  if (o.interactive && o.samples > 1)
    throw bad_input("--interactive continues one conversation with each reply: --samples must be 1");
}

void penalize_repeats(std::vector<float>& logits, const std::vector<std::uint32_t>& seen, double penalty) {
  const auto p = static_cast<float>(penalty);
  std::vector<char> done(logits.size(), 0);
  for (const std::uint32_t id : seen) {
    if (id >= logits.size() || done[id]) continue;
    done[id] = 1;
    float& l = logits[id];
    l = l < 0 ? l * p : l / p;
  }
}

void ban_repeated_ngrams(std::vector<float>& logits, const std::vector<std::uint32_t>& seq, std::int64_t n) {
  const auto len = static_cast<std::int64_t>(seq.size());
  if (n < 1 || len + 1 < n) return;
  const auto at = [&](std::int64_t i) { return seq[static_cast<std::size_t>(i)]; };
  for (std::int64_t i = 0; i + n - 1 < len; ++i) {  // each n-gram seq[i .. i + n - 1]
    bool same = true;
    for (std::int64_t j = 0; j + 1 < n && same; ++j) same = at(i + j) == at(len - n + 1 + j);
    if (same && at(i + n - 1) < logits.size()) logits[at(i + n - 1)] = -INFINITY;
  }
}

namespace {
// The generation_config.json settings hpctrain does not apply, with the values that would change
// Hugging Face's draw: "num_beams 4, typical_p 0.9" ("" when none).
std::string not_applied(const nlohmann::json& j) {
  std::string out;
  const auto note = [&](const char* key, bool changes) {
    if (j.contains(key) && !j[key].is_null() && changes)
      out += std::string(out.empty() ? "" : ", ") + key + " " + j[key].dump();
  };
  const auto number = [&](const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  note("num_beams", number("num_beams") > 1);
  note("typical_p", j.contains("typical_p") && j["typical_p"].is_number() && number("typical_p") < 1);
  note("min_new_tokens", number("min_new_tokens") > 0);
  note("suppress_tokens",
       j.contains("suppress_tokens") && j["suppress_tokens"].is_array() && !j["suppress_tokens"].empty());
  note("bad_words_ids", j.contains("bad_words_ids") && j["bad_words_ids"].is_array() && !j["bad_words_ids"].empty());
  return out;
}
}  // namespace

SamplingOptions sampling_defaults(SamplingOptions o, const std::string& json, const std::string& origin,
                                  std::string& applied) {
  nlohmann::json j;
  check_json_depth(json, origin);
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(origin + ": not JSON (" + e.what() + ")");
  }
  applied.clear();
  if (!j.is_object()) return o;
  auto number = [&](const char* key, double& to, bool given, double lo, double hi = HUGE_VAL) {
    if (given || !j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number() || !(j[key].get<double>() >= lo && j[key].get<double>() <= hi))
      throw bad_input(origin + ": \"" + key + "\" = " + j[key].dump() + " is not a number in [" + std::to_string(lo) +
                      (hi == HUGE_VAL ? ", inf)" : ", " + std::to_string(hi) + "]"));
    to = j[key].get<double>();
    applied += std::string(applied.empty() ? "" : ", ") + key + " " + j[key].dump();
  };
  if (!o.ignore_eos && j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const nlohmann::json& e = j["eos_token_id"];
    for (const auto& id : e.is_array() ? e : nlohmann::json::array({e})) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
        throw bad_input(origin + ": \"eos_token_id\" = " + e.dump() + " is not a token id or a list of them");
      o.stop_ids.push_back(id.get<std::uint32_t>());
    }
    applied = "eos_token_id " + e.dump();
  }
  number("repetition_penalty", o.repetition_penalty, o.repetition_penalty_given, 0);  // (greedy too)
  double ngram = static_cast<double>(o.no_repeat_ngram);
  number("no_repeat_ngram_size", ngram, o.no_repeat_ngram_given, 0, 1e6);
  o.no_repeat_ngram = static_cast<std::int64_t>(ngram);
  if (!o.repetition_penalty_given && !(o.repetition_penalty > 0))
    throw bad_input(origin + ": \"repetition_penalty\" = " + j["repetition_penalty"].dump() + " is not > 0");
  const std::string skipped = not_applied(j);
  if (j.contains("do_sample") && j["do_sample"].is_boolean() && !j["do_sample"].get<bool>()) {
    if (!o.temperature_given)
      o.temperature = 0, applied += std::string(applied.empty() ? "" : ", ") + "do_sample false (greedy)";
  } else {
    number("temperature", o.temperature, o.temperature_given, 0);
    double k = static_cast<double>(o.top_k);
    number("top_k", k, o.top_k_given, 0);
    o.top_k = static_cast<std::int64_t>(k);
    number("top_p", o.top_p, o.top_p_given, 0, 1);
    number("min_p", o.min_p, o.min_p_given, 0, 1);
  }
  if (!skipped.empty()) applied += std::string(applied.empty() ? "" : "; ") + "not applied: " + skipped;
  check_sampling_options(o);
  return o;
}

namespace {
// The first `count` of `ids` (in that order): the one where the running sum of their weights `p`
// first passes u * total (u uniform in [0, 1), made from `key`).
std::uint32_t walk(const std::vector<std::uint32_t>& ids, std::size_t count, const std::vector<double>& p, double total,
                   std::uint64_t key) {
  const double u = static_cast<double>(splitmix64(key) >> 11) / 9007199254740992.0 * total;  // [0, total)
  double acc = 0;
  for (std::size_t i = 0; i < count; ++i) {
    acc += p[ids[i]];
    if (u < acc) return ids[i];
  }
  return ids[count - 1];  // (rounding: u within the last token's share)
}
}  // namespace

namespace {
// The draw among the first `count` of `ids` (weights `p`, `total` in all) after min_p: only those
// whose probability is at least min_p times the likeliest's (p is relative to it: 1), in order.
std::uint32_t walk_min_p(std::vector<std::uint32_t>& ids, std::size_t count, const std::vector<double>& p, double total,
                         const SamplingOptions& o, std::uint64_t key) {
  if (o.min_p <= 0) return walk(ids, count, p, total, key);
  const auto end = std::stable_partition(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count),
                                         [&](std::uint32_t id) { return p[id] >= o.min_p; });
  const auto kept = static_cast<std::size_t>(end - ids.begin());  // (>= 1: the likeliest's is 1)
  total = 0;
  for (std::size_t i = 0; i < kept; ++i) total += p[ids[i]];
  return walk(ids, kept, p, total, key);
}
}  // namespace

std::uint32_t draw_token(const std::vector<float>& logits, const SamplingOptions& o, std::uint64_t key) {
  HPCT_CHECK(!logits.empty(), "draw_token: no logits");
  const std::size_t v = logits.size();
  const auto top_at = static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (o.temperature == 0) return static_cast<std::uint32_t>(top_at);  // (max_element: the first of equals)
  const double top = logits[top_at];
  std::vector<double> p(v);  // unnormalized probabilities
  for (std::size_t id = 0; id < v; ++id) p[id] = std::exp((logits[id] - top) / o.temperature);
  std::vector<std::uint32_t> ids(v);
  std::iota(ids.begin(), ids.end(), 0u);
  const std::size_t k = o.top_k > 0 ? std::min(static_cast<std::size_t>(o.top_k), v) : v;
  if (k == v && o.top_p >= 1) {  // the whole vocabulary, in id order
    return walk_min_p(ids, v, p, std::accumulate(p.begin(), p.end(), 0.0), o, key);
  }
  const auto likelier = [&](std::uint32_t a, std::uint32_t b) {  // (a total order: stable_sort's)
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (k < v) std::nth_element(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k - 1), ids.end(), likelier);
  double total = 0;  // of the top k
  for (std::size_t i = 0; i < k; ++i) total += p[ids[i]];
  // Likeliest first: the first `sorted` of the k put in order, more of them (8 times as many each
  // time) only while those hold less than top_p.
  std::size_t done = 0, sorted = o.top_p >= 1 ? k : std::min<std::size_t>(k, 256), keep = 0;
  double mass = 0;
  const auto at = [&](std::size_t i) { return ids.begin() + static_cast<std::ptrdiff_t>(i); };
  for (;;) {
    if (sorted < k) std::nth_element(at(done), at(sorted), at(k), likelier);
    std::sort(at(done), at(sorted), likelier);
    done = sorted;
    if (o.top_p >= 1) return walk_min_p(ids, k, p, total, o, key);
    while (keep < done && mass < o.top_p * total) mass += p[ids[keep++]];
    if (mass >= o.top_p * total || done == k) break;
    sorted = std::min(k, done * 8);
  }
  return walk_min_p(ids, std::max<std::size_t>(keep, 1), p, mass, o, key);
}

}  // namespace hpctrain
