// Builds the syntax tree from the lexer's tokens, following jinja2's grammar
// and operator precedence (filters and tests bind tighter than arithmetic:
// `messages|length - 1` is `(messages|length) - 1`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/chat/ast.h"
#include "text/chat/lexer.h"

namespace tandem::chat {

class Parser {
 public:
  // `source` is the normalized text `tokens` came from, kept for positions.
  Parser(const std::string& source, std::vector<Token> tokens);

  // the whole template. A syntax error is InvalidArgument naming its line
  // and column.
  absl::StatusOr<StmtList> parseTemplate();

 private:
  // statements (parser.cc)
  absl::Status parseBody(StmtList& out, const std::vector<std::string_view>& end_tags,
                         size_t open_pos, std::string* found_end);
  absl::StatusOr<StmtPtr> parseStatement();
  absl::StatusOr<StmtPtr> parseFor(size_t pos);
  absl::StatusOr<StmtPtr> parseIf(size_t pos);
  absl::StatusOr<StmtPtr> parseSet(size_t pos);
  absl::StatusOr<StmtPtr> parseMacro(size_t pos);
  absl::StatusOr<StmtPtr> parseCallBlock(size_t pos);
  absl::StatusOr<StmtPtr> parseFilterBlock(size_t pos);
  absl::StatusOr<std::vector<MacroParam>> parseParams();
  absl::Status expectBlockEnd();

  // expressions (parse_expression.cc)
  absl::StatusOr<ExprPtr> parseTuple(bool with_condexpr, bool in_parens,
                                     const std::vector<std::string_view>& end_names = {});
  absl::StatusOr<ExprPtr> parseExpression(bool with_condexpr = true);
  absl::StatusOr<ExprPtr> parseCondition();
  // one left-associative level of a keyword operator (`or`, `and`): operands
  // from `operand`, joined left to right into `kind` nodes.
  absl::StatusOr<ExprPtr> parseKeywordLevel(std::string_view keyword, Expr::Kind kind,
                                            absl::StatusOr<ExprPtr> (Parser::*operand)());
  absl::StatusOr<ExprPtr> parseOr();
  absl::StatusOr<ExprPtr> parseAnd();
  absl::StatusOr<ExprPtr> parseNot();
  absl::StatusOr<ExprPtr> parseCompare();
  absl::StatusOr<ExprPtr> parseMath1();
  absl::StatusOr<ExprPtr> parseConcat();
  absl::StatusOr<ExprPtr> parseMath2();
  absl::StatusOr<ExprPtr> parsePow();
  absl::StatusOr<ExprPtr> parseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> parsePrimary();
  absl::StatusOr<ExprPtr> parsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> parseFilterExpr(ExprPtr node);
  absl::StatusOr<ExprPtr> parseFilter(ExprPtr node);
  absl::StatusOr<ExprPtr> parseTest(ExprPtr node);
  absl::StatusOr<ExprPtr> parseSubscript(ExprPtr node);
  absl::Status parseCallArgs(Expr& call);
  absl::StatusOr<ExprPtr> parseAssignTarget(bool with_namespace);

  // token helpers
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool isOp(std::string_view op, size_t ahead = 0) const;
  bool isName(std::string_view name, size_t ahead = 0) const;
  absl::Status expectOp(std::string_view op);
  absl::StatusOr<std::string> expectName();
  absl::Status error(const std::string& what, size_t pos) const;
  absl::Status unexpected(const Token& tok) const;
  static ExprPtr makeExpr(Expr::Kind kind, size_t pos);

  // bounds recursion so hostile templates cannot overflow the stack.
  static constexpr int kMaxDepth = 200;
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : parser(p) { ++parser->depth_; }
    ~DepthGuard() { --parser->depth_; }
    bool tooDeep() const { return parser->depth_ > kMaxDepth; }
    Parser* parser;
  };

  const std::string& source_;
  std::vector<Token> tokens_;
  size_t cur_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace tandem::chat
