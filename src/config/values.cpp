// The values of configuration keys: parsing, bounds, canonical text and ${VAR} expansion, for the
// schema (config/schema.hpp) and its callers.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "hpctrain/config/schema.hpp"

namespace hpctrain {

namespace {

std::string bound_text(const KeySpec& s) {
  if (!s.bounded) return "";
  const bool is_int = s.kind == ValueKind::integer;
  auto num = [&](double v) { return is_int ? std::to_string(static_cast<long long>(v)) : format_real(v); };
  std::string lo = std::string(s.min_exclusive ? "> " : ">= ") + num(s.min);
  if (s.max >= kMaxCount || s.max == std::numeric_limits<double>::infinity()) return lo;
  return lo + " and <= " + num(s.max);
}

void check_bounds(const KeySpec& s, double v) {
  if (!s.bounded) return;
  const bool low = s.min_exclusive ? !(v > s.min) : !(v >= s.min);
  if (low || v > s.max) throw std::invalid_argument("expected " + describe_type(s));
}

std::string expand_env(const std::string& raw, const EnvLookup& env) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '$') {
      out += raw[i];
      continue;
    }
    if (i + 1 < raw.size() && raw[i + 1] == '$') {  // "$$" is a literal '$'
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= raw.size() || raw[i + 1] != '{')
      throw std::invalid_argument("a '$' must start ${VAR} (write $$ for a literal $)");
    const auto close = raw.find('}', i + 2);
    if (close == std::string::npos) throw std::invalid_argument("unterminated ${ in path");
    const std::string name = raw.substr(i + 2, close - i - 2);
    if (name.empty()) throw std::invalid_argument("empty variable name in ${}");
    const auto value = env(name);
    if (!value) throw std::invalid_argument("environment variable " + name + " is not set");
    out += *value;
    i = close;
  }
  return out;
}

}  // namespace

double parse_real(const std::string& raw) {
  const std::string v = trim(raw);
  if (v.empty()) throw std::invalid_argument("expected a number");
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(d)) throw std::invalid_argument("expected a finite number");
  return d;
}

std::string format_real(double d) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), d);  // shortest text that reads back exactly
  return std::string(buf, r.ptr);
}

std::uint64_t parse_byte_size(const std::string& raw) {
  const std::string v = trim(raw);
  std::size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  if (digits == 0 || digits > 19) throw std::invalid_argument("expected a byte count such as 4096, 512M or 2G");
  const std::string suffix = trim(v.substr(digits));
  // K, M, G, T and KiB ... TiB: powers of 1024; KB, MB, GB, TB: powers of 1000 (Hugging Face's
  // max_shard_size = "5GB" is 5000000000 bytes).
  const struct {
    const char *binary, *iec, *decimal;
  } units[] = {{"K", "KiB", "KB"}, {"M", "MiB", "MB"}, {"G", "GiB", "GB"}, {"T", "TiB", "TB"}};
  std::uint64_t mult = 1, power2 = 1, power10 = 1;
  bool known = suffix.empty() || suffix == "B";
  for (const auto& u : units) {
    power2 <<= 10, power10 *= 1000;
    if (suffix == u.binary || suffix == u.iec) mult = power2, known = true;
    if (suffix == u.decimal) mult = power10, known = true;
  }
  if (!known)
    throw std::invalid_argument(
        "expected a byte count such as 4096, 512M or 2G (K, M, G, T and KiB ... TiB: 1024; KB ... TB: 1000)");
  const std::uint64_t n = std::stoull(v.substr(0, digits));
  if (n > std::numeric_limits<std::uint64_t>::max() / mult) throw std::invalid_argument("byte count too large");
  return n * mult;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string describe_type(const KeySpec& s) {
  switch (s.kind) {
    case ValueKind::integer: return "integer" + (s.bounded ? " " + bound_text(s) : std::string());
    case ValueKind::real: return "number" + (s.bounded ? " " + bound_text(s) : std::string());
    case ValueKind::boolean: return "true|false";
    case ValueKind::choice: {
      std::string out = "one of ";
      for (std::size_t i = 0; i < s.choices.size(); ++i) out += (i ? "|" : "") + s.choices[i];
      return out;
    }
    case ValueKind::text: return "text";
    case ValueKind::path: return "path (${VAR} expanded)";
    case ValueKind::size: return "bytes (K/M/G/T: 1024; KB/MB/GB/TB: 1000)";
    case ValueKind::real_pair: return "two numbers \"a, b\"" + (s.bounded ? ", each " + bound_text(s) : std::string());
  }
  return "?";
}

std::string canonical_value(const KeySpec& s, const std::string& raw_in, const EnvLookup& env) {
  const std::string raw = trim(raw_in);
  switch (s.kind) {
    case ValueKind::integer: {
      std::size_t pos = 0;
      long long v = 0;
      try {
        v = std::stoll(raw, &pos);
      } catch (const std::exception&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      if (pos != raw.size()) throw std::invalid_argument("expected " + describe_type(s));
      check_bounds(s, static_cast<double>(v));
      return std::to_string(v);
    }
    case ValueKind::real: {
      double v = 0;
      try {
        v = parse_real(raw);
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      check_bounds(s, v);
      return format_real(v);
    }
    case ValueKind::boolean:
      if (raw == "true" || raw == "on" || raw == "yes" || raw == "1") return "true";
      if (raw == "false" || raw == "off" || raw == "no" || raw == "0") return "false";
      throw std::invalid_argument("expected true|false (or on|off, yes|no, 1|0)");
    case ValueKind::choice:
      for (const auto& c : s.choices)
        if (raw == c) return raw;
      throw std::invalid_argument("expected " + describe_type(s));
    case ValueKind::text: return raw;
    case ValueKind::path: return expand_env(raw, env);
    case ValueKind::size: return std::to_string(parse_byte_size(raw));
    case ValueKind::real_pair: {
      const auto comma = raw.find(',');
      if (comma == std::string::npos) throw std::invalid_argument("expected " + describe_type(s));
      double a = 0, b = 0;
      try {
        a = parse_real(raw.substr(0, comma));
        b = parse_real(raw.substr(comma + 1));
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument("expected " + describe_type(s));
      }
      check_bounds(s, a);
      check_bounds(s, b);
      return format_real(a) + ", " + format_real(b);
    }
  }
  throw std::logic_error("unknown value kind");
}

std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw std::invalid_argument("'" + item + "' is not key=value (e.g. romio_cb_write=enable,striping_factor=8)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

}  // namespace hpctrain
