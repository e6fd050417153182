// Jinja templates to their parsed form (jinja_ast.hpp): the text cut at {{ }}, {% %} and {# #}
// with Jinja's whitespace control (trim_blocks and lstrip_blocks on, as Hugging Face renders chat
// templates), each tag's tokens, and a recursive-descent parser with Jinja's precedence.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "hpctrain/core/error.hpp"
#include "jinja_ast.hpp"

namespace hpctrain::jinja {

namespace {

enum class PieceKind { text, expr, stmt, comment };
struct Piece {
  PieceKind kind;
  std::string text;
  int line;
};

// How deep a template may nest (data/jinja.hpp): brackets, calls and `not`/`-` chains in one tag,
// blocks in blocks, and an expression's operators in all (a chain `a + b + ... ` is as deep as its
// terms). Deeper templates are refused with one line, not run into the end of the stack.
constexpr int kMaxNesting = 100;
constexpr int kMaxExprDepth = 500;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Jinja's whitespace control on `text`, the text before the tag at `open` in `t`: `-` strips all
// white space; a block or comment tag with only spaces or tabs before it on its source line takes
// them (lstrip_blocks) unless `+`.
void strip_before(std::string& text, const std::string& t, std::size_t open, char mark, PieceKind kind) {
  if (mark == '-') {
    while (!text.empty() && is_space(text.back())) text.pop_back();
    return;
  }
  if (mark == '+' || kind == PieceKind::expr) return;
  std::size_t k = open;
  while (k > 0 && (t[k - 1] == ' ' || t[k - 1] == '\t')) --k;
  if (k == 0 || t[k - 1] == '\n') text.resize(text.size() - std::min(text.size(), open - k));
}

// The template cut into text and tags, white space controlled.
std::vector<Piece> cut(const std::string& t, const std::string& origin) {
  std::vector<Piece> out;
  std::size_t at = 0;
  int line = 1;
  bool strip_next = false, trim_next = false;
  auto add_text = [&](std::string s) {
    if (strip_next) {
      std::size_t k = 0;
      while (k < s.size() && is_space(s[k])) ++k;
      s.erase(0, k);
    } else if (trim_next && !s.empty() && s[0] == '\n') {
      s.erase(0, 1);
    } else if (trim_next && s.size() >= 2 && s[0] == '\r' && s[1] == '\n') {
      s.erase(0, 2);
    }
    out.push_back({PieceKind::text, std::move(s), line});
  };
  while (at <= t.size()) {
    std::size_t open = t.find('{', at);
    while (open != std::string::npos && open + 1 < t.size() && t[open + 1] != '{' && t[open + 1] != '%' &&
           t[open + 1] != '#')
      open = t.find('{', open + 1);
    if (open == std::string::npos || open + 1 >= t.size()) {
      add_text(t.substr(at));
      break;
    }
    add_text(t.substr(at, open - at));
    for (std::size_t k = at; k < open; ++k) line += t[k] == '\n';
    const char c = t[open + 1];
    const PieceKind kind = c == '{' ? PieceKind::expr : c == '%' ? PieceKind::stmt : PieceKind::comment;
    const std::string close = std::string(1, c == '{' ? '}' : c) + "}";
    std::size_t body = open + 2;
    const char mark = body < t.size() && (t[body] == '-' || t[body] == '+') ? t[body] : ' ';
    if (mark != ' ') ++body;
    const std::size_t end = t.find(close, body);
    if (end == std::string::npos) throw bad_input(origin + ": line " + std::to_string(line) + ": unclosed tag");
    std::size_t stop = end;
    const bool strip_after = stop > body && t[stop - 1] == '-', keep_after = stop > body && t[stop - 1] == '+';
    if (strip_after || keep_after) --stop;
    strip_before(out.back().text, t, open, mark, kind);
    if (kind != PieceKind::comment) out.push_back({kind, t.substr(body, stop - body), line});
    for (std::size_t k = open; k < end; ++k) line += t[k] == '\n';
    strip_next = strip_after;
    trim_next = kind != PieceKind::expr && !keep_after;  // (+%}: no trim_blocks)
    at = end + 2;
  }
  return out;
}

struct Token {
  enum class Kind { name, integer, number, string, op, end };
  Kind kind;
  std::string text;
  Value value;
};

std::string unescape(const std::string& s, std::size_t& at, char quote, const std::string& where) {
  std::string out;
  for (++at; at < s.size() && s[at] != quote; ++at) {
    if (s[at] != '\\' || at + 1 >= s.size()) {
      out += s[at];
      continue;
    }
    const char e = s[++at];
    out += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
  }
  if (at >= s.size()) throw bad_input(where + ": unterminated string");
  ++at;
  return out;
}

// An integer literal; Python's are unbounded, hpctrain's 64-bit (a float literal past a double's
// range is inf, as Python's float()).
long long integer_literal(const std::string& digits, const std::string& where) {
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) throw bad_input(where + ": the integer " + digits.substr(0, 40) + " is outside 64 bits");
  return v;
}

// One level of a recursive parse, counted in `depth` while it lasts.
struct Level {
  explicit Level(int& d) : depth(++d) {}
  ~Level() { --depth; }
  Level(const Level&) = delete;
  Level& operator=(const Level&) = delete;
  int& depth;
};

// The deepest path below `root` (without recursion: any depth).
int tree_depth(const Expr& root) {
  int deepest = 0;
  std::vector<std::pair<const Expr*, int>> todo{{&root, 1}};
  while (!todo.empty()) {
    const auto [e, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    for (const ExprPtr& a : e->args)
      if (a) todo.emplace_back(a.get(), d + 1);
    for (const auto& kw : e->kwargs) todo.emplace_back(kw.second.get(), d + 1);
  }
  return deepest;
}

std::vector<Token> tokenize(const std::string& s, const std::string& where) {
  static const char* const two[] = {"==", "!=", "<=", ">=", "//", "**"};
  std::vector<Token> out;
  std::size_t at = 0;
  while (true) {
    while (at < s.size() && is_space(s[at])) ++at;
    if (at >= s.size()) break;
    const char c = s[at];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t from = at;
      while (at < s.size() && (std::isalnum(static_cast<unsigned char>(s[at])) || s[at] == '_')) ++at;
      out.push_back({Token::Kind::name, s.substr(from, at - from), {}});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t from = at;
      while (at < s.size() && (std::isdigit(static_cast<unsigned char>(s[at])) || s[at] == '_')) ++at;
      const bool real = at + 1 < s.size() && s[at] == '.' && std::isdigit(static_cast<unsigned char>(s[at + 1]));
      if (real)
        for (++at; at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]));) ++at;
      std::string digits = s.substr(from, at - from);
      digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
      out.push_back(real ? Token{Token::Kind::number, digits, Value::number(std::strtod(digits.c_str(), nullptr))}
                         : Token{Token::Kind::integer, digits, Value::integer(integer_literal(digits, where))});
    } else if (c == '"' || c == '\'') {
      out.push_back({Token::Kind::string, "", Value::string(unescape(s, at, c, where))});
    } else {
      std::string op(1, c);
      for (const char* t : two)
        if (s.compare(at, 2, t) == 0) op = t;
      if (std::string("+-*/%~<>=()[]{},.:|!").find(c) == std::string::npos)
        throw bad_input(where + ": unexpected character '" + op + "'");
      at += op.size();
      out.push_back({Token::Kind::op, op, {}});
    }
  }
  out.push_back({Token::Kind::end, "", {}});
  return out;
}

// One tag's tokens and the expression grammar (Jinja's precedence, loosest first).
class ExprParser {
 public:
  ExprParser(const std::string& text, std::string where, int line)
      : where_(std::move(where)), line_(line), t_(tokenize(text, where_)) {}

  const Token& peek(std::size_t k = 0) const { return t_[std::min(at_ + k, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  bool is_op(const char* op) const { return peek().kind == Token::Kind::op && peek().text == op; }
  bool is_name(const char* n) const { return peek().kind == Token::Kind::name && peek().text == n; }
  bool accept_op(const char* op) { return is_op(op) ? (++at_, true) : false; }
  bool accept_name(const char* n) { return is_name(n) ? (++at_, true) : false; }
  [[noreturn]] void fail(const std::string& what) const {
    throw bad_input(where_ + ": " + what + (at_end() ? " at the end of the tag" : " at '" + token_text() + "'"));
  }
  std::string token_text() const {
    return peek().kind == Token::Kind::string ? "'" + peek().value.s + "'" : peek().text;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected '") + op + "'");
  }
  std::string name() {
    if (peek().kind != Token::Kind::name) fail("expected a name");
    return t_[at_++].text;
  }
  void expect_end() {
    if (!at_end()) fail("unexpected");
  }

  // A value without a trailing `if` (a for loop's, whose `if` filters the items).
  ExprPtr plain_expression() {
    return nested([&] { return or_expr(); });
  }
  ExprPtr expression() {  // a if b else c
    return nested([&] {
      ExprPtr e = or_expr();
      if (!accept_name("if")) return e;
      ExprPtr out = node(Expr::Op::cond);
      out->args.push_back(std::move(e));
      out->args.push_back(or_expr());
      out->args.push_back(accept_name("else") ? expression() : nullptr);
      return out;
    });
  }

 private:
  // Runs `parse` one level deeper (kMaxNesting); the outermost checks the tree's depth.
  template <typename F>
  ExprPtr nested(F parse) {
    if (depth_ >= kMaxNesting) fail("nested more than " + std::to_string(kMaxNesting) + " deep");
    const Level level(depth_);
    ExprPtr e = parse();
    if (depth_ == 1 && tree_depth(*e) > kMaxExprDepth)
      fail("an expression more than " + std::to_string(kMaxExprDepth) + " operations deep");
    return e;
  }

  ExprPtr node(Expr::Op op, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->op = op, e->name = std::move(name), e->line = line_;
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    ExprPtr e = node(Expr::Op::binary, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (accept_name("or")) e = binary("or", std::move(e), and_expr());
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (accept_name("and")) e = binary("and", std::move(e), not_expr());
    return e;
  }
  ExprPtr not_expr() {
    if (!accept_name("not")) return compare();
    ExprPtr e = node(Expr::Op::unary, "not");
    e->args.push_back(nested([&] { return not_expr(); }));
    return e;
  }
  // (Jinja's order: comparisons over + and -, over ~, over * / // %)
  ExprPtr compare() {
    ExprPtr e = sum();
    while (true) {
      static const char* const ops[] = {"==", "!=", "<", ">", "<=", ">="};
      std::string op;
      for (const char* o : ops)
        if (is_op(o)) op = o;
      if (!op.empty()) {
        ++at_;
      } else if (is_name("in")) {
        ++at_, op = "in";
      } else if (is_name("not") && peek(1).kind == Token::Kind::name && peek(1).text == "in") {
        at_ += 2, op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), sum());
    }
  }
  ExprPtr sum() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = t_[at_++].text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = product();
    while (accept_op("~")) e = binary("~", std::move(e), product());
    return e;
  }
  ExprPtr product() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = t_[at_++].text;
      e = binary(op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary();
    while (accept_op("**")) e = binary("**", std::move(e), unary());
    return e;
  }
  ExprPtr unary() { return filtered(signed_value()); }
  ExprPtr signed_value() {  // (-x|abs is (-x)|abs, as in Jinja)
    if (!is_op("-") && !is_op("+")) return postfix(primary());
    ExprPtr e = node(Expr::Op::unary, t_[at_++].text);
    e->args.push_back(nested([&] { return signed_value(); }));
    return e;
  }
  // | filter(args) and `is [not] test args`, left to right.
  ExprPtr filtered(ExprPtr e) {
    while (true) {
      if (accept_op("|")) {
        ExprPtr f = node(Expr::Op::filter, name());
        f->args.push_back(std::move(e));
        if (accept_op("(")) arguments(*f);
        e = postfix(std::move(f));
      } else if (accept_name("is")) {
        ExprPtr t = node(Expr::Op::test);
        t->negate = accept_name("not");
        t->name = name();
        t->args.push_back(std::move(e));
        if (accept_op("(")) {
          arguments(*t);
        } else if (peek().kind == Token::Kind::string || peek().kind == Token::Kind::integer ||
                   peek().kind == Token::Kind::number ||
                   (peek().kind == Token::Kind::name && !is_name("and") && !is_name("or") && !is_name("else") &&
                    !is_name("if"))) {
          t->args.push_back(primary());  // (is sameas false, is equalto 'x')
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  // Call arguments after "(": positional, then name=value.
  void arguments(Expr& call) {
    while (!accept_op(")")) {
      if (peek().kind == Token::Kind::name && peek(1).kind == Token::Kind::op && peek(1).text == "=") {
        std::string key = name();
        ++at_;
        call.kwargs.emplace_back(std::move(key), expression());
      } else {
        call.args.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
  }
  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (accept_op(".")) {
        ExprPtr a = node(Expr::Op::attr, peek().kind == Token::Kind::integer ? t_[at_++].text : name());
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (accept_op("[")) {
        e = subscript(std::move(e));
      } else if (accept_op("(")) {
        ExprPtr c = node(Expr::Op::call);
        c->args.push_back(std::move(e));
        arguments(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
  ExprPtr subscript(ExprPtr e) {
    ExprPtr parts[3];
    bool slice = false;
    for (int k = 0; k < 3; ++k) {
      if (!is_op(":") && !is_op("]")) parts[k] = expression();
      if (k < 2 && accept_op(":")) {
        slice = true;
      } else {
        break;
      }
    }
    if (!slice && !parts[0]) fail("expected a value in [ ]");  // (x[] as Jinja: a syntax error)
    expect_op("]");
    ExprPtr s = node(slice ? Expr::Op::slice : Expr::Op::index);
    s->args.push_back(std::move(e));
    for (int k = 0; k < (slice ? 3 : 1); ++k) s->args.push_back(std::move(parts[k]));
    return s;
  }
  ExprPtr primary() {
    const Token& t = peek();
    if (t.kind == Token::Kind::string) {  // adjacent strings join ('a' 'b')
      std::string s;
      while (peek().kind == Token::Kind::string) s += t_[at_++].value.s;
      ExprPtr e = node(Expr::Op::literal);
      e->value = Value::string(s);
      return e;
    }
    if (t.kind == Token::Kind::integer || t.kind == Token::Kind::number) {
      ExprPtr e = node(Expr::Op::literal);
      e->value = t_[at_++].value;
      return e;
    }
    if (t.kind == Token::Kind::name) return named(name());
    if (accept_op("(")) {
      ExprPtr e = expression();
      if (is_op(",")) {  // a tuple: a list here
        ExprPtr list = node(Expr::Op::list);
        list->args.push_back(std::move(e));
        while (accept_op(",") && !is_op(")")) list->args.push_back(expression());
        e = std::move(list);
      }
      expect_op(")");
      return e;
    }
    if (accept_op("[")) return sequence(Expr::Op::list, "]");
    if (accept_op("{")) return sequence(Expr::Op::dict, "}");
    fail("expected a value");
  }
  ExprPtr named(const std::string& n) {
    ExprPtr e = node(Expr::Op::literal);
    if (n == "true" || n == "True") {
      e->value = Value::boolean(true);
    } else if (n == "false" || n == "False") {
      e->value = Value::boolean(false);
    } else if (n == "none" || n == "None") {
      e->value = Value::none();
    } else {
      e->op = Expr::Op::name, e->name = n;
    }
    return e;
  }
  ExprPtr sequence(Expr::Op op, const char* close) {
    ExprPtr e = node(op);
    while (!accept_op(close)) {
      e->args.push_back(expression());
      if (op == Expr::Op::dict) {
        expect_op(":");
        e->args.push_back(expression());
      }
      if (!is_op(close)) expect_op(",");
    }
    return e;
  }

  std::string where_;
  int line_;
  std::vector<Token> t_;
  std::size_t at_ = 0;
  int depth_ = 0;  // (nested(): how deep the parse is)
};

// The statements: pieces in order, each block up to one of its end tags.
class Parser {
 public:
  Parser(std::vector<Piece> pieces, std::string origin) : p_(std::move(pieces)), origin_(std::move(origin)) {}

  Body all() { return block({}); }

 private:
  std::string where(int line) const { return origin_ + ": line " + std::to_string(line); }
  [[noreturn]] void fail(int line, const std::string& what) const { throw bad_input(where(line) + ": " + what); }

  // Nodes up to a statement whose keyword is in `ends` (left in keyword_ and ender_; at_ past it).
  Body block(const std::set<std::string>& ends) {
    const Level level(depth_);     // (blocks in blocks: kMaxNesting)
    if (depth_ > kMaxNesting + 1)  // (the template's own body is the first)
      fail(at_ ? p_[at_ - 1].line : 1, "blocks nested more than " + std::to_string(kMaxNesting) + " deep");
    Body out;
    while (at_ < p_.size()) {
      const Piece& piece = p_[at_++];
      Node n;
      n.line = piece.line;
      if (piece.kind == PieceKind::text) {
        if (piece.text.empty()) continue;
        n.text = piece.text;
      } else if (piece.kind == PieceKind::expr) {
        ExprParser e(piece.text, where(piece.line), piece.line);
        n.kind = Node::Kind::output, n.expr = e.expression();
        e.expect_end();
      } else {
        ender_ = std::make_unique<ExprParser>(piece.text, where(piece.line), piece.line);
        keyword_ = ender_->at_end() ? "" : ender_->name();
        if (ends.count(keyword_)) return out;
        statement(n, *ender_);
      }
      out.push_back(std::move(n));
    }
    if (!ends.empty()) fail(p_.empty() ? 1 : p_.back().line, "missing {% " + *ends.rbegin() + " %}");
    return out;
  }

  // Parses the statement whose keyword_ was read (`e` holds the rest of its tag: used before any
  // nested block, which replaces ender_).
  bool statement(Node& n, ExprParser& e) {
    const std::string k = keyword_;
    if (k == "if") return if_statement(n, e);
    if (k == "for") return for_statement(n, e);
    if (k == "set") return set_statement(n, e);
    if (k == "macro") return macro_statement(n, e);
    if (k == "break" || k == "continue") {
      n.kind = k == "break" ? Node::Kind::break_ : Node::Kind::continue_;
      e.expect_end();
      return true;
    }
    if (k == "generation") {  // (transformers' assistant-mask markers: the body as it is)
      e.expect_end();
      n.kind = Node::Kind::block;
      n.body = block({"endgeneration"});
      return true;
    }
    static const std::set<std::string> ends = {"endif",  "elif",     "else",         "endfor",
                                               "endset", "endmacro", "endgeneration"};
    if (ends.count(k)) fail(n.line, "'" + k + "' without its opening statement");
    fail(n.line, "the statement '" + k + "' is not supported (hpctrain's chat templates: data/jinja.hpp)");
  }

  bool if_statement(Node& n, ExprParser& e) {
    n.kind = Node::Kind::if_;
    ExprPtr cond = e.expression();
    e.expect_end();
    while (true) {
      Body body = block({"elif", "else", "endif"});
      n.branches.emplace_back(std::move(cond), std::move(body));
      if (keyword_ == "elif") {
        cond = ender_->expression();
        ender_->expect_end();
        continue;
      }
      ender_->expect_end();
      if (keyword_ == "else") {
        n.else_body = block({"endif"});
        ender_->expect_end();
      }
      return true;
    }
  }

  bool for_statement(Node& n, ExprParser& e) {
    n.kind = Node::Kind::for_;
    do n.targets.push_back(e.name());
    while (e.accept_op(","));
    if (!e.accept_name("in")) e.fail("expected 'in'");
    n.expr = e.plain_expression();
    if (e.accept_name("if")) n.cond = e.expression();
    if (e.accept_name("recursive")) e.fail("recursive loops are not supported");
    e.expect_end();
    n.body = block({"else", "endfor"});
    ender_->expect_end();
    if (keyword_ == "else") {
      n.else_body = block({"endfor"});
      ender_->expect_end();
    }
    return true;
  }

  bool set_statement(Node& n, ExprParser& e) {
    n.kind = Node::Kind::set;
    n.targets.push_back(e.name());
    if (e.accept_op(".")) n.targets.push_back(e.name());
    if (e.accept_op("=")) {
      n.expr = e.expression();
      e.expect_end();
      return true;
    }
    e.expect_end();  // {% set x %}...{% endset %}
    n.kind = Node::Kind::set_block;
    n.body = block({"endset"});
    ender_->expect_end();
    return true;
  }

  bool macro_statement(Node& n, ExprParser& e) {
    n.kind = Node::Kind::macro;
    n.text = e.name();
    e.expect_op("(");
    while (!e.accept_op(")")) {
      std::string param = e.name();
      n.params.emplace_back(std::move(param), e.accept_op("=") ? e.expression() : nullptr);
      if (!e.is_op(")")) e.expect_op(",");
    }
    e.expect_end();
    n.body = block({"endmacro"});
    return true;
  }

  std::vector<Piece> p_;
  std::string origin_;
  std::size_t at_ = 0;
  int depth_ = 0;  // (block(): how deep the blocks nest)
  std::string keyword_;
  std::unique_ptr<ExprParser> ender_;
};

}  // namespace

Expr::~Expr() {
  std::vector<ExprPtr> parts;  // (each taken apart before it goes: its own destructor finds no operands)
  const auto take = [&](Expr& e) {
    for (ExprPtr& a : e.args)
      if (a) parts.push_back(std::move(a));
    for (auto& kw : e.kwargs)
      if (kw.second) parts.push_back(std::move(kw.second));
  };
  take(*this);
  while (!parts.empty()) {
    ExprPtr e = std::move(parts.back());
    parts.pop_back();
    take(*e);
  }
}

std::unique_ptr<Program> parse(const std::string& text, const std::string& origin) {
  auto program = std::make_unique<Program>();
  // (Jinja's keep_trailing_newline = False: one newline at the end goes)
  const bool newline = !text.empty() && text.back() == '\n';
  program->body = Parser(cut(newline ? text.substr(0, text.size() - 1) : text, origin), origin).all();
  return program;
}

}  // namespace hpctrain::jinja
