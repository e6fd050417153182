// Jinja's filters and tests, and the Python string and dict methods chat templates call
// (data/jinja.hpp lists them), each as Jinja and Python define it.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "hpctrain/core/error.hpp"
#include "jinja_values.hpp"

namespace hpctrain::jinja {

namespace {

const char* const kWhite = " \t\n\r\f\v";

std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  const std::size_t from = left ? s.find_first_not_of(chars) : 0;
  if (from == std::string::npos) return "";
  const std::size_t to = right ? s.find_last_not_of(chars) : s.size() - 1;
  return s.substr(from, to - from + 1);
}

std::string cased(std::string s, int (*f)(int)) {
  for (char& c : s) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = cased(s, [](int c) { return std::tolower(c); });
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string title(std::string s) {
  bool start = true;
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
    start = !std::isalnum(u);
  }
  return s;
}

// (built left to right: linear in the text, and refused past kMaxText)
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, long long count,
                        const std::string& where) {
  if (from.empty()) return s;
  std::string out;
  std::size_t done = 0;
  for (std::size_t at = s.find(from); at != std::string::npos && count != 0; at = s.find(from, done), --count) {
    out.append(s, done, at - done).append(to);
    done = at + from.size();
    if (out.size() > kMaxText)
      throw bad_input(where + ": replace() makes a text over " + std::to_string(kMaxText >> 20) + " MiB");
  }
  return out.append(s, done, std::string::npos);
}

Value split(const std::string& s, const Value* sep, long long most, const std::string& where) {
  if (sep && !sep->is(Value::Kind::none) && (!sep->is(Value::Kind::string) || sep->s.empty()))
    throw bad_input(where + ": split() of " + (sep->is(Value::Kind::string) ? "an empty separator" : kind_name(*sep)) +
                    " (Python's is a text or None)");
  Array out;
  if (!sep || sep->is(Value::Kind::none)) {  // runs of white space, none at the ends
    std::size_t at = s.find_first_not_of(kWhite);
    while (at != std::string::npos) {
      if (most-- == 0) {
        out.push_back(Value::string(strip(s.substr(at), kWhite, false, true)));
        break;
      }
      const std::size_t end = s.find_first_of(kWhite, at);
      out.push_back(Value::string(s.substr(at, end == std::string::npos ? std::string::npos : end - at)));
      at = end == std::string::npos ? end : s.find_first_not_of(kWhite, end);
    }
    return Value::array(std::move(out));
  }
  std::size_t at = 0;
  for (std::size_t end; most-- != 0 && (end = s.find(sep->s, at)) != std::string::npos; at = end + sep->s.size())
    out.push_back(Value::string(s.substr(at, end - at)));
  out.push_back(Value::string(s.substr(at)));
  return Value::array(std::move(out));
}

[[noreturn]] void wrong(const std::string& where, const std::string& what, const Value& v) {
  throw bad_input(where + ": " + what + " of " + kind_name(v));
}

const Value* kwarg(const Kwargs& kw, const char* name) {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

// The positional argument k, else the keyword `name`, else nullptr.
const Value* argument(const std::vector<Value>& args, const Kwargs& kw, std::size_t k, const char* name) {
  return k < args.size() ? &args[k] : kwarg(kw, name);
}

Array as_list(const Value& v, const std::string& where, const char* what) {
  std::optional<Array> all = elements(v, where);
  if (!all) wrong(where, what, v);
  return std::move(*all);
}

long long length(const Value& v, const std::string& where) {
  if (v.is(Value::Kind::string)) return code_points(v.s);
  if (v.is(Value::Kind::array)) return static_cast<long long>(v.a->size());
  if (v.is(Value::Kind::object)) return static_cast<long long>(v.o->size());
  if (v.is(Value::Kind::undefined)) return 0;
  wrong(where, "length", v);
}

Value items_of(const Value& v) {
  Array out;
  for (const auto& [k, x] : *v.o) out.push_back(Value::array({Value::string(k), x}));
  return Value::array(std::move(out));
}

// select / reject / selectattr / rejectattr / map: the items passing a test, or their attribute.
Value pick(const std::string& name, const Value& v, const std::vector<Value>& args, const Kwargs& kw,
           const std::string& where) {
  Array out;
  const bool attr = name == "selectattr" || name == "rejectattr";
  const bool keep = name == "select" || name == "selectattr";
  for (const Value& item : as_list(v, where, name.c_str())) {
    if (name == "map") {
      const Value* a = kwarg(kw, "attribute");
      if (a) {
        const Value* m = item.find(to_text(*a));
        out.push_back(m ? *m : Value());
      } else {
        if (args.empty()) throw bad_input(where + ": map() needs a filter name or attribute=");
        out.push_back(apply_filter(to_text(args[0]), item, {args.begin() + 1, args.end()}, {}, where));
      }
      continue;
    }
    const std::size_t first = attr ? 1 : 0;
    const Value* field = attr && !args.empty() ? item.find(to_text(args[0])) : nullptr;
    const Value subject = attr ? (field ? *field : Value()) : item;
    const bool passed = args.size() > first
                            ? apply_test(to_text(args[first]), subject,
                                         {args.begin() + static_cast<long>(first) + 1, args.end()}, where)
                            : truthy(subject);
    if (passed == keep) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Value text_filter(const std::string& name, const Value& v, const std::vector<Value>& args, const std::string& where) {
  if (!v.is(Value::Kind::string)) wrong(where, name, v);
  if (name == "trim") return Value::string(strip(v.s, args.empty() ? kWhite : to_text(args[0]), true, true));
  if (name == "upper") return Value::string(cased(v.s, [](int c) { return std::toupper(c); }));
  if (name == "lower") return Value::string(cased(v.s, [](int c) { return std::tolower(c); }));
  if (name == "capitalize") return Value::string(capitalize(v.s));
  if (name == "title") return Value::string(title(v.s));
  if (args.size() < 2) throw bad_input(where + ": replace() needs the old and new text");
  return Value::string(replace_all(v.s, to_text(args[0]), to_text(args[1]),
                                   args.size() > 2 && args[2].is(Value::Kind::integer) ? args[2].i : -1, where));
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const std::vector<Value>& args, const Kwargs& kw,
                   const std::string& where) {
  if (name == "trim" || name == "upper" || name == "lower" || name == "capitalize" || name == "title" ||
      name == "replace")
    return text_filter(name, v, args, where);
  if (name == "safe") return v;
  if (name == "string") return Value::string(to_text(v));
  if (name == "length" || name == "count") return Value::integer(length(v, where));
  if (name == "tojson") {
    const Value* indent = argument(args, kw, 0, "indent");
    const bool given = indent && indent->is(Value::Kind::integer);
    if (given && indent->i > 1000) throw bad_input(where + ": tojson's indent over 1000");
    return Value::string(to_json(v, given ? static_cast<int>(indent->i) : -1));
  }
  if (name == "default" || name == "d") {
    const Value* boolean = argument(args, kw, 1, "boolean");
    const bool missing = v.is(Value::Kind::undefined) || (boolean && truthy(*boolean) && !truthy(v));
    return missing ? (args.empty() ? Value::string("") : args[0]) : v;
  }
  if (name == "first" || name == "last") {
    const Array a = as_list(v, where, name.c_str());
    return a.empty() ? Value() : name == "first" ? a.front() : a.back();
  }
  if (name == "list") return Value::array(as_list(v, where, "list"));
  if (name == "reverse") {
    Array a = as_list(v, where, "reverse");
    std::reverse(a.begin(), a.end());
    if (v.is(Value::Kind::string)) return apply_filter("join", Value::array(std::move(a)), {}, {}, where);
    return Value::array(std::move(a));
  }
  if (name == "unique") {
    Array out;
    for (const Value& x : as_list(v, where, "unique"))
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); })) out.push_back(x);
    return Value::array(std::move(out));
  }
  if (name == "join") {
    const Value* sep = argument(args, kw, 0, "d");
    std::string out;
    const Array a = as_list(v, where, "join");
    for (std::size_t k = 0; k < a.size(); ++k) out += (k && sep ? to_text(*sep) : "") + to_text(a[k]);
    return Value::string(out);
  }
  if (name == "items") {
    if (!v.is(Value::Kind::object)) wrong(where, "items", v);
    return items_of(v);
  }
  if (name == "int") {
    if (v.is(Value::Kind::string)) {
      errno = 0;
      const long long i = std::strtoll(v.s.c_str(), nullptr, 10);
      if (errno == ERANGE) throw bad_input(where + ": int() of '" + v.s.substr(0, 40) + "': outside 64 bits");
      return Value::integer(i);
    }
    if (!numeric(v) || v.is(Value::Kind::integer)) return Value::integer(numeric(v) ? v.i : 0);
    if (!(std::fabs(v.d) < 9.2e18)) throw bad_input(where + ": int() of " + float_text(v.d) + ": outside 64 bits");
    return Value::integer(static_cast<long long>(v.d));
  }
  if (name == "float")
    return Value::number(v.is(Value::Kind::string) ? std::atof(v.s.c_str()) : numeric(v) ? as_double(v) : 0.0);
  if (name == "abs") {
    if (!numeric(v)) wrong(where, "abs", v);
    if (v.is(Value::Kind::integer) && v.i == std::numeric_limits<long long>::min())
      throw bad_input(where + ": abs() of " + std::to_string(v.i) + ": outside 64 bits");
    return v.is(Value::Kind::integer) ? Value::integer(v.i < 0 ? -v.i : v.i) : Value::number(std::fabs(v.d));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr" || name == "map")
    return pick(name, v, args, kw, where);
  throw bad_input(where + ": the filter '" + name + "' is not supported (hpctrain's chat templates: data/jinja.hpp)");
}

bool apply_test(const std::string& name, const Value& v, const std::vector<Value>& args, const std::string& where) {
  using K = Value::Kind;
  if (name == "defined") return !v.is(K::undefined);
  if (name == "undefined") return v.is(K::undefined);
  if (name == "none") return v.is(K::none);
  if (name == "string") return v.is(K::string);
  if (name == "number") return numeric(v);
  if (name == "integer") return v.is(K::integer);
  if (name == "float") return v.is(K::number);
  if (name == "boolean") return v.is(K::boolean);
  if (name == "true") return v.is(K::boolean) && v.b;
  if (name == "false") return v.is(K::boolean) && !v.b;
  if (name == "mapping") return v.is(K::object);
  if (name == "sequence") return v.is(K::array) || v.is(K::string) || v.is(K::object);
  if (name == "iterable") return v.is(K::array) || v.is(K::string) || v.is(K::object);
  if (name == "callable") return v.is(K::function);
  if (name == "lower" || name == "upper")
    return v.is(K::string) && v.s == cased(
                                         v.s, name == "lower" ? +[](int c) { return std::tolower(c); }
                                                              : +[](int c) { return std::toupper(c); });
  if (name == "even" || name == "odd") return v.is(K::integer) && (v.i % 2 == 0) == (name == "even");
  if (args.empty()) throw bad_input(where + ": the test '" + name + "' is not supported or needs an argument");
  const Value& x = args[0];
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return equal(v, x);
  if (name == "ne" || name == "!=") return !equal(v, x);
  if (name == "lt" || name == "<") return order(v, x, where) < 0;
  if (name == "gt" || name == ">") return order(v, x, where) > 0;
  if (name == "le" || name == "<=") return order(v, x, where) <= 0;
  if (name == "ge" || name == ">=") return order(v, x, where) >= 0;
  if (name == "in")
    return x.is(K::array) ? std::any_of(x.a->begin(), x.a->end(), [&](const Value& y) { return equal(v, y); })
           : x.is(K::string) && v.is(K::string) ? x.s.find(v.s) != std::string::npos
                                                : x.find(to_text(v)) != nullptr;
  if (name == "divisibleby") return v.is(K::integer) && x.is(K::integer) && x.i != 0 && v.i % x.i == 0;
  throw bad_input(where + ": the test '" + name + "' is not supported (hpctrain's chat templates: data/jinja.hpp)");
}

Value call_method(const Value& self, const std::string& name, const std::vector<Value>& args,
                  const std::string& where) {
  const auto text = [&](std::size_t k) { return k < args.size() ? to_text(args[k]) : std::string(); };
  if (self.is(Value::Kind::object)) {
    if (name == "items") return items_of(self);
    if (name == "keys" || name == "values") {
      Array out;
      for (const auto& [k, x] : *self.o) out.push_back(name == "keys" ? Value::string(k) : x);
      return Value::array(std::move(out));
    }
    if (name == "get") {
      const Value* m = args.empty() ? nullptr : self.find(text(0));
      return m ? *m : args.size() > 1 ? args[1] : Value::none();
    }
  }
  if (self.is(Value::Kind::string)) {
    const std::string& s = self.s;
    const std::string chars = args.empty() || args[0].is(Value::Kind::none) ? kWhite : text(0);
    if (name == "strip" || name == "lstrip" || name == "rstrip")
      return Value::string(strip(s, chars, name != "rstrip", name != "lstrip"));
    if (name == "startswith" || name == "endswith") {
      const std::vector<Value> options = !args.empty() && args[0].is(Value::Kind::array) ? *args[0].a : args;
      for (const Value& o : options) {
        const std::string& p = o.s;
        if (p.size() <= s.size() &&
            (name == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0))
          return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") return split(s, args.empty() ? nullptr : &args[0], args.size() > 1 ? args[1].i : -1, where);
    if (name == "find") {
      const std::size_t at = s.find(text(0));
      return Value::integer(at == std::string::npos ? -1 : static_cast<long long>(at));
    }
    if (name == "join") {
      std::string out;
      const Array a = args.empty() ? Array() : as_list(args[0], where, "join");
      for (std::size_t k = 0; k < a.size(); ++k) out += (k ? s : "") + to_text(a[k]);
      return Value::string(out);
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title" || name == "replace")
      return text_filter(name, self, args, where);
  }
  throw bad_input(where + ": " + kind_name(self) + " has no method '" + name +
                  "' hpctrain's chat templates know (data/jinja.hpp)");
}

}  // namespace hpctrain::jinja
