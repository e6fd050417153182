// config.json's rotary embedding in transformers 4's and 5's layouts (checkpoint/hf_rope.hpp).
#include "hf_rope.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace hpctrain::hf {

namespace {
// The keys a rope_parameters section holds for the rope_types hpctrain computes.
const char* const kSectionKeys[] = {"rope_type",        "type",
                                    "rope_theta",       "partial_rotary_factor",
                                    "factor",           "low_freq_factor",
                                    "high_freq_factor", "original_max_position_embeddings",
                                    "short_factor",     "long_factor",
                                    "attention_factor", "beta_fast",
                                    "beta_slow",        "mscale",
                                    "mscale_all_dim",   "truncate"};

bool given(const Json& c, const char* key) { return c.contains(key) && !c[key].is_null(); }

// A list of positive numbers, `s`'s `name` (longrope's factors).
std::vector<double> factors(const Json& s, const char* name, const std::string& file, const std::string& key) {
  std::vector<double> out;
  const Json l = s.contains(name) ? s[name] : Json();
  if (l.is_array())
    for (const Json& v : l) out.push_back(v.is_number() && v.get<double>() > 0 ? v.get<double>() : -1);
  if (out.empty() || std::any_of(out.begin(), out.end(), [](double v) { return v < 0; }))
    throw bad_input(file + ": \"" + key + "\" longrope's \"" + name + "\" = " + l.dump().substr(0, 120) +
                    " is not a list of positive numbers");
  return out;
}

// longrope (_compute_longrope_parameters): the factors, the context (original_max_position_embeddings
// at the top level as Phi-3 keeps it, else `s`'s, else max_position_embeddings) and the amplitude
// (attention_factor, else sqrt(1 + ln(F) / ln(context)) with F the longer context's ratio to it:
// max_position_embeddings / that top-level key, else `s`'s factor; 1 when F <= 1).
void longrope(const Json& s, const Json& c, const std::string& file, const std::string& key, RopeScaling& r) {
  r.short_factor = factors(s, "short_factor", file, key);
  r.long_factor = factors(s, "long_factor", file, key);
  const std::int64_t positions = whole(c, "max_position_embeddings", file, 2048);
  const bool top = given(c, "original_max_position_embeddings");
  r.original_context = top ? whole(c, "original_max_position_embeddings", file)
                           : whole(s, "original_max_position_embeddings", file + " " + key, positions);
  if (r.original_context < 2)
    throw bad_input(file + ": \"" + key + "\" longrope with an original context of " +
                    std::to_string(r.original_context));
  if (given(s, "attention_factor")) {
    const Json& a = s["attention_factor"];
    if (!a.is_number() || !(a.get<double>() > 0))
      throw bad_input(file + ": \"" + key + "\" \"attention_factor\" = " + a.dump() + " is not a positive number");
    r.amplitude = a.get<double>();
    return;
  }
  if (!top && !(given(s, "factor") && s["factor"].is_number()))
    throw bad_input(file + ": \"" + key + "\" longrope without \"attention_factor\", \"factor\" or a top-level " +
                    "original_max_position_embeddings: no amplitude to derive");
  const double context = static_cast<double>(r.original_context);
  const double f = top ? static_cast<double>(positions) / context : s["factor"].get<double>();
  r.amplitude = f <= 1 ? 1 : std::sqrt(1 + std::log(f) / std::log(context));
}

// yarn (_compute_yarn_parameters as transformers 5 and vLLM compute it): factor (>= 1), the context
// (original_max_position_embeddings, else max_position_embeddings), beta_fast and beta_slow (absent, 0
// or null: 32 and 1), truncate (true) and the amplitude (attention_factor, else get_mscale's 0.1 m ln F
// + 1: with mscale and mscale_all_dim their ratio). transformers 4 (4.48 on) takes the factor as
// max_position_embeddings / original_max_position_embeddings where `s` gives the latter.
void yarn(const Json& s, const Json& c, const std::string& file, const std::string& key, RopeScaling& r) {
  const auto number = [&](const char* name, double fallback) {
    if (!given(s, name)) return fallback;
    if (!s[name].is_number() || s[name].get<double>() < 0)
      throw bad_input(file + ": \"" + key + "\" yarn's \"" + name + "\" = " + s[name].dump() + " is not a number >= 0");
    return s[name].get<double>() == 0 ? fallback : s[name].get<double>();
  };
  r.yarn = number("factor", 0);
  if (r.yarn < 1) throw bad_input(file + ": \"" + key + "\" yarn without a \"factor\" of at least 1");
  r.original_context =
      whole(s, "original_max_position_embeddings", file + " " + key, whole(c, "max_position_embeddings", file, 2048));
  if (r.original_context < 1) throw bad_input(file + ": \"" + key + "\" yarn with an original context of 0");
  r.beta_fast = number("beta_fast", 32), r.beta_slow = number("beta_slow", 1);
  r.truncate = s.value("truncate", true);
  const auto mscale = [&](double m) { return r.yarn <= 1 ? 1.0 : 0.1 * m * std::log(r.yarn) + 1; };
  const double m = number("mscale", 0), all = number("mscale_all_dim", 0);
  r.amplitude = number("attention_factor", m > 0 && all > 0 ? mscale(m) / mscale(all) : mscale(1));
}

// The scaling an object `s` (rope_scaling, or a rope_parameters section) names as `key` says: its
// rope_type (or the older "type"; absent: default, none) and that type's numbers. `context`: llama3's
// original_max_position_embeddings where `s` leaves it out (-1: it must say it).
void read_scaling(const Json& s, const Json& c, const std::string& file, const std::string& key, std::int64_t context,
                  RopeScaling& r) {
  if (!s.is_object())
    throw bad_input(file + ": \"" + key + "\" = " + s.dump().substr(0, 200) + " is not an object (null: none)");
  const std::string kind = s.value("rope_type", s.value("type", std::string("default")));
  const std::string where = file + " " + key;
  if (kind == "default") return;
  if (kind == "linear") {  // (Gemma 3 4B-27B's factor 8: position interpolation)
    const std::int64_t factor = whole(s, "factor", where);
    if (factor < 1)
      throw bad_input(file + ": \"" + key + "\" linear with a factor of " + std::to_string(factor) + " (at least 1)");
    r.linear = static_cast<double>(factor);
    return;
  }
  if (kind == "longrope") return longrope(s, c, file, key, r);
  if (kind == "yarn") return yarn(s, c, file, key, r);
  if (kind != "llama3")
    throw bad_input(file + ": \"" + key + "\" of type \"" + kind +
                    "\": hpctrain computes llama3's, linear's, longrope's and yarn's (or none, default)");
  r.factor = static_cast<double>(whole(s, "factor", where));
  r.low_freq_factor = static_cast<double>(whole(s, "low_freq_factor", where));
  r.high_freq_factor = static_cast<double>(whole(s, "high_freq_factor", where));
  r.original_context = whole(s, "original_max_position_embeddings", where, context);
}

// A rope_parameters section: its base (absent: -1) and scaling; llama3's context absent inside it is
// the file's original_max_position_embeddings or max_position_embeddings (standardize_rope_params').
Rope section(const Json& s, const Json& c, const std::string& file, const std::string& key) {
  Rope r;
  const std::int64_t context =
      whole(c, "original_max_position_embeddings", file, whole(c, "max_position_embeddings", file, 2048));
  read_scaling(s, c, file, key, context, r.scaling);  // (first: a type hpctrain does not compute is the line)
  for (const auto& item : s.items())
    if (std::none_of(std::begin(kSectionKeys), std::end(kSectionKeys), [&](const char* k) { return item.key() == k; }))
      throw bad_input(file + ": \"" + key + "\" holds \"" + item.key() +
                      "\", a key of no rope_type hpctrain computes (default, linear, llama3, longrope, yarn)");
  if (given(s, "rope_theta")) r.theta = whole(s, "rope_theta", file + " " + key);
  if (given(s, "partial_rotary_factor")) {  // (Phi-4 mini's 0.75)
    if (!s["partial_rotary_factor"].is_number())
      throw bad_input(file + ": \"" + key + "\" \"partial_rotary_factor\" = " + s["partial_rotary_factor"].dump() +
                      " is not a number");
    r.partial = s["partial_rotary_factor"].get<double>();
  }
  return r;
}
}  // namespace

RopeKeys rope_keys(const Json& c, const std::string& file, bool local_base) {
  RopeKeys k;
  const std::int64_t top = given(c, "rope_theta") ? whole(c, "rope_theta", file) : -1;
  if (local_base && given(c, "rope_local_base_freq")) k.local.theta = whole(c, "rope_local_base_freq", file);
  k.global.theta = top;
  if (given(c, "rope_scaling")) read_scaling(c["rope_scaling"], c, file, "rope_scaling", -1, k.global.scaling);
  if (!given(c, "rope_parameters")) return k;  // (transformers 4's layout)
  const Json& p = c["rope_parameters"];
  if (!p.is_object() || p.empty())
    throw bad_input(file + ": \"rope_parameters\" = " + p.dump().substr(0, 200) +
                    " is not an object of rope_type, rope_theta and its numbers (or one per layer kind)");
  const bool per_kind = std::all_of(p.items().begin(), p.items().end(), [](const auto& item) {
    return item.key() == "full_attention" || item.key() == "sliding_attention";
  });
  const char* const global_key = !per_kind ? "" : p.contains("full_attention") ? "full_attention" : "sliding_attention";
  const Rope global = section(per_kind ? p[global_key] : p, c, file,
                              per_kind ? std::string("rope_parameters.") + global_key : "rope_parameters");
  if (given(c, "rope_scaling") && global.scaling != k.global.scaling)
    throw bad_input(file +
                    ": \"rope_scaling\" and \"rope_parameters\" say different scalings (transformers 4 reads "
                    "rope_scaling alone, 5 takes it over rope_parameters' scaling): keep one");
  const std::int64_t theta = k.global.theta;
  k.global = global;
  if (k.global.theta < 0) k.global.theta = theta;  // (transformers 5: the top-level key where the section has none)
  if (!per_kind || !p.contains("sliding_attention") || std::string(global_key) == "sliding_attention") return k;
  Rope local = section(p["sliding_attention"], c, file, "rope_parameters.sliding_attention");
  if (!local_base) {
    if (local.theta < 0) local.theta = k.global.theta;
    if (!(local == k.global))
      throw bad_input(file +
                      ": \"rope_parameters\" gives the sliding_attention layers another rotation than the "
                      "full_attention ones; hpctrain reads that for Gemma 3 only");
    return k;
  }
  if (local.scaling.scaled())
    throw bad_input(file +
                    ": \"rope_parameters.sliding_attention\" scales positions; hpctrain scales the "
                    "full_attention layers' alone, as Gemma 3 does");
  if (local.theta >= 0) k.local.theta = local.theta;
  return k;
}

}  // namespace hpctrain::hf
