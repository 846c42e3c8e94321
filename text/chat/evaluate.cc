// expression half of the renderer: python semantics for operators,
// attribute and item access, slicing and calls.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/builtins.h"
#include "text/chat/filters.h"
#include "text/chat/renderer.h"
#include "text/chat/unicode.h"

namespace tandem::chat {
namespace {

absl::Status undefinedError(const Value& v) {
  return absl::InvalidArgumentError(v.undefinedName().empty() ? "value is undefined"
                                                              : v.undefinedName());
}

// python's obj.name / obj['name'] as jinja's sandbox resolves them.
absl::StatusOr<Value> getAttr(const Value& obj, const std::string& name) {
  if (obj.isUndefined()) return undefinedError(obj);
  if (obj.isDict() || obj.isNamespace()) {
    if (const Value* v = obj.dictRef().find(name)) return *v;
  }
  return Value::undefined(
      absl::StrCat("'", obj.isDict() ? "dict object" : obj.typeName(), "' has no attribute '",
                   name, "'"));
}

int64_t normalizeIndex(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

absl::StatusOr<Value> getItem(const Value& obj, const Value& key) {
  if (obj.isUndefined()) return undefinedError(obj);
  if ((obj.isDict() || obj.isNamespace()) && key.isString()) return getAttr(obj, key.str());
  if (obj.isSequenceLike() && (key.isInt() || key.isBool())) {
    int64_t n = static_cast<int64_t>(obj.items().size());
    int64_t i = normalizeIndex(key.asInt(), n);
    if (i >= 0 && i < n) return obj.items()[i];
  } else if (obj.isString() && (key.isInt() || key.isBool())) {
    std::vector<char32_t> cps = decodeUtf8(obj.str());
    int64_t n = static_cast<int64_t>(cps.size());
    int64_t i = normalizeIndex(key.asInt(), n);
    if (i >= 0 && i < n) {
      std::string s;
      appendUtf8(s, cps[i]);
      return Value(std::move(s));
    }
  } else if (key.isString()) {
    return getAttr(obj, key.str());
  }
  return Value::undefined(absl::StrCat("'", obj.typeName(), " object' has no element ", key.repr()));
}

bool isIntLike(const Value& v) { return v.isInt() || v.isBool(); }

absl::StatusOr<Value> checkedInt(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) {
    return absl::InvalidArgumentError("integer overflow");
  }
  return Value(static_cast<int64_t>(v));
}

absl::StatusOr<Value> repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  size_t unit = seq.isString() ? seq.str().size() : seq.items().size();
  if (unit * static_cast<size_t>(times) > (64u << 20)) {
    return absl::InvalidArgumentError("repetition result too large");
  }
  if (seq.isString()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace

absl::StatusOr<Value> Renderer::eval(const Expr& e) {
  RETURN_IF_ERROR(tick());
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.literal;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      ValueList items;
      for (const ExprPtr& c : e.children) {
        ASSIGN_OR_RETURN(Value v, eval(*c));
        items.push_back(std::move(v));
      }
      return e.kind == Expr::Kind::kList ? Value::list(std::move(items))
                                         : Value::tuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      ValueDict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        ASSIGN_OR_RETURN(Value k, eval(*e.children[i]));
        ASSIGN_OR_RETURN(Value v, eval(*e.children[i + 1]));
        if (!k.isString()) return fail("only string keys are supported in dict literals");
        d.set(k.str(), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kAttr: {
      ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
      return getAttr(obj, e.name);
    }
    case Expr::Kind::kItem: {
      ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
      ASSIGN_OR_RETURN(Value key, eval(*e.children[1]));
      return getItem(obj, key);
    }
    case Expr::Kind::kSlice: {
      ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
      return evalSlice(obj, e);
    }
    case Expr::Kind::kCall: return evalCall(e);
    case Expr::Kind::kFilter: return evalFilter(e);
    case Expr::Kind::kTest: {
      ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
      ASSIGN_OR_RETURN(CallArgs args, evalArgs(e, 1));
      ASSIGN_OR_RETURN(bool r, applyTest(e.name, v, args));
      return Value(r != e.negated);
    }
    case Expr::Kind::kUnary: {
      ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
      if (e.name == "not") return Value(!v.truthy());
      if (v.isUndefined()) return undefinedError(v);
      if (!v.isNumber()) return fail(absl::StrCat("bad operand type for unary ", e.name, ": '", v.typeName(), "'"));
      if (e.name == "+") return v.isFloat() ? v : Value(v.asInt());
      if (v.isFloat()) return Value(-v.asDouble());
      return checkedInt(-static_cast<__int128>(v.asInt()));
    }
    case Expr::Kind::kBinary: {
      ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
      ASSIGN_OR_RETURN(Value b, eval(*e.children[1]));
      return evalBinary(e.name, a, b);
    }
    case Expr::Kind::kAnd: {
      ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
      if (!a.truthy()) return a;
      return eval(*e.children[1]);
    }
    case Expr::Kind::kOr: {
      ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
      if (a.truthy()) return a;
      return eval(*e.children[1]);
    }
    case Expr::Kind::kCompare: {
      ASSIGN_OR_RETURN(Value left, eval(*e.children[0]));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        ASSIGN_OR_RETURN(Value right, eval(*e.children[i + 1]));
        ASSIGN_OR_RETURN(bool ok, evalCompare(e.ops[i], left, right));
        if (!ok) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCondition: {
      ASSIGN_OR_RETURN(Value c, eval(*e.children[1]));
      if (c.truthy()) return eval(*e.children[0]);
      if (e.children[2]) return eval(*e.children[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return fail("unknown expression");
}

absl::StatusOr<CallArgs> Renderer::evalArgs(const Expr& e, size_t first_arg) {
  CallArgs args;
  for (size_t i = first_arg; i < e.children.size(); ++i) {
    ASSIGN_OR_RETURN(Value v, eval(*e.children[i]));
    args.args.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    ASSIGN_OR_RETURN(Value v, eval(*x));
    args.kwargs.emplace_back(k, std::move(v));
  }
  return args;
}

absl::StatusOr<Value> Renderer::evalCall(const Expr& e) {
  const Expr& callee_expr = *e.children[0];
  Value callee;
  if (callee_expr.kind == Expr::Kind::kAttr) {
    ASSIGN_OR_RETURN(Value obj, eval(*callee_expr.children[0]));
    if (hasMethod(obj, callee_expr.name)) {
      ASSIGN_OR_RETURN(CallArgs args, evalArgs(e, 1));
      return callMethod(obj, callee_expr.name, args);
    }
    ASSIGN_OR_RETURN(callee, getAttr(obj, callee_expr.name));
  } else {
    ASSIGN_OR_RETURN(callee, eval(callee_expr));
  }
  if (callee.isDict()) {
    // a recursive loop's `loop(...)`
    if (const Value* f = callee.dictRef().find("__call__")) callee = *f;
  }
  if (callee.isUndefined()) return undefinedError(callee);
  if (!callee.isFunction()) return fail(absl::StrCat("'", callee.typeName(), "' object is not callable"));
  ASSIGN_OR_RETURN(CallArgs args, evalArgs(e, 1));
  return callee.fn()(args);
}

absl::StatusOr<Value> Renderer::evalFilter(const Expr& e) {
  Value input;
  if (e.children[0]) {
    ASSIGN_OR_RETURN(input, eval(*e.children[0]));
  } else {
    input = filter_input_;
  }
  ASSIGN_OR_RETURN(CallArgs args, evalArgs(e, 1));
  return applyFilter(e.name, input, args);
}

absl::StatusOr<Value> Renderer::evalSlice(const Value& obj, const Expr& e) {
  if (obj.isUndefined()) return undefinedError(obj);
  int64_t parts[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    if (!e.children[i + 1]) continue;
    ASSIGN_OR_RETURN(Value v, eval(*e.children[i + 1]));
    if (v.isNone()) continue;
    if (!isIntLike(v)) return fail("slice indices must be integers or None");
    parts[i] = v.asInt();
    given[i] = true;
  }
  int64_t step = parts[2];
  if (step == 0) return fail("slice step cannot be zero");
  std::vector<char32_t> cps;
  int64_t n;
  if (obj.isString()) {
    cps = decodeUtf8(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else if (obj.isSequenceLike()) {
    n = static_cast<int64_t>(obj.items().size());
  } else {
    return fail(absl::StrCat("'", obj.typeName(), "' object is not subscriptable"));
  }
  // python's PySlice_AdjustIndices
  auto adjust = [&](int64_t v, bool has, int64_t def) {
    if (!has) return def;
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  int64_t start = adjust(parts[0], given[0], step < 0 ? n - 1 : 0);
  int64_t stop = adjust(parts[1], given[1], step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  if (obj.isString()) {
    std::string out;
    for (int64_t i : picks) appendUtf8(out, cps[i]);
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i : picks) out.push_back(obj.items()[i]);
  return obj.isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

absl::StatusOr<Value> Renderer::evalBinary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.toStr() + b.toStr());
  if (a.isUndefined()) return undefinedError(a);
  if (b.isUndefined()) return undefinedError(b);
  auto unsupported = [&] {
    return fail(absl::StrCat("unsupported operand type(s) for ", op, ": '", a.typeName(),
                             "' and '", b.typeName(), "'"));
  };
  if (a.isNumber() && b.isNumber()) {
    bool fl = a.isFloat() || b.isFloat();
    double x = a.asDouble(), y = b.asDouble();
    __int128 i = a.asInt(), j = b.asInt();
    if (op == "+") return fl ? Value(x + y) : checkedInt(i + j);
    if (op == "-") return fl ? Value(x - y) : checkedInt(i - j);
    if (op == "*") return fl ? Value(x * y) : checkedInt(i * j);
    if (op == "/") {
      if (y == 0) return fail("division by zero");
      return Value(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) return fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
      if (fl) {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return op == "%" ? Value(m) : Value(std::floor((x - m) / y + 0.5));
      }
      __int128 q = i / j, r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) {
        q -= 1;
        r += j;
      }
      return op == "//" ? checkedInt(q) : checkedInt(r);
    }
    if (op == "**") {
      if (!fl && j >= 0) {
        __int128 result = 1;
        for (__int128 k = 0; k < j; ++k) {
          result *= i;
          if (result > std::numeric_limits<int64_t>::max() || result < std::numeric_limits<int64_t>::min()) {
            return fail("integer overflow");
          }
        }
        return checkedInt(result);
      }
      return Value(std::pow(x, y));
    }
    return unsupported();
  }
  if (op == "+") {
    if (a.isString() && b.isString()) {
      if (a.str().size() + b.str().size() > kMaxOutputBytes) return fail("string too large");
      return Value(a.str() + b.str());
    }
    if (a.kind() == b.kind() && a.isSequenceLike()) {
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.isTuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.isString() || a.isSequenceLike()) {
      return fail(absl::StrCat("can only concatenate ", a.typeName(), " (not \"", b.typeName(),
                               "\") to ", a.typeName()));
    }
    return unsupported();
  }
  if (op == "*") {
    if ((a.isString() || a.isSequenceLike()) && isIntLike(b)) return repeat(a, b.asInt());
    if ((b.isString() || b.isSequenceLike()) && isIntLike(a)) return repeat(b, a.asInt());
    return unsupported();
  }
  if (op == "%" && a.isString()) return pyPercentFormat(a.str(), b);
  return unsupported();
}

absl::StatusOr<bool> Renderer::evalCompare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return a.equals(b);
  if (op == "!=") return !a.equals(b);
  if (op == "in" || op == "notin") {
    ASSIGN_OR_RETURN(bool found, pyContains(b, a));
    return op == "in" ? found : !found;
  }
  if (a.isUndefined()) return undefinedError(a);
  if (b.isUndefined()) return undefinedError(b);
  if (op == "<") return Value::less(a, b);
  if (op == ">") return Value::less(b, a);
  if (op == "<=") {
    ASSIGN_OR_RETURN(bool gt, Value::less(b, a));
    return !gt;
  }
  if (op == ">=") {
    ASSIGN_OR_RETURN(bool lt, Value::less(a, b));
    return !lt;
  }
  return fail(absl::StrCat("unknown operator ", op));
}

}  // namespace tandem::chat
