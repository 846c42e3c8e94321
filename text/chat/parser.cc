#include "text/chat/parser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tandem::chat {


Parser::Parser(const std::string& source, std::vector<Token> tokens)
    : source_(source), tokens_(std::move(tokens)) {}

absl::StatusOr<StmtList> Parser::parseTemplate() {
  StmtList out;
  RETURN_IF_ERROR(parseBody(out, {}, 0, nullptr));
  return out;
}

const Token& Parser::peek(size_t ahead) const {
  size_t i = std::min(cur_ + ahead, tokens_.size() - 1);
  return tokens_[i];
}

const Token& Parser::next() {
  const Token& t = tokens_[cur_];
  if (cur_ + 1 < tokens_.size()) ++cur_;
  return t;
}

bool Parser::isOp(std::string_view op, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == Token::Kind::kOp && t.text == op;
}

bool Parser::isName(std::string_view name, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == Token::Kind::kName && t.text == name;
}

absl::Status Parser::error(const std::string& what, size_t pos) const {
  return absl::InvalidArgumentError(
      absl::StrCat("template syntax error: ", what, " at ", describePosition(source_, pos)));
}

absl::Status Parser::unexpected(const Token& tok) const {
  switch (tok.kind) {
    case Token::Kind::kEof: return error("unexpected end of template", tok.pos);
    case Token::Kind::kBlockEnd: return error("unexpected end of statement", tok.pos);
    case Token::Kind::kVarEnd: return error("unexpected end of print statement", tok.pos);
    case Token::Kind::kData: return error("unexpected text", tok.pos);
    default: return error(absl::StrCat("unexpected '", tok.text, "'"), tok.pos);
  }
}

absl::Status Parser::expectOp(std::string_view op) {
  if (!isOp(op)) {
    const Token& t = peek();
    if (t.kind == Token::Kind::kOp || t.kind == Token::Kind::kName) {
      return error(absl::StrCat("expected '", std::string(op), "', got '", t.text, "'"), t.pos);
    }
    return error(absl::StrCat("expected '", std::string(op), "'"), t.pos);
  }
  next();
  return absl::OkStatus();
}

absl::StatusOr<std::string> Parser::expectName() {
  if (peek().kind != Token::Kind::kName) return error("expected a name", peek().pos);
  return next().text;
}

absl::Status Parser::expectBlockEnd() {
  if (peek().kind != Token::Kind::kBlockEnd) {
    return error(absl::StrCat("expected end of statement, got '", peek().text, "'"), peek().pos);
  }
  next();
  return absl::OkStatus();
}

absl::Status Parser::parseBody(StmtList& out, const std::vector<std::string_view>& end_tags,
                               size_t open_pos, std::string* found_end) {
  DepthGuard guard(this);
  if (guard.tooDeep()) return error("template nesting too deep", open_pos);
  while (true) {
    const Token& t = peek();
    switch (t.kind) {
      case Token::Kind::kData: {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->pos = t.pos;
        s->text = t.text;
        out.push_back(std::move(s));
        next();
        break;
      }
      case Token::Kind::kVarBegin: {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kPrint;
        s->pos = next().pos;
        ASSIGN_OR_RETURN(s->expr, parseTuple(true, false));
        if (peek().kind != Token::Kind::kVarEnd) return unexpected(peek());
        next();
        out.push_back(std::move(s));
        break;
      }
      case Token::Kind::kBlockBegin: {
        const Token& name = peek(1);
        if (name.kind == Token::Kind::kName &&
            std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
          next();
          *found_end = next().text;
          return absl::OkStatus();
        }
        ASSIGN_OR_RETURN(StmtPtr s, parseStatement());
        if (s) out.push_back(std::move(s));
        break;
      }
      case Token::Kind::kEof: {
        if (end_tags.empty()) return absl::OkStatus();
        return error(absl::StrCat("unexpected end of template, expected '", std::string(end_tags.back()),
                                  "' to close the tag opened"),
                     open_pos);
      }
      default: return unexpected(t);
    }
  }
}

absl::StatusOr<StmtPtr> Parser::parseStatement() {
  size_t pos = next().pos;  // the block begin
  const Token& tok = peek();
  if (tok.kind != Token::Kind::kName) return error("tag name expected", tok.pos);
  std::string tag = next().text;
  if (tag == "for") return parseFor(pos);
  if (tag == "if") return parseIf(pos);
  if (tag == "set") return parseSet(pos);
  if (tag == "macro") return parseMacro(pos);
  if (tag == "call") return parseCallBlock(pos);
  if (tag == "filter") return parseFilterBlock(pos);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return error(absl::StrCat("'", tag, "' outside of a loop"), pos);
    RETURN_IF_ERROR(expectBlockEnd());
    auto s = std::make_unique<Stmt>();
    s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    s->pos = pos;
    return s;
  }
  if (tag == "generation") {
    // hf's AssistantTracker tag: renders its body unchanged
    RETURN_IF_ERROR(expectBlockEnd());
    auto s = std::make_unique<Stmt>();
    s->kind = Stmt::Kind::kIf;
    s->pos = pos;
    auto always = makeExpr(Expr::Kind::kLiteral, pos);
    always->literal = Value(true);
    s->conds.push_back(std::move(always));
    s->bodies.emplace_back();
    std::string end;
    RETURN_IF_ERROR(parseBody(s->bodies.back(), {"endgeneration"}, pos, &end));
    RETURN_IF_ERROR(expectBlockEnd());
    return s;
  }
  return error(absl::StrCat("unknown tag '", tag, "'"), tok.pos);
}

absl::StatusOr<StmtPtr> Parser::parseFor(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kFor;
  s->pos = pos;
  bool parens = isOp("(");
  if (parens) next();
  while (true) {
    ASSIGN_OR_RETURN(std::string name, expectName());
    s->targets.push_back(name);
    if (!isOp(",")) break;
    next();
    if (isName("in") || isOp(")")) break;
  }
  if (parens) RETURN_IF_ERROR(expectOp(")"));
  if (!isName("in")) return error("expected 'in' in for loop", peek().pos);
  next();
  ASSIGN_OR_RETURN(s->expr, parseTuple(false, false, {"recursive"}));
  if (isName("if")) {
    next();
    ASSIGN_OR_RETURN(s->cond, parseExpression());
  }
  if (isName("recursive")) {
    next();
    s->recursive = true;
  }
  RETURN_IF_ERROR(expectBlockEnd());
  ++loop_depth_;
  std::string end;
  absl::Status st = parseBody(s->body, {"else", "endfor"}, pos, &end);
  --loop_depth_;
  RETURN_IF_ERROR(st);
  RETURN_IF_ERROR(expectBlockEnd());
  if (end == "else") {
    RETURN_IF_ERROR(parseBody(s->else_body, {"endfor"}, pos, &end));
    RETURN_IF_ERROR(expectBlockEnd());
  }
  return s;
}

absl::StatusOr<StmtPtr> Parser::parseIf(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kIf;
  s->pos = pos;
  while (true) {
    ASSIGN_OR_RETURN(ExprPtr cond, parseTuple(false, false));
    RETURN_IF_ERROR(expectBlockEnd());
    s->conds.push_back(std::move(cond));
    s->bodies.emplace_back();
    std::string end;
    RETURN_IF_ERROR(parseBody(s->bodies.back(), {"elif", "else", "endif"}, pos, &end));
    if (end == "elif") continue;
    RETURN_IF_ERROR(expectBlockEnd());
    if (end == "else") {
      RETURN_IF_ERROR(parseBody(s->else_body, {"endif"}, pos, &end));
      RETURN_IF_ERROR(expectBlockEnd());
    }
    return s;
  }
}

absl::StatusOr<StmtPtr> Parser::parseSet(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->pos = pos;
  ASSIGN_OR_RETURN(s->target, parseAssignTarget(true));
  if (isOp("=")) {
    next();
    s->kind = Stmt::Kind::kSet;
    ASSIGN_OR_RETURN(s->expr, parseTuple(true, false));
    RETURN_IF_ERROR(expectBlockEnd());
    return s;
  }
  if (s->target->kind != Expr::Kind::kName) return error("expected '='", peek().pos);
  s->kind = Stmt::Kind::kSetBlock;
  while (isOp("|")) {
    ASSIGN_OR_RETURN(s->filter, parseFilter(std::move(s->filter)));
  }
  RETURN_IF_ERROR(expectBlockEnd());
  std::string end;
  RETURN_IF_ERROR(parseBody(s->body, {"endset"}, pos, &end));
  RETURN_IF_ERROR(expectBlockEnd());
  return s;
}

absl::StatusOr<std::vector<MacroParam>> Parser::parseParams() {
  std::vector<MacroParam> params;
  RETURN_IF_ERROR(expectOp("("));
  while (!isOp(")")) {
    if (!params.empty()) RETURN_IF_ERROR(expectOp(","));
    if (isOp(")")) break;
    MacroParam p;
    ASSIGN_OR_RETURN(p.name, expectName());
    if (isOp("=")) {
      next();
      ASSIGN_OR_RETURN(p.default_value, parseExpression());
    }
    params.push_back(std::move(p));
  }
  next();
  return params;
}

absl::StatusOr<StmtPtr> Parser::parseMacro(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kMacro;
  s->pos = pos;
  ASSIGN_OR_RETURN(s->name, expectName());
  ASSIGN_OR_RETURN(s->params, parseParams());
  RETURN_IF_ERROR(expectBlockEnd());
  // break/continue cannot reach through a macro into an enclosing loop
  int saved = loop_depth_;
  loop_depth_ = 0;
  std::string end;
  absl::Status st = parseBody(s->body, {"endmacro"}, pos, &end);
  loop_depth_ = saved;
  RETURN_IF_ERROR(st);
  if (peek().kind == Token::Kind::kName && peek().text == s->name) next();
  RETURN_IF_ERROR(expectBlockEnd());
  return s;
}

absl::StatusOr<StmtPtr> Parser::parseCallBlock(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kCallBlock;
  s->pos = pos;
  if (isOp("(")) {
    ASSIGN_OR_RETURN(s->params, parseParams());
  }
  ASSIGN_OR_RETURN(s->expr, parseExpression());
  if (s->expr->kind != Expr::Kind::kCall) return error("expected call", s->expr->pos);
  RETURN_IF_ERROR(expectBlockEnd());
  std::string end;
  RETURN_IF_ERROR(parseBody(s->body, {"endcall"}, pos, &end));
  RETURN_IF_ERROR(expectBlockEnd());
  return s;
}

absl::StatusOr<StmtPtr> Parser::parseFilterBlock(size_t pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kFilterBlock;
  s->pos = pos;
  ExprPtr chain;
  do {
    ASSIGN_OR_RETURN(chain, parseFilter(std::move(chain)));
  } while (isOp("|"));
  s->filter = std::move(chain);
  RETURN_IF_ERROR(expectBlockEnd());
  std::string end;
  RETURN_IF_ERROR(parseBody(s->body, {"endfilter"}, pos, &end));
  RETURN_IF_ERROR(expectBlockEnd());
  return s;
}

}  // namespace tandem::chat
