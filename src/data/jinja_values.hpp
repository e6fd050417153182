// Helpers on Jinja values (data/jinja.hpp) that the renderer and the filters share.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/data/jinja.hpp"

namespace hpctrain::jinja {

// data/jinja.hpp's limits that the renderer and the filters share.
constexpr int kMaxValueDepth = 100;               // lists and mappings in each other
constexpr std::size_t kMaxText = 16u << 20;       // bytes in one text (and in the output)
constexpr std::size_t kMaxCharacters = 1u << 20;  // bytes of a text taken character by character

std::string float_text(double d);       // Python's repr() of a float
std::string repr(const Value& v);       // Python's repr() ('text' quoted, the rest as to_text)
std::string kind_name(const Value& v);  // "a string", "a list", ... for messages
// A string's characters (Python's: code points), each as its UTF-8 bytes, and their number.
std::vector<std::string> characters(const std::string& s);
long long code_points(const std::string& s);
// s[k]: the k-th character (from the end when negative; undefined past either end), found without
// taking s apart.
Value character(const std::string& s, long long k);
// What iterating `v` gives, as Jinja's for and the list filters see it: a list's items, a
// string's characters, a mapping's keys, nothing for undefined or none; nullopt for the rest.
// bad_input naming `where` for a text over kMaxCharacters.
std::optional<Array> elements(const Value& v, const std::string& where);
bool numeric(const Value& v);  // an integer or a number
double as_double(const Value& v);
bool equal(const Value& a, const Value& b);  // Python's ==
// -1, 0, 1 for numbers or strings; bad_input naming `where` for others.
int order(const Value& a, const Value& b, const std::string& where);
// json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none, separators ", " and ": ").
std::string to_json(const Value& v, int indent);

using Kwargs = std::vector<std::pair<std::string, Value>>;

// jinja_builtins.cpp: filters (v | name(args, kwargs)), tests (v is name args) and methods
// (self.name(args)); bad_input naming `where` for an unknown name or arguments of the wrong kind.
Value apply_filter(const std::string& name, const Value& v, const std::vector<Value>& args, const Kwargs& kwargs,
                   const std::string& where);
bool apply_test(const std::string& name, const Value& v, const std::vector<Value>& args, const std::string& where);
Value call_method(const Value& self, const std::string& name, const std::vector<Value>& args, const std::string& where);

}  // namespace hpctrain::jinja
