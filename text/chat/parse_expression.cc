// expression half of the parser: jinja2's precedence climbing, lowest first.
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/parser.h"

namespace tandem::chat {

ExprPtr Parser::makeExpr(Expr::Kind kind, size_t pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

absl::StatusOr<ExprPtr> Parser::parseTuple(bool with_condexpr, bool in_parens,
                                           const std::vector<std::string_view>& end_names) {
  size_t pos = peek().pos;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) RETURN_IF_ERROR(expectOp(","));
    const Token& t = peek();
    bool at_end = t.kind == Token::Kind::kVarEnd || t.kind == Token::Kind::kBlockEnd ||
                  isOp(")") || (t.kind == Token::Kind::kName && (t.text == "if" && !with_condexpr));
    for (std::string_view n : end_names) at_end = at_end || isName(n);
    if (at_end) break;
    ASSIGN_OR_RETURN(ExprPtr item, parseExpression(with_condexpr));
    items.push_back(std::move(item));
    if (!isOp(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!in_parens) return error(absl::StrCat("expected an expression"), pos);
  }
  auto e = makeExpr(Expr::Kind::kTuple, pos);
  e->children = std::move(items);
  return e;
}

absl::StatusOr<ExprPtr> Parser::parseExpression(bool with_condexpr) {
  return with_condexpr ? parseCondition() : parseOr();
}

absl::StatusOr<ExprPtr> Parser::parseCondition() {
  ASSIGN_OR_RETURN(ExprPtr expr, parseOr());
  while (isName("if")) {
    size_t pos = next().pos;
    auto cond = makeExpr(Expr::Kind::kCondition, pos);
    cond->children.push_back(std::move(expr));
    ASSIGN_OR_RETURN(ExprPtr test, parseOr());
    cond->children.push_back(std::move(test));
    if (isName("else")) {
      next();
      ASSIGN_OR_RETURN(ExprPtr other, parseCondition());
      cond->children.push_back(std::move(other));
    } else {
      cond->children.push_back(nullptr);
    }
    expr = std::move(cond);
  }
  return expr;
}

absl::StatusOr<ExprPtr> Parser::parseKeywordLevel(std::string_view keyword, Expr::Kind kind,
                                                  absl::StatusOr<ExprPtr> (Parser::*operand)()) {
  ASSIGN_OR_RETURN(ExprPtr left, (this->*operand)());
  while (isName(keyword)) {
    auto e = makeExpr(kind, next().pos);
    ASSIGN_OR_RETURN(ExprPtr right, (this->*operand)());
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    left = std::move(e);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::parseOr() {
  return parseKeywordLevel("or", Expr::Kind::kOr, &Parser::parseAnd);
}

absl::StatusOr<ExprPtr> Parser::parseAnd() {
  return parseKeywordLevel("and", Expr::Kind::kAnd, &Parser::parseNot);
}

absl::StatusOr<ExprPtr> Parser::parseNot() {
  if (isName("not")) {
    DepthGuard guard(this);
    if (guard.tooDeep()) return error("expression nesting too deep", peek().pos);
    auto e = makeExpr(Expr::Kind::kUnary, next().pos);
    e->name = "not";
    ASSIGN_OR_RETURN(ExprPtr operand, parseNot());
    e->children.push_back(std::move(operand));
    return e;
  }
  return parseCompare();
}

absl::StatusOr<ExprPtr> Parser::parseCompare() {
  size_t pos = peek().pos;
  ASSIGN_OR_RETURN(ExprPtr first, parseMath1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Token& t = peek();
    if (t.kind == Token::Kind::kOp &&
        (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" ||
         t.text == ">=")) {
      op = t.text;
      next();
    } else if (isName("in")) {
      op = "in";
      next();
    } else if (isName("not") && isName("in", 1)) {
      op = "notin";
      next();
      next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = makeExpr(Expr::Kind::kCompare, pos);
      cmp->children.push_back(std::move(first));
    }
    ASSIGN_OR_RETURN(ExprPtr right, parseMath1());
    cmp->ops.push_back(op);
    cmp->children.push_back(std::move(right));
  }
  return cmp ? std::move(cmp) : std::move(first);
}

namespace {
// one left-associative binary precedence level.
template <typename Next>
absl::StatusOr<ExprPtr> binaryLevel(Parser* p, Next next_level,
                                    const std::vector<std::string_view>& ops,
                                    const std::function<bool(std::string_view)>& is_op,
                                    const std::function<size_t()>& consume) {
  ASSIGN_OR_RETURN(ExprPtr left, next_level());
  while (true) {
    std::string_view found;
    for (std::string_view op : ops) {
      if (is_op(op)) found = op;
    }
    if (found.empty()) return left;
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kBinary;
    e->name = std::string(found);
    e->pos = consume();
    ASSIGN_OR_RETURN(ExprPtr right, next_level());
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    left = std::move(e);
  }
}
}  // namespace

#define TANDEM_BINARY_LEVEL(next_call, ...)                                   \
  binaryLevel(                                                                \
      this, [&] { return next_call; }, {__VA_ARGS__},                         \
      [&](std::string_view op) { return isOp(op); }, [&] { return next().pos; })

absl::StatusOr<ExprPtr> Parser::parseMath1() { return TANDEM_BINARY_LEVEL(parseConcat(), "+", "-"); }
absl::StatusOr<ExprPtr> Parser::parseConcat() { return TANDEM_BINARY_LEVEL(parseMath2(), "~"); }
absl::StatusOr<ExprPtr> Parser::parseMath2() {
  return TANDEM_BINARY_LEVEL(parsePow(), "*", "/", "//", "%");
}
absl::StatusOr<ExprPtr> Parser::parsePow() { return TANDEM_BINARY_LEVEL(parseUnary(true), "**"); }

#undef TANDEM_BINARY_LEVEL

absl::StatusOr<ExprPtr> Parser::parseUnary(bool with_filter) {
  DepthGuard guard(this);
  if (guard.tooDeep()) return error("expression nesting too deep", peek().pos);
  ExprPtr node;
  if (isOp("-") || isOp("+")) {
    auto e = makeExpr(Expr::Kind::kUnary, peek().pos);
    e->name = next().text;
    ASSIGN_OR_RETURN(ExprPtr operand, parseUnary(false));
    e->children.push_back(std::move(operand));
    node = std::move(e);
  } else {
    ASSIGN_OR_RETURN(node, parsePrimary());
  }
  ASSIGN_OR_RETURN(node, parsePostfix(std::move(node)));
  if (with_filter) {
    ASSIGN_OR_RETURN(node, parseFilterExpr(std::move(node)));
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::parsePrimary() {
  const Token& t = peek();
  size_t pos = t.pos;
  switch (t.kind) {
    case Token::Kind::kName: {
      std::string n = next().text;
      auto e = makeExpr(Expr::Kind::kLiteral, pos);
      if (n == "true" || n == "True") {
        e->literal = Value(true);
      } else if (n == "false" || n == "False") {
        e->literal = Value(false);
      } else if (n == "none" || n == "None") {
        e->literal = Value::none();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = n;
      }
      return e;
    }
    case Token::Kind::kString: {
      std::string s;
      while (peek().kind == Token::Kind::kString) s += next().text;
      auto e = makeExpr(Expr::Kind::kLiteral, pos);
      e->literal = Value(std::move(s));
      return e;
    }
    case Token::Kind::kInt: {
      std::string digits = next().text;
      int base = 10;
      size_t skip = 0;
      if (digits.size() > 1 && digits[0] == '0' && std::isalpha(static_cast<unsigned char>(digits[1]))) {
        char b = static_cast<char>(std::tolower(digits[1]));
        base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
        skip = 2;
      }
      int64_t v = 0;
      auto res = std::from_chars(digits.data() + skip, digits.data() + digits.size(), v, base);
      if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) {
        return error(absl::StrCat("invalid integer '", digits, "'"), pos);
      }
      auto e = makeExpr(Expr::Kind::kLiteral, pos);
      e->literal = Value(v);
      return e;
    }
    case Token::Kind::kFloat: {
      std::string digits = next().text;
      auto e = makeExpr(Expr::Kind::kLiteral, pos);
      e->literal = Value(std::strtod(digits.c_str(), nullptr));
      return e;
    }
    case Token::Kind::kOp: {
      if (t.text == "(") {
        next();
        ASSIGN_OR_RETURN(ExprPtr inner, parseTuple(true, true));
        RETURN_IF_ERROR(expectOp(")"));
        return inner;
      }
      if (t.text == "[" || t.text == "{") {
        bool is_dict = t.text == "{";
        std::string close = is_dict ? "}" : "]";
        next();
        auto e = makeExpr(is_dict ? Expr::Kind::kDict : Expr::Kind::kList, pos);
        while (!isOp(close)) {
          if (!e->children.empty()) RETURN_IF_ERROR(expectOp(","));
          if (isOp(close)) break;
          ASSIGN_OR_RETURN(ExprPtr item, parseExpression());
          e->children.push_back(std::move(item));
          if (is_dict) {
            RETURN_IF_ERROR(expectOp(":"));
            ASSIGN_OR_RETURN(ExprPtr value, parseExpression());
            e->children.push_back(std::move(value));
          }
        }
        next();
        return e;
      }
      return unexpected(t);
    }
    default: return unexpected(t);
  }
}

absl::StatusOr<ExprPtr> Parser::parsePostfix(ExprPtr node) {
  while (true) {
    if (isOp(".") || isOp("[")) {
      ASSIGN_OR_RETURN(node, parseSubscript(std::move(node)));
    } else if (isOp("(")) {
      auto call = makeExpr(Expr::Kind::kCall, peek().pos);
      call->children.push_back(std::move(node));
      RETURN_IF_ERROR(parseCallArgs(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::parseFilterExpr(ExprPtr node) {
  while (true) {
    if (isOp("|")) {
      ASSIGN_OR_RETURN(node, parseFilter(std::move(node)));
    } else if (isName("is")) {
      ASSIGN_OR_RETURN(node, parseTest(std::move(node)));
    } else if (isOp("(")) {
      auto call = makeExpr(Expr::Kind::kCall, peek().pos);
      call->children.push_back(std::move(node));
      RETURN_IF_ERROR(parseCallArgs(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::parseFilter(ExprPtr node) {
  if (isOp("|")) next();
  auto e = makeExpr(Expr::Kind::kFilter, peek().pos);
  ASSIGN_OR_RETURN(e->name, expectName());
  while (isOp(".")) {
    next();
    ASSIGN_OR_RETURN(std::string part, expectName());
    absl::StrAppend(&e->name, ".", part);
  }
  e->children.push_back(std::move(node));
  if (isOp("(")) RETURN_IF_ERROR(parseCallArgs(*e));
  return e;
}

absl::StatusOr<ExprPtr> Parser::parseTest(ExprPtr node) {
  auto e = makeExpr(Expr::Kind::kTest, next().pos);  // 'is'
  if (isName("not")) {
    next();
    e->negated = true;
  }
  ASSIGN_OR_RETURN(e->name, expectName());
  while (isOp(".")) {
    next();
    ASSIGN_OR_RETURN(std::string part, expectName());
    absl::StrAppend(&e->name, ".", part);
  }
  e->children.push_back(std::move(node));
  const Token& t = peek();
  if (isOp("(")) {
    RETURN_IF_ERROR(parseCallArgs(*e));
  } else if ((t.kind == Token::Kind::kName || t.kind == Token::Kind::kString ||
              t.kind == Token::Kind::kInt || t.kind == Token::Kind::kFloat || isOp("[") ||
              isOp("{")) &&
             !(isName("else") || isName("or") || isName("and"))) {
    if (isName("is")) return error("cannot chain multiple tests with 'is'", t.pos);
    ASSIGN_OR_RETURN(ExprPtr arg, parsePrimary());
    ASSIGN_OR_RETURN(arg, parsePostfix(std::move(arg)));
    e->children.push_back(std::move(arg));
  }
  return e;
}

absl::StatusOr<ExprPtr> Parser::parseSubscript(ExprPtr node) {
  const Token& t = next();
  if (t.text == ".") {
    const Token& attr = next();
    if (attr.kind == Token::Kind::kName) {
      auto e = makeExpr(Expr::Kind::kAttr, attr.pos);
      e->name = attr.text;
      e->children.push_back(std::move(node));
      return e;
    }
    if (attr.kind == Token::Kind::kInt) {
      auto e = makeExpr(Expr::Kind::kItem, attr.pos);
      auto idx = makeExpr(Expr::Kind::kLiteral, attr.pos);
      idx->literal = Value(static_cast<int64_t>(std::strtoll(attr.text.c_str(), nullptr, 10)));
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(idx));
      return e;
    }
    return error("expected name or number after '.'", attr.pos);
  }
  // '[': an index or a slice
  size_t pos = t.pos;
  std::vector<ExprPtr> parts;
  bool is_slice = false;
  for (int i = 0; i < 3; ++i) {
    if (isOp(":") || isOp("]")) {
      parts.push_back(nullptr);
    } else {
      ASSIGN_OR_RETURN(ExprPtr p, parseExpression());
      parts.push_back(std::move(p));
    }
    if (!isOp(":")) break;
    next();
    is_slice = true;
  }
  RETURN_IF_ERROR(expectOp("]"));
  auto e = makeExpr(is_slice ? Expr::Kind::kSlice : Expr::Kind::kItem, pos);
  e->children.push_back(std::move(node));
  if (!is_slice && !parts[0]) return error("expected a subscript", pos);
  while (is_slice && parts.size() < 3) parts.push_back(nullptr);
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

absl::Status Parser::parseCallArgs(Expr& call) {
  RETURN_IF_ERROR(expectOp("("));
  bool first = true;
  while (!isOp(")")) {
    if (!first) RETURN_IF_ERROR(expectOp(","));
    first = false;
    if (isOp(")")) break;
    if (peek().kind == Token::Kind::kName && isOp("=", 1)) {
      std::string key = next().text;
      next();
      ASSIGN_OR_RETURN(ExprPtr v, parseExpression());
      call.kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!call.kwargs.empty()) return error("positional argument after keyword", peek().pos);
      ASSIGN_OR_RETURN(ExprPtr v, parseExpression());
      call.children.push_back(std::move(v));
    }
  }
  next();
  return absl::OkStatus();
}

absl::StatusOr<ExprPtr> Parser::parseAssignTarget(bool with_namespace) {
  size_t pos = peek().pos;
  ASSIGN_OR_RETURN(std::string name, expectName());
  auto e = makeExpr(Expr::Kind::kName, pos);
  e->name = name;
  if (with_namespace && isOp(".")) {
    next();
    auto attr = makeExpr(Expr::Kind::kAttr, peek().pos);
    ASSIGN_OR_RETURN(attr->name, expectName());
    attr->children.push_back(std::move(e));
    return attr;
  }
  if (!isOp(",")) return e;
  auto tuple = makeExpr(Expr::Kind::kTuple, pos);
  tuple->children.push_back(std::move(e));
  while (isOp(",")) {
    next();
    if (peek().kind != Token::Kind::kName) break;
    auto item = makeExpr(Expr::Kind::kName, peek().pos);
    item->name = next().text;
    tuple->children.push_back(std::move(item));
  }
  return tuple;
}

}  // namespace tandem::chat
