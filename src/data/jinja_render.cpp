// Rendering a parsed Jinja template (jinja_ast.hpp): statements, expressions, scopes (a for
// loop's body and a macro's have their own, as in Jinja: a `set` inside stays inside, a
// namespace() carries values out), and the globals chat templates call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <unordered_map>

#include "hpctrain/core/error.hpp"
#include "jinja_ast.hpp"
#include "jinja_values.hpp"

namespace hpctrain::jinja {

namespace {

enum class Flow { normal, break_, continue_ };

// data/jinja.hpp's limits on a render (and kMaxValueDepth, kMaxText: jinja_values.hpp).
constexpr int kMaxCalls = 1000;           // expressions and statements inside each other
constexpr long long kMaxRange = 100'000;  // items of a range() (Jinja's sandbox: MAX_RANGE)

class Renderer {
 public:
  // (max_steps: 10 million by default, about 2 s here; Qwen3's template over 20,001 messages takes 0.14 s)
  Renderer(std::string origin, long long max_steps) : origin_(std::move(origin)), max_steps_(max_steps) {}

  std::string run(const Body& body, const Value& context) {
    scopes_.emplace_back();
    for (const char* f : {"raise_exception", "strftime_now", "namespace", "range", "dict"})
      scopes_.back()[f] = Value::function(f);  // (defined, as in transformers: `strftime_now is defined`)
    for (const auto& [k, v] : *context.o) scopes_.back()[k] = v;
    std::string out;
    exec(body, out);
    return out;
  }

 private:
  std::string where(int line) const { return origin_ + ": line " + std::to_string(line); }
  [[noreturn]] void fail(int line, const std::string& what) const { throw bad_input(where(line) + ": " + what); }

  Value lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      const auto it = s->find(name);
      if (it != s->end()) return it->second;
    }
    return Value();
  }

  // Counts `n` steps of work against max_steps_.
  void charge(long long n, int line) {
    steps_ += n;
    if (steps_ > max_steps_)
      fail(line, "the template ran more than " + std::to_string(max_steps_) + " steps: stopped (a loop without end?)");
  }
  // One level deeper for the time `f` runs (kMaxCalls), its work charged.
  template <typename F>
  auto deeper(int line, F f) {
    if (calls_ >= kMaxCalls)
      fail(line, "expressions and calls nested more than " + std::to_string(kMaxCalls) + " deep");
    charge(1, line);
    ++calls_;
    struct Up {
      int& calls;
      ~Up() { --calls; }
    } up{calls_};
    return f();
  }
  void check_text(std::size_t size, int line) const {
    if (size > kMaxText) fail(line, "a text over " + std::to_string(kMaxText >> 20) + " MiB");
  }
  // A value an expression gave: its text (copied, even by a lookup), its nesting, and when `built`
  // (a list, a mapping, a call's, a filter's or an operator's result, not a name's or member's,
  // which share their items) its items, charged and checked.
  Value made(Value v, int line, bool built) {
    if (v.is(Value::Kind::string)) check_text(v.s.size(), line), charge(static_cast<long long>(v.s.size() >> 8), line);
    if (v.depth > kMaxValueDepth)
      fail(line, "a value nested more than " + std::to_string(kMaxValueDepth) + " deep (lists, mappings)");
    if (built && (v.is(Value::Kind::array) || v.is(Value::Kind::object))) {  // (its items were copied: their text too)
      long long bytes = 0, n = 0;
      if (v.a)
        for (const Value& x : *v.a) bytes += static_cast<long long>(x.s.size()), ++n;
      if (v.o)
        for (const auto& kv : *v.o) bytes += static_cast<long long>(kv.first.size() + kv.second.s.size()), ++n;
      charge(n + (bytes >> 8), line);
    }
    return v;
  }
  void append(std::string& out, const std::string& text, int line) {
    check_text(out.size() + text.size(), line);
    out += text;
  }

  Flow exec(const Body& body, std::string& out) {
    for (const Node& n : body) {
      const Flow f = exec(n, out);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Flow exec(const Node& n, std::string& out) {
    return deeper(n.line, [&] { return run(n, out); });
  }
  Flow run(const Node& n, std::string& out) {
    switch (n.kind) {
      case Node::Kind::text: append(out, n.text, n.line); return Flow::normal;
      case Node::Kind::output: append(out, to_text(eval(*n.expr)), n.line); return Flow::normal;
      case Node::Kind::if_:
        for (const auto& [cond, body] : n.branches)
          if (truthy(eval(*cond))) return exec(body, out);
        return exec(n.else_body, out);
      case Node::Kind::for_: return loop(n, out);
      case Node::Kind::set: assign(n, eval(*n.expr)); return Flow::normal;
      case Node::Kind::set_block: {
        std::string text;
        exec(n.body, text);
        assign(n, Value::string(text));
        return Flow::normal;
      }
      case Node::Kind::macro: macros_[n.text] = &n; return Flow::normal;
      case Node::Kind::break_: return Flow::break_;
      case Node::Kind::continue_: return Flow::continue_;
      case Node::Kind::block: return exec(n.body, out);
    }
    return Flow::normal;
  }

  void assign(const Node& n, Value v) {
    if (n.targets.size() == 1) {
      scopes_.back()[n.targets[0]] = std::move(v);
      return;
    }
    Value ns = lookup(n.targets[0]);
    const std::string what = "set " + n.targets[0] + "." + n.targets[1];
    if (!ns.space) fail(n.line, what + ": not a namespace() (Jinja sets no other attributes)");
    no_namespace(v, n.line, what);
    ns.set(n.targets[1], std::move(v));
  }
  // (namespaces change: inside a list, a mapping or each other they could hold themselves)
  void no_namespace(const Value& v, int line, const std::string& where) const {
    if (v.space) fail(line, where + ": a namespace() inside a list, a mapping or another namespace is not supported");
  }

  // The items a for loop runs over: a list's, a mapping's keys, a string's characters.
  Array items(const Value& v, int line) {
    std::optional<Array> all = elements(v, where(line));
    if (!all) fail(line, "cannot loop over " + kind_name(v));
    charge(static_cast<long long>(all->size()), line);
    return std::move(*all);
  }

  void bind(const Node& n, const Value& item) {
    auto& scope = scopes_.back();
    if (n.targets.size() == 1) {
      scope[n.targets[0]] = item;
      return;
    }
    if (!item.is(Value::Kind::array) || item.a->size() != n.targets.size())
      fail(n.line, "cannot unpack " + kind_name(item) + " into " + std::to_string(n.targets.size()) + " names");
    for (std::size_t k = 0; k < n.targets.size(); ++k) scope[n.targets[k]] = (*item.a)[k];
  }

  Flow loop(const Node& n, std::string& out) {
    Array all = items(eval(*n.expr), n.line);
    scopes_.emplace_back();
    if (n.cond) {  // (the `if` filter runs before the loop: loop.length counts what passes)
      Array kept;
      for (const Value& item : all) {
        bind(n, item);
        if (truthy(eval(*n.cond))) kept.push_back(item);
      }
      all = std::move(kept);
    }
    const auto size = static_cast<long long>(all.size());
    for (long long k = 0; k < size; ++k) {
      const auto at = static_cast<std::size_t>(k);
      bind(n, all[at]);
      scopes_.back()["loop"] = Value::object({{"index", Value::integer(k + 1)},
                                              {"index0", Value::integer(k)},
                                              {"first", Value::boolean(k == 0)},
                                              {"last", Value::boolean(k + 1 == size)},
                                              {"length", Value::integer(size)},
                                              {"revindex", Value::integer(size - k)},
                                              {"revindex0", Value::integer(size - k - 1)},
                                              {"previtem", k > 0 ? all[at - 1] : Value()},
                                              {"nextitem", k + 1 < size ? all[at + 1] : Value()}});
      if (exec(n.body, out) == Flow::break_) break;
    }
    scopes_.pop_back();
    if (all.empty()) exec(n.else_body, out);
    return Flow::normal;
  }

  Value eval(const Expr& e) {
    const bool built = e.op == Expr::Op::list || e.op == Expr::Op::dict || e.op == Expr::Op::slice ||
                       e.op == Expr::Op::call || e.op == Expr::Op::filter || e.op == Expr::Op::binary;
    return deeper(e.line, [&] { return made(evaluate(e), e.line, built); });
  }
  Value evaluate(const Expr& e) {
    switch (e.op) {
      case Expr::Op::literal: return e.value;
      case Expr::Op::name: return lookup(e.name);
      case Expr::Op::list: {
        Array a;
        for (const auto& x : e.args) a.push_back(eval(*x)), no_namespace(a.back(), e.line, "[...]");
        return Value::array(std::move(a));
      }
      case Expr::Op::dict: {
        Object o;
        for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
          std::string key = to_text(eval(*e.args[k]));
          Value v = eval(*e.args[k + 1]);
          no_namespace(v, e.line, "{...}");
          put(o, std::move(key), std::move(v));
        }
        return Value::object(std::move(o));
      }
      case Expr::Op::attr: return member(eval(*e.args[0]), Value::string(e.name), e.line);
      case Expr::Op::index: return member(eval(*e.args[0]), eval(*e.args[1]), e.line);
      case Expr::Op::slice: return slice(e);
      case Expr::Op::call: return call(e);
      case Expr::Op::filter: return apply_filter(e.name, eval(*e.args[0]), rest(e), kwargs(e), where(e.line));
      case Expr::Op::test:
        return Value::boolean(apply_test(e.name, eval(*e.args[0]), rest(e), where(e.line)) != e.negate);
      case Expr::Op::unary: return unary(e);
      case Expr::Op::binary: return binary(e);
      case Expr::Op::cond: return truthy(eval(*e.args[1])) ? eval(*e.args[0]) : e.args[2] ? eval(*e.args[2]) : Value();
    }
    return Value();
  }

  std::vector<Value> rest(const Expr& e) {
    std::vector<Value> out;
    for (std::size_t k = 1; k < e.args.size(); ++k) out.push_back(eval(*e.args[k]));
    return out;
  }
  Kwargs kwargs(const Expr& e) {
    Kwargs out;
    for (const auto& [k, x] : e.kwargs) out.emplace_back(k, eval(*x));
    return out;
  }

  // v.key or v[key]: a mapping's member, a list's or string's item (negative from the end);
  // undefined when there is none.
  Value member(const Value& v, const Value& key, int line) {
    if (v.is(Value::Kind::object)) {
      const Value* m = v.find(to_text(key));
      return m ? *m : Value();
    }
    if (v.is(Value::Kind::string) && key.is(Value::Kind::integer)) return character(v.s, key.i);
    if (v.is(Value::Kind::array) && key.is(Value::Kind::integer)) {
      const Array& all = *v.a;
      const long long size = static_cast<long long>(all.size());
      const long long k = key.i < 0 ? key.i + size : key.i;
      return k < 0 || k >= size ? Value() : all[static_cast<std::size_t>(k)];
    }
    if (v.is(Value::Kind::undefined) || v.is(Value::Kind::none) || key.is(Value::Kind::string)) return Value();
    fail(line, "cannot index " + kind_name(v) + " with " + kind_name(key));
  }

  Value slice(const Expr& e) {
    const Value v = eval(*e.args[0]);
    const bool list = v.is(Value::Kind::array);
    if (!list && !v.is(Value::Kind::string)) fail(e.line, "cannot slice " + kind_name(v));
    const Array all = items(v, e.line);  // (a string's characters)
    const long long size = static_cast<long long>(all.size());
    long long part[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k)
      if (e.args[static_cast<std::size_t>(k) + 1]) {
        const Value x = eval(*e.args[static_cast<std::size_t>(k) + 1]);
        if (x.is(Value::Kind::none)) continue;
        if (!x.is(Value::Kind::integer)) fail(e.line, "a slice's bounds are integers");
        part[k] = x.i, given[k] = true;
      }
    const long long step = part[2];
    if (step == 0) fail(e.line, "a slice's step is not 0");
    auto clamp = [&](long long x, bool is_given, long long fallback) {
      if (!is_given) return fallback;
      if (x < 0) x += size;
      return step > 0 ? std::min(std::max(x, 0LL), size) : std::min(std::max(x, -1LL), size - 1);
    };
    const long long from = clamp(part[0], given[0], step > 0 ? 0 : size - 1);
    const long long to = clamp(part[1], given[1], step > 0 ? size : -1);
    Array a;
    std::string s;
    for (long long k = from; step > 0 ? k < to : k > to; k += step) {
      if (list)
        a.push_back(all[static_cast<std::size_t>(k)]);
      else
        s += all[static_cast<std::size_t>(k)].s;
    }
    return list ? Value::array(std::move(a)) : Value::string(std::move(s));
  }

  Value unary(const Expr& e) {
    const Value v = eval(*e.args[0]);
    if (e.name == "not") return Value::boolean(!truthy(v));
    if (v.is(Value::Kind::integer) && e.name == "-" && v.i == std::numeric_limits<long long>::min())
      fail(e.line, "the integer -(" + std::to_string(v.i) + ") is outside 64 bits");
    if (v.is(Value::Kind::integer)) return Value::integer(e.name == "-" ? -v.i : v.i);
    if (v.is(Value::Kind::number)) return Value::number(e.name == "-" ? -v.d : v.d);
    fail(e.line, "unary " + e.name + " of " + kind_name(v));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and" || op == "or") {  // (Python's: the deciding operand itself)
      Value a = eval(*e.args[0]);
      if (truthy(a) == (op == "or")) return a;
      return eval(*e.args[1]);
    }
    const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
    if (op == "==" || op == "!=") return Value::boolean(equal(a, b) == (op == "=="));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      const int c = order(a, b, where(e.line));
      return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
    }
    if (op == "in" || op == "not in") return Value::boolean(contains(b, a, e.line) == (op == "in"));
    if (op == "~") return Value::string(to_text(a) + to_text(b));
    return arithmetic(op, a, b, e.line);
  }

  bool contains(const Value& whole, const Value& part, int line) const {
    if (whole.is(Value::Kind::string)) {
      if (!part.is(Value::Kind::string)) fail(line, "'in <string>' needs a string, not " + kind_name(part));
      return whole.s.find(part.s) != std::string::npos;
    }
    if (whole.is(Value::Kind::array)) {
      for (const Value& x : *whole.a)
        if (equal(x, part)) return true;
      return false;
    }
    if (whole.is(Value::Kind::object)) return whole.find(to_text(part)) != nullptr;
    if (whole.is(Value::Kind::undefined) || whole.is(Value::Kind::none)) return false;
    fail(line, "'in' of " + kind_name(whole));
  }

  Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) const {
    if (op == "+" && a.is(Value::Kind::string) && b.is(Value::Kind::string)) return Value::string(a.s + b.s);
    if (op == "+" && a.is(Value::Kind::array) && b.is(Value::Kind::array)) {
      Array all = *a.a;
      all.insert(all.end(), b.a->begin(), b.a->end());
      return Value::array(std::move(all));
    }
    if (op == "*" && a.is(Value::Kind::string) && b.is(Value::Kind::integer)) {
      if (b.i > 0 && !a.s.empty())
        check_text(b.i > static_cast<long long>(kMaxText) ? kMaxText + 1 : a.s.size() * static_cast<std::size_t>(b.i),
                   line);
      std::string s;  // (doubled: log n appends, not n)
      const std::size_t size = b.i > 0 ? a.s.size() * static_cast<std::size_t>(b.i) : 0;
      s.reserve(size);
      if (size > 0) s = a.s;
      while (s.size() < size) s.append(s, 0, std::min(s.size(), size - s.size()));
      return Value::string(std::move(s));
    }
    if (!numeric(a) || !numeric(b))
      fail(line, "'" + op + "' of " + kind_name(a) + " and " + kind_name(b) + " (use ~ to join text)");
    const bool ints = a.is(Value::Kind::integer) && b.is(Value::Kind::integer);
    if (op == "**" && (!ints || b.i < 0)) return Value::number(std::pow(as_double(a), as_double(b)));
    if ((op == "//" || op == "%" || op == "/") && as_double(b) == 0) fail(line, "division by zero");
    if (ints && op != "/") return integer_arithmetic(op, a.i, b.i, line);
    const double x = as_double(a), y = as_double(b);
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "/") return Value::number(x / y);
    if (op == "//") return Value::number(std::floor(x / y));
    return Value::number(x - std::floor(x / y) * y);
  }

  // Python's integer + - * // % ** within 64 bits (bad_input past them: Python's are unbounded).
  Value integer_arithmetic(const std::string& op, long long x, long long y, int line) const {
    long long r = 0;
    bool over = false;
    if (op == "+") over = __builtin_add_overflow(x, y, &r);
    if (op == "-") over = __builtin_sub_overflow(x, y, &r);
    if (op == "*") over = __builtin_mul_overflow(x, y, &r);
    if (op == "**" && (x == 0 || x == 1 || x == -1)) r = x == 0 ? y == 0 : x == 1 || y % 2 == 0 ? 1 : -1;
    if (op == "**" && !(x == 0 || x == 1 || x == -1)) {  // (past 2^63 within 63 factors)
      r = 1;
      for (long long k = 0; k < y && !over; ++k) over = __builtin_mul_overflow(r, x, &r);
    }
    if (op == "//" || op == "%") {
      if (x == std::numeric_limits<long long>::min() && y == -1) over = true;
      const long long q = over ? 0 : x / y - ((x % y != 0 && (x < 0) != (y < 0)) ? 1 : 0);  // (Python's floor)
      r = op == "//" ? q : x - q * y;
    }
    if (over)
      fail(line, "the integer " + std::to_string(x) + " " + op + " " + std::to_string(y) + " is outside 64 bits");
    return Value::integer(r);
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.args[0];
    std::vector<Value> args = rest(e);
    if (callee.op == Expr::Op::attr) return call_method(eval(*callee.args[0]), callee.name, args, where(e.line));
    if (callee.op != Expr::Op::name) fail(e.line, "this value cannot be called");
    const auto macro = macros_.find(callee.name);
    if (macro != macros_.end()) return call_macro(*macro->second, args, kwargs(e), e.line);
    const Value function = lookup(callee.name);
    if (!function.is(Value::Kind::function)) fail(e.line, "'" + callee.name + "' is not a function");
    const std::string& f = function.s;
    if (f == "raise_exception") fail(e.line, "the template raised: " + (args.empty() ? "" : to_text(args[0])));
    if (f == "strftime_now" && args.size() == 1 && args[0].is(Value::Kind::string)) {
      const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      std::tm local{};
      localtime_r(&now, &local);
      char buf[256];
      return Value::string(std::string(buf, std::strftime(buf, sizeof buf, args[0].s.c_str(), &local)));
    }
    if (f == "namespace" || f == "dict") {
      Object o;
      for (auto& kw : kwargs(e)) {
        no_namespace(kw.second, e.line, f + "()");
        put(o, std::move(kw.first), std::move(kw.second));
      }
      Value made_object = Value::object(std::move(o));
      made_object.space = f == "namespace";
      return made_object;
    }
    if (f == "range") return range(args, e.line);
    fail(e.line, f + "() takes other arguments");
  }

  Value range(const std::vector<Value>& args, int line) const {
    long long p[3] = {0, 0, 1};
    for (const Value& a : args)
      if (!a.is(Value::Kind::integer)) fail(line, "range() takes integers");
    if (args.size() == 1) p[1] = args[0].i;
    if (args.size() >= 2) p[0] = args[0].i, p[1] = args[1].i;
    if (args.size() == 3) p[2] = args[2].i;
    if (args.empty() || args.size() > 3 || p[2] == 0) fail(line, "range() takes 1 to 3 integers, the step not 0");
    const long double count = (static_cast<long double>(p[1]) - static_cast<long double>(p[0])) / p[2];
    if (count > kMaxRange)
      fail(line, "range() of more than " + std::to_string(kMaxRange) + " items (Jinja's sandbox limit)");
    Array a;
    for (long long k = p[0]; p[2] > 0 ? k < p[1] : k > p[1]; k += p[2]) a.push_back(Value::integer(k));
    return Value::array(std::move(a));
  }

  Value call_macro(const Node& m, const std::vector<Value>& args, const Kwargs& given, int line) {
    if (args.size() > m.params.size())
      fail(line, m.text + "() takes " + std::to_string(m.params.size()) + " arguments");
    if (scopes_.size() > 200) fail(line, m.text + "() calls itself 200 deep: stopped");  // (not the stack)
    std::unordered_map<std::string, Value> scope;
    for (std::size_t k = 0; k < m.params.size(); ++k) {
      const auto& [name, fallback] = m.params[k];
      if (k < args.size()) {
        scope[name] = args[k];
        continue;
      }
      Value v = fallback ? eval(*fallback) : Value();
      for (const auto& [key, x] : given)
        if (key == name) v = x;
      scope[name] = v;
    }
    scopes_.push_back(std::move(scope));
    std::string out;
    exec(m.body, out);
    scopes_.pop_back();
    return Value::string(out);
  }

  std::string origin_;
  long long max_steps_, steps_ = 0;  // (charge())
  int calls_ = 0;                    // (deeper())
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::map<std::string, const Node*> macros_;
};

}  // namespace

Template::Template(const std::string& text, std::string origin)
    : program_(parse(text, origin)), origin_(std::move(origin)) {}

Template::~Template() = default;

std::string Template::render(const nlohmann::ordered_json& context, long long max_steps) const {
  Value c;
  try {
    c = from_json(context.is_object() ? context : nlohmann::ordered_json::object());
  } catch (const Error& e) {
    throw bad_input(origin_ + ": the variables: " + e.what());
  }
  return Renderer(origin_, max_steps).run(program_->body, c);
}

}  // namespace hpctrain::jinja
