// The Jinja subset Hugging Face chat templates are written in (tokenizer_config.json's
// chat_template), rendered as transformers' apply_chat_template renders them: trim_blocks and
// lstrip_blocks on, undefined names empty, raise_exception(), strftime_now() and namespace().
//
//   statements  if / elif / else, for (tuple targets, an `if` filter, else, loop.index, index0,
//               first, last, length, revindex, revindex0, previtem, nextitem), set (names,
//               namespace attributes, the block form), macro and its calls, break, continue,
//               generation (its body as it is), comments, whitespace control ({%- -%}, {{- -}})
//   expressions literals, lists, dicts, attributes, subscripts, slices ([::-1]), calls, filters,
//               tests (is / is not), not, and, or, in, not in, comparisons, + - * / // % ~,
//               a if c else b
//   filters     abs capitalize count default d first float int items join last length list lower
//               map reject rejectattr replace reverse safe select selectattr string title tojson
//               trim unique upper
//   methods     strings: capitalize endswith find join lower lstrip replace rstrip split
//               startswith strip title upper; mappings: get items keys values
//
// Anything else is one line naming the template (origin), the line and what is not supported.
//
// Templates come with downloaded models, so a template cannot hang, crash or fill memory: one line
// refuses (as Jinja's sandbox, which transformers renders with, refuses some of these) a range()
// over 100,000 items, an integer past 64 bits (Python's are unbounded), a text over 16 MiB, a
// text over 1 MiB taken character by character (a loop over it, | list, a slice; its length and
// s[k] are fine), a value nested over 100 deep, brackets or blocks over 100 deep, an expression
// over 500 operations deep, expressions and calls inside each other over 1,000 deep (a macro
// calling itself: 200), attributes set on anything but a namespace() or a namespace put inside a
// list, a mapping or another namespace, and a render over 10 million steps (a step: an expression
// or statement run, an item copied, 256 bytes of text made).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpctrain::jinja {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // (insertion order, as Python's dict)

// A template value: shared arrays and objects (a namespace() is changed through any copy).
struct Value {
  enum class Kind { undefined, none, boolean, integer, number, string, array, object, function };
  Kind kind = Kind::undefined;
  bool space = false;  // an object made by namespace(): the only kind whose attributes `set` changes
  int depth = 0;       // a list's or mapping's nesting: 1 + its items' deepest (a namespace's: 1)
  bool b = false;
  long long i = 0;
  double d = 0;
  std::string s;
  std::shared_ptr<Array> a;
  std::shared_ptr<Object> o;

  static Value none() { return of(Kind::none); }
  static Value boolean(bool v) {
    return with(Kind::boolean, [&](Value& x) { x.b = v; });
  }
  static Value integer(long long v) {
    return with(Kind::integer, [&](Value& x) { x.i = v; });
  }
  static Value number(double v) {
    return with(Kind::number, [&](Value& x) { x.d = v; });
  }
  static Value string(std::string v) {
    return with(Kind::string, [&](Value& x) { x.s = std::move(v); });
  }
  // A global function (raise_exception, strftime_now, namespace, range, dict), by name in `s`.
  static Value function(std::string name) {
    return with(Kind::function, [&](Value& x) { x.s = std::move(name); });
  }
  static Value array(Array v = {}) {
    return with(Kind::array, [&](Value& x) {
      for (const Value& item : v) x.depth = std::max(x.depth, item.depth);
      ++x.depth;
      x.a = std::make_shared<Array>(std::move(v));
    });
  }
  static Value object(Object v = {}) {
    return with(Kind::object, [&](Value& x) {
      for (const auto& item : v) x.depth = std::max(x.depth, item.second.depth);
      ++x.depth;
      x.o = std::make_shared<Object>(std::move(v));
    });
  }
  bool is(Kind k) const { return kind == k; }
  // An object's member (nullptr when absent or not an object).
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);  // (an object's member, added or replaced)

 private:
  static Value of(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
  template <typename F>
  static Value with(Kind k, F f) {
    Value v = of(k);
    f(v);
    return v;
  }
};

// bad_input when a member of `j` (the variables' object) nests more than 100 deep (data/jinja.hpp's
// limit on values).
Value from_json(const nlohmann::ordered_json& j);
// o[key] = v: the member replaced, or added last (Python's dict).
void put(Object& o, std::string key, Value v);
// Python's str() of a value as Jinja prints it (None, True, 1.0, ['a', 1], {'k': 'v'}).
std::string to_text(const Value& v);
bool truthy(const Value& v);

struct Program;

class Template {
 public:
  // bad_input naming `origin` and the line for a syntax error or an unsupported statement.
  Template(const std::string& text, std::string origin);
  ~Template();
  Template(const Template&) = delete;
  Template& operator=(const Template&) = delete;
  // The text for the variables of `context` (a JSON object); bad_input naming `origin` and the line
  // for raise_exception(), an unsupported filter, test or method, or an operation on wrong types.
  // `max_steps`: the work it may do (data/jinja.hpp's limits; 10 million: about 1-2 s here).
  std::string render(const nlohmann::ordered_json& context, long long max_steps = 10'000'000) const;

 private:
  std::unique_ptr<Program> program_;
  std::string origin_;
};

}  // namespace hpctrain::jinja
