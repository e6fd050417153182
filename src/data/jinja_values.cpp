// Jinja values (data/jinja.hpp): from JSON, Python's str() and repr(), truth, equality, order,
// and tojson as transformers' (json.dumps with ensure_ascii off).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "hpctrain/core/error.hpp"
#include "jinja_values.hpp"

namespace hpctrain::jinja {

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::object) return nullptr;
  for (const auto& [k, v] : *o)
    if (k == key) return &v;
  return nullptr;
}

void put(Object& o, std::string key, Value v) {
  for (auto& [k, old] : o)
    if (k == key) {
      old = std::move(v);
      return;
    }
  o.emplace_back(std::move(key), std::move(v));
}

void Value::set(const std::string& key, Value v) { put(*o, key, std::move(v)); }

namespace {
Value from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueDepth)
    throw bad_input("a value nested more than " + std::to_string(kMaxValueDepth) + " deep (lists, mappings)");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value::integer(j.get<long long>());
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& x : j) a.push_back(from_json(x, depth + 1));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (const auto& [k, x] : j.items()) o.emplace_back(k, from_json(x, depth + 1));
      return Value::object(std::move(o));
    }
    default: return Value();
  }
}
}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json(j, -1); }  // (the context: its members' depth)

// Python's repr() of a float: the shortest text that reads back, with ".0" when integral.
std::string float_text(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string repr(const Value& v) {
  if (v.kind != Value::Kind::string) return to_text(v);
  const char quote = v.s.find('\'') != std::string::npos && v.s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : v.s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c == '\n' ? std::string("\\n") : c == '\t' ? std::string("\\t") : std::string(1, c);
  }
  return out + quote;
}

std::string to_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return v.b ? "True" : "False";
    case Value::Kind::integer: return std::to_string(v.i);
    case Value::Kind::number: return float_text(v.d);
    case Value::Kind::string: return v.s;
    case Value::Kind::array: {
      std::string out = "[";
      for (std::size_t k = 0; k < v.a->size(); ++k) out += (k ? ", " : "") + repr((*v.a)[k]);
      return out + "]";
    }
    case Value::Kind::function: return "<function " + v.s + ">";
    case Value::Kind::object: {
      std::string out = "{";
      for (std::size_t k = 0; k < v.o->size(); ++k)
        out += (k ? ", " : "") + repr(Value::string((*v.o)[k].first)) + ": " + repr((*v.o)[k].second);
      return out + "}";
    }
  }
  return "";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.b;
    case Value::Kind::integer: return v.i != 0;
    case Value::Kind::number: return v.d != 0;
    case Value::Kind::string: return !v.s.empty();
    case Value::Kind::array: return !v.a->empty();
    case Value::Kind::object: return !v.o->empty();
    case Value::Kind::function: return true;
  }
  return false;
}

namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

long long code_points(const std::string& s) {
  long long n = 0;
  for (const char c : s) n += !continuation(c) || n == 0;
  return n;
}

Value character(const std::string& s, long long k) {
  if (k < 0) k += code_points(s);
  if (k < 0) return Value();
  for (std::size_t at = 0; at < s.size(); ++at) {
    if (continuation(s[at]) && at > 0) continue;
    if (k-- > 0) continue;
    std::size_t end = at + 1;
    while (end < s.size() && continuation(s[end])) ++end;
    return Value::string(s.substr(at, end - at));
  }
  return Value();
}

std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (const char c : s)
    if (continuation(c) && !out.empty()) {
      out.back() += c;  // (a continuation byte)
    } else {
      out.emplace_back(1, c);
    }
  return out;
}

std::optional<Array> elements(const Value& v, const std::string& where) {
  if (v.is(Value::Kind::array)) return *v.a;
  Array out;
  if (v.is(Value::Kind::string) && v.s.size() > kMaxCharacters)  // (a value each: about 100 bytes a character)
    throw bad_input(where + ": the characters of a text over " + std::to_string(kMaxCharacters >> 20) +
                    " MiB, one by one, are not supported");
  if (v.is(Value::Kind::string)) {
    for (std::string& c : characters(v.s)) out.push_back(Value::string(std::move(c)));
  } else if (v.is(Value::Kind::object)) {
    for (const auto& kv : *v.o) out.push_back(Value::string(kv.first));
  } else if (!v.is(Value::Kind::undefined) && !v.is(Value::Kind::none)) {
    return std::nullopt;
  }
  return out;
}

bool numeric(const Value& v) { return v.kind == Value::Kind::integer || v.kind == Value::Kind::number; }
double as_double(const Value& v) { return v.kind == Value::Kind::integer ? static_cast<double>(v.i) : v.d; }

bool equal(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) return as_double(a) == as_double(b);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::boolean: return a.b == b.b;
    case Value::Kind::string: return a.s == b.s;
    case Value::Kind::array:
      if (a.a->size() != b.a->size()) return false;
      for (std::size_t k = 0; k < a.a->size(); ++k)
        if (!equal((*a.a)[k], (*b.a)[k])) return false;
      return true;
    case Value::Kind::object:
      if (a.o->size() != b.o->size()) return false;
      for (const auto& [k, x] : *a.o) {
        const Value* y = b.find(k);
        if (!y || !equal(x, *y)) return false;
      }
      return true;
    default: return true;  // none, undefined
  }
}

int order(const Value& a, const Value& b, const std::string& where) {
  if (numeric(a) && numeric(b)) return as_double(a) < as_double(b) ? -1 : as_double(a) > as_double(b) ? 1 : 0;
  if (a.kind == Value::Kind::string && b.kind == Value::Kind::string)
    return a.s.compare(b.s) < 0 ? -1 : a.s == b.s ? 0 : 1;
  throw bad_input(where + ": cannot order " + kind_name(a) + " and " + kind_name(b));
}

std::string kind_name(const Value& v) {
  static const char* const names[] = {"undefined", "none",   "a boolean", "an integer", "a number",
                                      "a string",  "a list", "a mapping", "a function"};
  return names[static_cast<int>(v.kind)];
}

namespace {
void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\', out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;  // (ensure_ascii=False: UTF-8 as it is)
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, int indent, int depth) {
  const std::string pad = indent >= 0 ? "\n" + std::string(static_cast<std::size_t>(indent * (depth + 1)), ' ') : "";
  const std::string end = indent >= 0 ? "\n" + std::string(static_cast<std::size_t>(indent * depth), ' ') : "";
  const std::string comma = indent >= 0 ? "," : ", ";
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none:
    case Value::Kind::function: out += "null"; return;
    case Value::Kind::boolean: out += v.b ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.i); return;
    case Value::Kind::number:
      out += std::isfinite(v.d) ? float_text(v.d) : std::isnan(v.d) ? "NaN" : v.d > 0 ? "Infinity" : "-Infinity";
      return;
    case Value::Kind::string: json_string(out, v.s); return;
    case Value::Kind::array:
      if (v.a->empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (std::size_t k = 0; k < v.a->size(); ++k) {
        out += (k ? comma : "") + pad;
        json_value(out, (*v.a)[k], indent, depth + 1);
      }
      out += end + "]";
      return;
    case Value::Kind::object:
      if (v.o->empty()) {
        out += "{}";
        return;
      }
      out += "{";
      for (std::size_t k = 0; k < v.o->size(); ++k) {
        out += (k ? comma : "") + pad;
        json_string(out, (*v.o)[k].first);
        out += ": ";
        json_value(out, (*v.o)[k].second, indent, depth + 1);
      }
      out += end + "}";
      return;
  }
}
}  // namespace

std::string to_json(const Value& v, int indent) {
  std::string out;
  json_value(out, v, indent, 0);
  return out;
}

}  // namespace hpctrain::jinja
