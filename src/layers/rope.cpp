// Implementation of layers/rope.hpp.
#include "hpctrain/layers/rope.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
// yarn's frequencies (RopeScaling), in place of `f`'s theta^(-2i/R): find_correction_range's bounds
// on the pair indices, the pairs below the ramp extrapolated (kept), those above interpolated.
void yarn_blend(double theta, std::int64_t rotated, const RopeScaling& s, std::vector<float>& f) {
  const double pi = 3.14159265358979323846, dim = static_cast<double>(rotated);
  const double context = static_cast<double>(s.original_context);
  const auto pair_of = [&](double turns) { return dim * std::log(context / (turns * 2 * pi)) / (2 * std::log(theta)); };
  double low = pair_of(s.beta_fast), high = pair_of(s.beta_slow);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // (linear_ramp_factor's)
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double base = std::pow(theta, -2.0 * static_cast<double>(i) / dim);
    const double kept = 1 - std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    f[i] = static_cast<float>(base / s.yarn * (1 - kept) + base * kept);
  }
}
}  // namespace

std::vector<float> rope_inv_freq(double theta, std::int64_t rotated, const RopeScaling& s, std::int64_t positions) {
  const double pi = 3.14159265358979323846;
  const bool longer = positions > s.original_context;  // (longrope: the long factors)
  const std::vector<double>& ext = longer ? s.long_factor : s.short_factor;
  std::vector<float> out(static_cast<std::size_t>(rotated / 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotated));
    if (s.factor > 0) {
      const double context = static_cast<double>(s.original_context), wavelen = 2 * pi / f;
      if (wavelen > context / s.low_freq_factor) {
        f /= s.factor;
      } else if (wavelen >= context / s.high_freq_factor) {  // between the two: blended
        const double smooth = (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (s.linear > 0) f /= s.linear;
    if (!ext.empty()) f /= ext[i];
    out[i] = static_cast<float>(f);
  }
  if (s.yarn > 0) yarn_blend(theta, rotated, s, out);
  return out;
}

std::int64_t Rotary::rotated(std::int64_t width, const std::string& layer) const {
  const std::int64_t r = dims > 0 ? dims : width;
  if (r % 2 != 0 || r > width)
    throw bad_input(layer + " rotates " + std::to_string(r) + " columns of heads of " + std::to_string(width) +
                    ": an even number, at most the head's");
  const auto pairs = static_cast<std::size_t>(r / 2);
  if (!scaling.short_factor.empty() && (scaling.short_factor.size() != pairs || scaling.long_factor.size() != pairs))
    throw bad_input(layer + ": rope_short and rope_long give " + std::to_string(scaling.short_factor.size()) + " and " +
                    std::to_string(scaling.long_factor.size()) + " factors for " + std::to_string(pairs) +
                    " rotated pairs (one each)");
  return r;
}

const std::vector<float>& Rotary::frequencies(std::int64_t width, std::int64_t positions) {
  const bool longer = !scaling.long_factor.empty() && positions > scaling.original_context;
  std::vector<float>& f = longer ? long_freq_ : freq_;
  if (f.empty()) f = rope_inv_freq(theta, dims > 0 ? dims : width, scaling, longer ? positions : 0);
  return f;
}

namespace {
std::string whole(double v) { return std::to_string(std::llround(v)); }

}  // namespace

std::string Rotary::args() const {
  if (theta == 0) return "";
  const RopeScaling& s = scaling;
  std::string a = "rope=" + whole(theta);
  if (dims > 0) a += ", rope_dims=" + std::to_string(dims);
  if (s.linear > 0) a += ", rope_linear=" + whole(s.linear);
  if (s.factor > 0)
    a += ", rope_factor=" + whole(s.factor) + ", rope_low=" + whole(s.low_freq_factor) +
         ", rope_high=" + whole(s.high_freq_factor) + ", rope_context=" + std::to_string(s.original_context);
  if (!s.short_factor.empty())
    a += ", rope_context=" + std::to_string(s.original_context) + ", rope_short=" + exact_numbers(s.short_factor, ":") +
         ", rope_long=" + exact_numbers(s.long_factor, ":") + ", rope_amp=" + float_arg_text(s.amplitude);
  if (s.yarn > 0)
    a += ", rope_context=" + std::to_string(s.original_context) + ", rope_yarn=" + float_arg_text(s.yarn) +
         ", rope_beta_fast=" + float_arg_text(s.beta_fast) + ", rope_beta_slow=" + float_arg_text(s.beta_slow) +
         (s.truncate ? "" : ", rope_truncate=0") + ", rope_amp=" + float_arg_text(s.amplitude);
  return a;
}

namespace {
// The rotary arguments and their defaults as the usage line shows them (rotary_args reads them).
const std::pair<const char*, const char*> kRotaryArgs[] = {
    {"rope", "0"},           {"rope_dims", "0"},       {"rope_factor", "0"}, {"rope_low", "1"},
    {"rope_high", "4"},      {"rope_context", "8192"}, {"rope_linear", "0"}, {"rope_short", ""},
    {"rope_long", ""},       {"rope_amp", "1"},        {"rope_yarn", "0"},   {"rope_beta_fast", "32"},
    {"rope_beta_slow", "1"}, {"rope_truncate", "1"}};
}  // namespace

const std::vector<std::string>& rotary_arg_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, fallback] : kRotaryArgs) out.emplace_back(name);
    return out;
  }();
  return names;
}

std::string rotary_usage() {
  std::string out;
  for (const auto& [name, fallback] : kRotaryArgs) out += std::string(out.empty() ? "" : ", ") + name + "=" + fallback;
  return out;
}

namespace {
// A named list of positive numbers, "1:1.02:1.5" (rope_short, rope_long); empty when absent.
std::vector<double> factor_list(const LayerArgs& a, const std::string& key) {
  std::vector<double> out;
  const auto it = a.named.find(key);
  if (it == a.named.end()) return out;
  std::istringstream in(it->second);
  std::string item;
  while (std::getline(in, item, ':')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v > 0) || !std::isfinite(v))
      throw bad_input("[model] layers: " + a.text + ": " + key + " = '" + it->second.substr(0, 80) +
                      "' must be positive numbers joined by ':'");
    out.push_back(v);
  }
  return out;
}
}  // namespace

Rotary rotary_args(const LayerArgs& a) {
  Rotary r;
  r.theta = static_cast<double>(layer_named_int(a, "rope", 0, 0));
  r.dims = layer_named_int(a, "rope_dims", 0, 0);
  RopeScaling& s = r.scaling;
  s.factor = static_cast<double>(layer_named_int(a, "rope_factor", 0, 0));
  s.low_freq_factor = static_cast<double>(layer_named_int(a, "rope_low", 1, 1));
  s.high_freq_factor = static_cast<double>(layer_named_int(a, "rope_high", 4, 1));
  s.original_context = layer_named_int(a, "rope_context", 8192, 1);
  if (s.factor > 0 && (r.theta == 0 || s.high_freq_factor <= s.low_freq_factor))
    throw bad_input("[model] layers: " + a.text + ": rope_factor needs rope=THETA and rope_high > rope_low");
  s.linear = static_cast<double>(layer_named_int(a, "rope_linear", 0, 0));
  s.short_factor = factor_list(a, "rope_short");
  s.long_factor = factor_list(a, "rope_long");
  s.amplitude = layer_named_number(a, "rope_amp", 1.f);
  s.yarn = layer_named_number(a, "rope_yarn", 0.f);
  s.beta_fast = layer_named_number(a, "rope_beta_fast", 32.f);
  s.beta_slow = layer_named_number(a, "rope_beta_slow", 1.f);
  s.truncate = layer_named_bool(a, "rope_truncate", true);
  if (s.yarn > 0 && (s.yarn < 1 || !(s.beta_fast > 0) || !(s.beta_slow > 0)))
    throw bad_input("[model] layers: " + a.text + ": rope_yarn needs a factor >= 1 and positive rope_beta_fast, " +
                    "rope_beta_slow");
  const int scalings = (s.factor > 0) + (s.linear > 0) + !s.short_factor.empty() + (s.yarn > 0);
  if (scalings > 1 || (scalings > 0 && r.theta == 0))
    throw bad_input("[model] layers: " + a.text + ": rope_factor, rope_linear, rope_short and rope_yarn are " +
                    "scalings of rope=THETA, one at most");
  if (s.short_factor.empty() != s.long_factor.empty() || (s.amplitude != 1.f && s.short_factor.empty() && s.yarn == 0))
    throw bad_input("[model] layers: " + a.text + ": longrope takes rope_short, rope_long (and rope_amp) together; " +
                    "rope_amp goes with longrope or rope_yarn");
  if (r.dims > 0 && r.theta == 0) throw bad_input("[model] layers: " + a.text + ": rope_dims needs rope=THETA");
  return r;
}

}  // namespace hpctrain
