#include "text/chat/renderer.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/filters.h"
#include "text/chat/unicode.h"

namespace tandem::chat {

Renderer::Renderer(const StmtList& root, std::string_view source)
    : root_(root), source_(source) {}

absl::StatusOr<std::string> Renderer::render(const ValueDict& globals) {
  scopes_.clear();
  scopes_.emplace_back();
  for (const auto& [k, v] : globals.items) scopes_.back()[k] = v;
  scopes_.emplace_back();
  std::string out;
  RETURN_IF_ERROR(renderBody(root_, out));
  return out;
}

absl::Status Renderer::fail(const std::string& message) const {
  return absl::InvalidArgumentError(message);
}

absl::Status Renderer::tick() {
  if (++operations_ > kMaxOperations) return fail("template exceeded its operation budget");
  return absl::OkStatus();
}

absl::Status Renderer::append(std::string& out, std::string_view text) {
  if (out.size() + text.size() > kMaxOutputBytes) return fail("template output too large");
  out.append(text);
  return absl::OkStatus();
}

Value Renderer::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return Value::undefined(absl::StrCat("'", name, "' is undefined"));
}

absl::Status Renderer::renderBody(const StmtList& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    RETURN_IF_ERROR(renderStmt(*stmt, out));
    if (control_ != Control::kNone) break;
  }
  return absl::OkStatus();
}

absl::Status Renderer::renderStmt(const Stmt& stmt, std::string& out) {
  RETURN_IF_ERROR(tick());
  switch (stmt.kind) {
    case Stmt::Kind::kText: return append(out, stmt.text);
    case Stmt::Kind::kPrint: {
      ASSIGN_OR_RETURN(Value v, eval(*stmt.expr));
      return append(out, v.toStr());
    }
    case Stmt::Kind::kIf: {
      for (size_t i = 0; i < stmt.conds.size(); ++i) {
        ASSIGN_OR_RETURN(Value c, eval(*stmt.conds[i]));
        if (c.truthy()) return renderBody(stmt.bodies[i], out);
      }
      return renderBody(stmt.else_body, out);
    }
    case Stmt::Kind::kFor: {
      ASSIGN_OR_RETURN(Value iterable, eval(*stmt.expr));
      return renderFor(stmt, iterable, 0, out);
    }
    case Stmt::Kind::kSet: {
      ASSIGN_OR_RETURN(Value v, eval(*stmt.expr));
      return assign(*stmt.target, std::move(v));
    }
    case Stmt::Kind::kSetBlock: {
      std::string body;
      RETURN_IF_ERROR(renderBody(stmt.body, body));
      Value v(std::move(body));
      if (stmt.filter) {
        filter_input_ = v;
        ASSIGN_OR_RETURN(v, eval(*stmt.filter));
      }
      return assign(*stmt.target, std::move(v));
    }
    case Stmt::Kind::kFilterBlock: {
      std::string body;
      RETURN_IF_ERROR(renderBody(stmt.body, body));
      filter_input_ = Value(std::move(body));
      ASSIGN_OR_RETURN(Value v, eval(*stmt.filter));
      return append(out, v.toStr());
    }
    case Stmt::Kind::kMacro:
      scopes_.back()[stmt.name] = makeMacro(stmt);
      return absl::OkStatus();
    case Stmt::Kind::kCallBlock: {
      // the body becomes `caller`, a macro the called macro may invoke
      ASSIGN_OR_RETURN(Value callee, eval(*stmt.expr->children[0]));
      ASSIGN_OR_RETURN(CallArgs args, evalArgs(*stmt.expr, 1));
      args.kwargs.emplace_back("caller", makeMacro(stmt));
      if (!callee.isFunction()) return fail(absl::StrCat(callee.undefinedName(), " is not callable"));
      ASSIGN_OR_RETURN(Value v, callee.fn()(args));
      return append(out, v.toStr());
    }
    case Stmt::Kind::kBreak:
      control_ = Control::kBreak;
      return absl::OkStatus();
    case Stmt::Kind::kContinue:
      control_ = Control::kContinue;
      return absl::OkStatus();
  }
  return absl::OkStatus();
}


absl::Status Renderer::renderFor(const Stmt& stmt, const Value& iterable, int depth,
                                 std::string& out) {
  ASSIGN_OR_RETURN(ValueList all, iterateValue(iterable));
  auto bind_targets = [&](Scope& scope, const Value& item) -> absl::Status {
    if (stmt.targets.size() == 1) {
      scope[stmt.targets[0]] = item;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(ValueList parts, iterateValue(item));
    if (parts.size() != stmt.targets.size()) {
      return fail(absl::StrCat(parts.size() > stmt.targets.size() ? "too many" : "not enough",
                               " values to unpack (expected ", stmt.targets.size(), ")"));
    }
    for (size_t i = 0; i < parts.size(); ++i) scope[stmt.targets[i]] = parts[i];
    return absl::OkStatus();
  };
  ValueList items;
  if (stmt.cond) {
    // the loop filter sees the loop variables but not `loop`
    for (const Value& item : all) {
      RETURN_IF_ERROR(tick());
      scopes_.emplace_back();
      absl::Status st = bind_targets(scopes_.back(), item);
      absl::StatusOr<Value> keep = st.ok() ? eval(*stmt.cond) : absl::StatusOr<Value>(st);
      scopes_.pop_back();
      if (!keep.ok()) return keep.status();
      if (keep->truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) return renderBody(stmt.else_body, out);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(tick());
    ValueDict loop;
    loop.set("index0", Value(i));
    loop.set("index", Value(i + 1));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("revindex", Value(n - i));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("depth0", Value(static_cast<int64_t>(depth)));
    loop.set("depth", Value(static_cast<int64_t>(depth + 1)));
    loop.set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.set("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    loop.set("cycle", Value::function([i](const CallArgs& args) -> absl::StatusOr<Value> {
      if (args.args.empty()) return absl::InvalidArgumentError("no items for cycling given");
      return args.args[i % args.args.size()];
    }));
    if (stmt.recursive) {
      loop.set("__call__", Value::function([this, &stmt, depth](const CallArgs& args)
                                               -> absl::StatusOr<Value> {
        if (args.args.empty()) return absl::InvalidArgumentError("loop() takes an iterable");
        if (++call_depth_ > kMaxCallDepth) {
          --call_depth_;
          return fail("maximum recursion depth exceeded");
        }
        std::string inner;
        absl::Status st = renderFor(stmt, args.args[0], depth + 1, inner);
        --call_depth_;
        RETURN_IF_ERROR(st);
        return Value(std::move(inner));
      }));
    }
    scopes_.emplace_back();
    absl::Status st = bind_targets(scopes_.back(), items[i]);
    scopes_.back()["loop"] = Value::dict(std::move(loop));
    if (st.ok()) st = renderBody(stmt.body, out);
    scopes_.pop_back();
    RETURN_IF_ERROR(st);
    if (control_ == Control::kBreak) {
      control_ = Control::kNone;
      break;
    }
    control_ = Control::kNone;
  }
  return absl::OkStatus();
}

absl::Status Renderer::assign(const Expr& target, Value value) {
  if (target.kind == Expr::Kind::kName) {
    scopes_.back()[target.name] = std::move(value);
    return absl::OkStatus();
  }
  if (target.kind == Expr::Kind::kAttr) {
    Value ns = lookup(target.children[0]->name);
    if (!ns.isNamespace()) {
      return fail(absl::StrCat("cannot assign attribute on non-namespace object '",
                               target.children[0]->name, "'"));
    }
    if (value.holdsNamespace(ns)) {
      return fail(absl::StrCat("cannot set '", target.children[0]->name, ".", target.name,
                               "' to a value that holds the namespace itself"));
    }
    ns.mutableDict().set(target.name, std::move(value));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(ValueList parts, iterateValue(value));
  if (parts.size() != target.children.size()) {
    return fail(absl::StrCat(parts.size() > target.children.size() ? "too many" : "not enough",
                             " values to unpack (expected ", target.children.size(), ")"));
  }
  for (size_t i = 0; i < parts.size(); ++i) scopes_.back()[target.children[i]->name] = parts[i];
  return absl::OkStatus();
}

Value Renderer::makeMacro(const Stmt& macro) {
  return Value::function(
      [this, &macro](const CallArgs& args) { return callMacro(macro, args); });
}

absl::StatusOr<Value> Renderer::callMacro(const Stmt& macro, const CallArgs& args) {
  if (call_depth_ >= kMaxCallDepth) return fail("maximum recursion depth exceeded");
  // a macro sees the globals and template-level names, plus its arguments
  std::vector<Scope> saved(std::make_move_iterator(scopes_.begin() + 2),
                           std::make_move_iterator(scopes_.end()));
  scopes_.resize(2);
  scopes_.emplace_back();
  absl::Status st;
  ValueList varargs;
  ValueDict kwargs;
  for (size_t i = 0; i < args.args.size(); ++i) {
    if (i < macro.params.size()) {
      scopes_.back()[macro.params[i].name] = args.args[i];
    } else {
      varargs.push_back(args.args[i]);
    }
  }
  for (const auto& [k, v] : args.kwargs) {
    bool is_param = false;
    for (const MacroParam& p : macro.params) is_param = is_param || p.name == k;
    if (is_param || k == "caller") {
      scopes_.back()[k] = v;
    } else {
      kwargs.set(k, v);
    }
  }
  for (const MacroParam& p : macro.params) {
    if (scopes_.back().count(p.name)) continue;
    if (p.default_value) {
      absl::StatusOr<Value> d = eval(*p.default_value);
      if (!d.ok()) {
        st = d.status();
        break;
      }
      scopes_.back()[p.name] = *d;
    } else {
      scopes_.back()[p.name] =
          Value::undefined(absl::StrCat("parameter '", p.name, "' was not provided"));
    }
  }
  scopes_.back()["varargs"] = Value::list(std::move(varargs));
  scopes_.back()["kwargs"] = Value::dict(std::move(kwargs));
  std::string out;
  Control saved_control = control_;
  control_ = Control::kNone;
  ++call_depth_;
  if (st.ok()) st = renderBody(macro.body, out);
  --call_depth_;
  control_ = saved_control;
  scopes_.resize(2);
  for (Scope& s : saved) scopes_.push_back(std::move(s));
  RETURN_IF_ERROR(st);
  return Value(std::move(out));
}

}  // namespace tandem::chat
