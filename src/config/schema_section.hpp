// The schema's building blocks (config/schema.cpp and the files of its sections): a field's
// value from canonical text and back, and Section, which binds a section's keys to the fields of
// its struct. Private to src/config.
#pragma once

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/config/schema.hpp"

namespace hpctrain::schema {

// A field's value from canonical text, and back; one overload per field type.
inline void read_value(const std::string& v, bool& f) { f = v == "true"; }
inline void read_value(const std::string& v, int& f) { f = std::stoi(v); }
inline void read_value(const std::string& v, long& f) { f = std::stol(v); }
inline void read_value(const std::string& v, unsigned long& f) { f = std::stoul(v); }
inline void read_value(const std::string& v, double& f) { f = std::stod(v); }
inline void read_value(const std::string& v, std::string& f) { f = v; }
inline void read_value(const std::string& v, RopeScaling& f) { f = rope_scaling_of(v); }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const std::string& v, E& f) {
  for (const auto& c : choices_of(E{}))
    if (v == c.name) f = c.value;
}

inline std::string value_text(bool v) { return v ? "true" : "false"; }
inline std::string value_text(int v) { return std::to_string(v); }
inline std::string value_text(long v) { return std::to_string(v); }
inline std::string value_text(unsigned long v) { return std::to_string(v); }
inline std::string value_text(double v) { return format_real(v); }
inline std::string value_text(const std::string& v) { return v; }
inline std::string value_text(const RopeScaling& v) { return rope_scaling_text(v); }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
std::string value_text(E v) {
  return name_of(v);
}

template <typename T>
ValueKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return ValueKind::boolean;
  if constexpr (std::is_enum_v<T>) return ValueKind::choice;
  if constexpr (std::is_integral_v<T>) return ValueKind::integer;
  if constexpr (std::is_floating_point_v<T>) return ValueKind::real;
  return ValueKind::text;
}

// The keys of one section, each bound to a field of the section's struct.
template <typename S>
class Section {
 public:
  Section(std::vector<KeySpec>& out, const char* name, S Config::*part) : out_(out), name_(name), part_(part) {}

  template <typename T>
  KeySpec& key(const char* key, T S::*field, const char* help) {
    const auto part = part_;
    KeySpec& s = custom(
        key, kind_of<T>(), help, [part, field](Config& c, const std::string& v) { read_value(v, c.*part.*field); },
        [part, field](const Config& c) { return value_text(c.*part.*field); });
    if constexpr (std::is_enum_v<T>)
      for (const auto& c : choices_of(T{})) s.choices.push_back(c.name);
    return s;
  }

  // "auto" or a whole number >= 1, held as 0 for auto.
  KeySpec& auto_count(const char* key, long S::*field, const char* help) {
    const auto part = part_;
    KeySpec& s = custom(
        key, ValueKind::text, help,
        [part, field](Config& c, const std::string& v) {
          c.*part.*field = v == "auto" ? 0 : static_cast<long>(parse_real(v));
        },
        [part, field](const Config& c) {
          return c.*part.*field == 0 ? std::string("auto") : std::to_string(c.*part.*field);
        });
    s.check = [](const std::string& v) {
      if (v == "auto") return;
      const double n = parse_real(v);
      if (!(n >= 1 && n <= kMaxCount && n == std::floor(n)))
        throw std::invalid_argument("expected auto or a whole number >= 1");
    };
    return s;
  }

  KeySpec& custom(const char* key, ValueKind kind, const char* help,
                  std::function<void(Config&, const std::string&)> apply,
                  std::function<std::string(const Config&)> show) {
    KeySpec s;
    s.section = name_;
    s.key = key;
    s.kind = kind;
    s.help = help;
    s.apply = std::move(apply);
    s.show = std::move(show);
    out_.push_back(std::move(s));
    return out_.back();
  }

 private:
  std::vector<KeySpec>& out_;
  const char* name_;
  S Config::*part_;
};

// The sections' keys, in the order of the table (schema_model.cpp: [model]'s).
void model_keys(std::vector<KeySpec>& k);

}  // namespace hpctrain::schema
