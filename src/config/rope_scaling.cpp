// Implementation of config/rope_scaling.hpp.
#include "hpctrain/config/rope_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

bool RopeScaling::operator==(const RopeScaling& o) const {
  const bool context = factor > 0 || !short_factor.empty() || yarn > 0;
  return factor == o.factor && linear == o.linear && short_factor == o.short_factor && long_factor == o.long_factor &&
         amplitude == o.amplitude && yarn == o.yarn && beta_fast == o.beta_fast && beta_slow == o.beta_slow &&
         truncate == o.truncate && (!context || original_context == o.original_context) &&
         (factor == 0 || (low_freq_factor == o.low_freq_factor && high_freq_factor == o.high_freq_factor));
}

namespace {
// The comma-separated arguments of `text` when it is "name(...)", each a list of numbers (split at
// spaces); empty when it is no such call or an argument holds no number or another word.
std::vector<std::vector<double>> call_args(const std::string& text, const std::string& name) {
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      text.find_first_not_of(' ', close + 1) != std::string::npos)
    return {};
  std::istringstream head(text.substr(0, open));
  std::string word, more;
  if (!(head >> word) || word != name || head >> more) return {};
  std::vector<std::vector<double>> args(1);
  std::istringstream inside(text.substr(open + 1, close - open - 1));
  for (std::string part; std::getline(inside, part, ',');) {
    std::istringstream in(part);
    for (double v = 0; in >> v;) args.back().push_back(v);
    if (!in.eof() || args.back().empty() ||
        !std::all_of(args.back().begin(), args.back().end(), [](double x) { return std::isfinite(x); }))
      return {};
    args.emplace_back();
  }
  args.pop_back();
  return args;
}

bool whole_positive(double v) { return v >= 1 && v == std::floor(v); }

// "longrope(CONTEXT, AMPLITUDE, S1 S2 .., L1 L2 ..)" into r; false when `text` is no such form.
bool longrope_of(const std::string& text, RopeScaling& r) {
  const auto a = call_args(text, "longrope");
  const auto positive = [](const std::vector<double>& l) {
    return std::all_of(l.begin(), l.end(), [](double x) { return x > 0; });
  };
  if (a.size() != 4 || a[0].size() != 1 || a[1].size() != 1 || !whole_positive(a[0][0]) || !positive(a[1]) ||
      !positive(a[2]) || !positive(a[3]) || a[2].size() != a[3].size())
    return false;
  r.original_context = std::lround(a[0][0]), r.amplitude = a[1][0], r.short_factor = a[2], r.long_factor = a[3];
  return true;
}

// "yarn(FACTOR, CONTEXT[, AMPLITUDE[, BETA_FAST, BETA_SLOW[, TRUNCATE]]])" into r (AMPLITUDE's
// default: get_mscale's 0.1 ln FACTOR + 1); false when `text` is no such form.
bool yarn_of(const std::string& text, RopeScaling& r) {
  const auto a = call_args(text, "yarn");
  if (a.size() < 2 || a.size() > 6 || a.size() == 4 ||
      !std::all_of(a.begin(), a.end(), [](const std::vector<double>& l) { return l.size() == 1; }))
    return false;
  const auto at = [&](std::size_t i, double fallback) { return i < a.size() ? a[i][0] : fallback; };
  r.yarn = a[0][0], r.original_context = std::lround(a[1][0]);
  r.amplitude = at(2, r.yarn <= 1 ? 1 : 0.1 * std::log(r.yarn) + 1);
  r.beta_fast = at(3, 32), r.beta_slow = at(4, 1), r.truncate = at(5, 1) == 1;
  return r.yarn >= 1 && whole_positive(a[1][0]) && r.amplitude > 0 && r.beta_fast > 0 && r.beta_slow > 0 &&
         (at(5, 1) == 0 || at(5, 1) == 1);
}
}  // namespace

RopeScaling rope_scaling_of(const std::string& text) {
  RopeScaling r;
  if (text == "none") return r;
  if (longrope_of(text, r)) return r;
  r = RopeScaling{};
  if (yarn_of(text, r)) return r;
  r = RopeScaling{};
  char tail = 0;
  long linear = 0, factor = 0, low = 0, high = 0, context = 0;
  if (std::sscanf(text.c_str(), " linear ( %ld ) %c", &linear, &tail) == 1 && linear >= 1) {
    r.linear = static_cast<double>(linear);
    return r;
  }
  const int got =
      std::sscanf(text.c_str(), " llama3 ( %ld , %ld , %ld , %ld ) %c", &factor, &low, &high, &context, &tail);
  r.factor = static_cast<double>(factor), r.original_context = context;
  r.low_freq_factor = static_cast<double>(low), r.high_freq_factor = static_cast<double>(high);
  if (got != 4 || factor < 1 || low < 1 || high <= low || context < 1)
    throw bad_input(
        "[model] rope_scaling = '" + text + "': expected none, llama3(FACTOR, LOW, HIGH, CONTEXT) in " +
        "whole numbers with HIGH > LOW >= 1, e.g. llama3(32, 1, 4, 8192), linear(FACTOR) >= 1, " +
        "longrope(CONTEXT, AMPLITUDE, SHORT FACTORS, LONG FACTORS), e.g. longrope(4096, 1.19, 1 1.5, 1 2), " +
        "or yarn(FACTOR, CONTEXT[, AMPLITUDE[, BETA_FAST, BETA_SLOW[, TRUNCATE]]]), e.g. yarn(4, 32768)");
  return r;
}

namespace {
// `v` to its last bit ("32", "1.0900000000000001").
std::string exact(double v) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.17g", v);
  return s;
}

}  // namespace

std::string exact_numbers(const std::vector<double>& v, const char* separator) {
  std::string out;
  for (const double x : v) out += (out.empty() ? "" : separator) + exact(x);
  return out;
}

std::string rope_scaling_text(const RopeScaling& s) {
  const std::string context = std::to_string(s.original_context);
  if (!s.short_factor.empty())
    return "longrope(" + context + ", " + exact(s.amplitude) + ", " + exact_numbers(s.short_factor, " ") + ", " +
           exact_numbers(s.long_factor, " ") + ")";
  if (s.yarn > 0)
    return "yarn(" + exact(s.yarn) + ", " + context + ", " + exact(s.amplitude) + ", " + exact(s.beta_fast) + ", " +
           exact(s.beta_slow) + ", " + (s.truncate ? "1" : "0") + ")";
  if (s.linear > 0) return "linear(" + exact(s.linear) + ")";
  if (s.factor > 0)
    return "llama3(" + exact(s.factor) + ", " + exact(s.low_freq_factor) + ", " + exact(s.high_freq_factor) + ", " +
           context + ")";
  return "none";
}

}  // namespace hpctrain
