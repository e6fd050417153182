// The parsed form of a Jinja template (data/jinja.hpp): jinja_parse.cpp makes it, jinja_render.cpp
// runs it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/data/jinja.hpp"

namespace hpctrain::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One expression node; `args` are its operands in the order each kind lists.
struct Expr {
  enum class Op {
    literal,  // value
    name,     // name
    list,     // args: the items
    dict,     // args: key, value, key, value, ...
    attr,     // args[0].name
    index,    // args[0][args[1]]
    slice,    // args[0][args[1] : args[2] : args[3]] (null when left out)
    call,     // args[0](args[1..], kwargs)
    filter,   // args[0] | name(args[1..], kwargs)
    test,     // args[0] is [not] name args[1..]
    unary,    // name ("not", "-", "+") args[0]
    binary,   // args[0] name args[1] (or, and, ==, in, not in, +, ~, ...)
    cond,     // args[0] if args[1] else args[2] (null: undefined)
  };
  Op op = Op::literal;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negate = false;  // is not
  int line = 1;
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  ~Expr();  // (takes its operands apart without recursion: a chain `1 ~ 1 ~ ...` may be any depth)
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { text, output, if_, for_, set, set_block, macro, break_, continue_, block };
  Kind kind = Kind::text;
  std::string text;                                // text; macro: its name
  ExprPtr expr;                                    // output, set: the value; for: what it runs over
  ExprPtr cond;                                    // for: the `if` filter
  std::vector<std::string> targets;                // for: the loop variables; set: a name, or namespace and attribute
  std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif
  Body body, else_body;                            // for, if (else), set_block, macro, block
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro: its parameters and defaults (null: none)
  int line = 1;
};

struct Program {
  Body body;
};

// Parses `text`; bad_input naming `origin` and the line on a syntax error.
std::unique_ptr<Program> parse(const std::string& text, const std::string& origin);

}  // namespace hpctrain::jinja
