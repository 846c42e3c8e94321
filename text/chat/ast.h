// The syntax tree of a parsed template. Nodes are plain structs with a kind
// and generic children; the parser builds them once and rendering only reads
// them, so one parsed template serves concurrent renders.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/chat/value.h"

namespace tandem::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // children: items
    kTuple,      // children: items
    kDict,       // children: key0, value0, key1, value1, ...
    kAttr,       // children[0].name
    kItem,       // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]], each may be null
    kCall,       // children[0](children[1..], kwargs)
    kFilter,     // children[0] | name(children[1..], kwargs); children[0] null in filter blocks
    kTest,       // children[0] is [not] name(children[1..], kwargs); negated
    kUnary,      // name in {"-", "+", "not"}, children[0]
    kBinary,     // children[0] name children[1]; name in + - * / // % ** ~
    kAnd,
    kOr,
    kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ...
    kCondition,  // children[0] if children[1] else children[2] (may be null)
  };

  Kind kind;
  size_t pos = 0;
  std::string name;
  Value literal;
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  enum class Kind {
    kText,        // text
    kPrint,       // expr
    kIf,          // conds[i] -> bodies[i]; else_body
    kFor,         // for targets in expr [if cond]: body, else_body
    kSet,         // target = expr, target a kName, kTuple of names or kAttr
    kSetBlock,    // target = rendered body, optionally through filter
    kMacro,       // name(params): body
    kCallBlock,   // expr (a call) with caller(params) rendering body
    kFilterBlock, // filter (a kFilter chain with a null operand) over body
    kBreak,
    kContinue,
  };

  Kind kind;
  size_t pos = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr cond;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::vector<ExprPtr> conds;
  std::vector<StmtList> bodies;
  std::vector<MacroParam> params;
  StmtList body;
  StmtList else_body;
  bool recursive = false;
};

}  // namespace tandem::chat
