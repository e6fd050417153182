// The checkpoint's root fields as text (io/checkpoint_file.hpp encode_info): how rank 0's
// attributes travel to every rank before the collective write, and back after a read.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"

namespace hpctrain {

namespace {
std::string to_text(const std::string& v) { return v; }
std::string to_text(const TokenizerFiles& v) {  // hex: the text may hold no NUL
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const auto& [file, bytes] : v) {
    out += file + ":";
    for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
    out += ";";
  }
  return out;
}
std::string to_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);  // hex float: exact
  return buf;
}
std::string to_text(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += to_text(x) + ",";
  return out;
}
template <class Int>
std::string to_text(Int v) {
  return std::to_string(v);
}
void from_text(const std::string& t, std::string& v) { v = t; }
void from_text(const std::string& t, TokenizerFiles& v) {
  v.clear();
  const auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t at = 0; at < t.size();) {
    const auto colon = t.find(':', at), end = t.find(';', colon);
    HPCT_CHECK(colon != std::string::npos && end != std::string::npos, "malformed tokenizer files text");
    std::string bytes((end - colon - 1) / 2, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<char>(nibble(t[colon + 1 + 2 * i]) * 16 + nibble(t[colon + 2 + 2 * i]));
    v.emplace_back(t.substr(at, colon - at), std::move(bytes));
    at = end + 1;
  }
}
void from_text(const std::string& t, double& v) { v = std::strtod(t.c_str(), nullptr); }
void from_text(const std::string& t, std::vector<double>& v) {
  v.clear();
  for (std::size_t at = 0, comma; (comma = t.find(',', at)) != std::string::npos; at = comma + 1)
    v.push_back(std::strtod(t.c_str() + at, nullptr));
}
template <class Int>
void from_text(const std::string& t, Int& v) {
  v = static_cast<Int>(std::is_signed<Int>::value ? std::stoll(t) : static_cast<long long>(std::stoull(t)));
}

}  // namespace

std::string encode_info(const CheckpointInfo& info) {
  std::string out;
  visit_fields(info, [&](const char* name, const auto& field, bool) {
    out += name;
    out += '\0';
    out += to_text(field);
    out += '\0';
  });
  return out;
}

CheckpointInfo decode_info(const std::string& text) {
  std::map<std::string, std::string> kv;
  for (std::size_t at = 0; at < text.size();) {
    const auto k_end = text.find('\0', at);
    const auto v_end = text.find('\0', k_end + 1);
    HPCT_CHECK(k_end != std::string::npos && v_end != std::string::npos, "malformed checkpoint info");
    kv[text.substr(at, k_end - at)] = text.substr(k_end + 1, v_end - k_end - 1);
    at = v_end + 1;
  }
  CheckpointInfo info;
  visit_fields(info, [&](const char* name, auto& field, bool) {
    const auto it = kv.find(name);
    HPCT_CHECK(it != kv.end(), std::string("checkpoint info lacks ") + name);
    from_text(it->second, field);
  });
  return info;
}

}  // namespace hpctrain
