// Renders a parsed template against a set of variables. One Renderer serves
// one render() call: it holds the scopes, the namespaces a template mutates
// and the guards that bound work, output size and recursion.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "text/chat/ast.h"
#include "text/chat/value.h"

namespace tandem::chat {

class Renderer {
 public:
  // `source` is only used for error positions; both must outlive render().
  Renderer(const StmtList& root, std::string_view source);

  // renders with `globals` as the outermost scope. Any error (raise_exception,
  // undefined access, type errors, exceeded limits) is InvalidArgument.
  absl::StatusOr<std::string> render(const ValueDict& globals);

 private:
  enum class Control { kNone, kBreak, kContinue };
  using Scope = std::unordered_map<std::string, Value>;

  // statements (renderer.cc)
  absl::Status renderBody(const StmtList& body, std::string& out);
  absl::Status renderStmt(const Stmt& stmt, std::string& out);
  absl::Status renderFor(const Stmt& stmt, const Value& iterable, int depth, std::string& out);
  absl::Status assign(const Expr& target, Value value);
  absl::StatusOr<Value> callMacro(const Stmt& macro, const CallArgs& args);
  Value makeMacro(const Stmt& macro);
  absl::Status append(std::string& out, std::string_view text);

  // expressions (evaluate.cc)
  absl::StatusOr<Value> eval(const Expr& expr);
  absl::StatusOr<Value> evalCall(const Expr& expr);
  absl::StatusOr<CallArgs> evalArgs(const Expr& expr, size_t first_arg);
  absl::StatusOr<Value> evalBinary(const std::string& op, const Value& a, const Value& b);
  absl::StatusOr<bool> evalCompare(const std::string& op, const Value& a, const Value& b);
  absl::StatusOr<Value> evalSlice(const Value& obj, const Expr& expr);
  absl::StatusOr<Value> evalFilter(const Expr& expr);

  Value lookup(const std::string& name) const;
  absl::Status fail(const std::string& message) const;
  absl::Status tick();

  static constexpr size_t kMaxOutputBytes = 64u << 20;
  static constexpr size_t kMaxOperations = 2'000'000;
  static constexpr int kMaxCallDepth = 100;

  const StmtList& root_;
  std::string_view source_;
  std::vector<Scope> scopes_;
  Control control_ = Control::kNone;
  size_t operations_ = 0;
  int call_depth_ = 0;
  // the value a filter chain with no operand applies to ({% filter %}, {% set x | f %}).
  Value filter_input_;
};

}  // namespace tandem::chat
