#pragma once
// The syntax tree the parser builds and the interpreter walks. Expressions and statements
// are variants of plain structs; every node keeps its source position for error messages.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat/jinja_error.h"
#include "engine/chat/jinja_value.h"

namespace lr::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class BinaryOp { add, sub, mul, div, floordiv, mod, pow, concat, logical_and, logical_or };
enum class CompareOp { eq, ne, lt, le, gt, ge, in, not_in };
enum class UnaryOp { neg, pos, logical_not };

struct Keyword {
    std::string name;
    ExprPtr value;
};

struct LiteralExpr {
    Value value;
};
struct NameExpr {
    std::string name;
};
struct ListExpr {
    std::vector<ExprPtr> items;
};  // [a, b] and (a, b)
struct DictExpr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttrExpr {
    ExprPtr object;
    std::string attribute;
};  // a.b
struct GetItemExpr {
    ExprPtr object;
    ExprPtr index;
};  // a[i]
struct SliceExpr {
    ExprPtr object;
    ExprPtr start, stop, step;
};  // a[start:stop:step], parts may be null
struct CallExpr {
    ExprPtr callee;
    std::vector<ExprPtr> args;
    std::vector<Keyword> kwargs;
};
struct FilterExpr {
    ExprPtr operand;
    std::string name;
    std::vector<ExprPtr> args;
    std::vector<Keyword> kwargs;
};
struct TestExpr {
    ExprPtr operand;
    std::string name;
    std::vector<ExprPtr> args;
    bool negated = false;
};
struct UnaryExpr {
    UnaryOp op;
    ExprPtr operand;
};
struct BinaryExpr {
    BinaryOp op;
    ExprPtr left, right;
};
struct CompareExpr {
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
};  // a < b < c
struct ConditionalExpr {
    ExprPtr then_value, condition, else_value;
};  // else may be null

struct Expr {
    SourcePos pos;
    uint32_t height = 1;  // longest path to a leaf; the parser caps it so walks stay shallow
    std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, GetAttrExpr, GetItemExpr, SliceExpr, CallExpr, FilterExpr, TestExpr, UnaryExpr,
                 BinaryExpr, CompareExpr, ConditionalExpr>
        node;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Where `set` and `for` store: names (unpacking when several), or one namespace attribute.
struct Target {
    std::vector<std::string> names;
    std::string ns_attribute;  // `set ns.attr = ...`: names holds just "ns"
};

struct FilterCall {
    std::string name;
    std::vector<ExprPtr> args;
    std::vector<Keyword> kwargs;
    SourcePos pos;
};

struct TextStmt {
    std::string text;
};
struct OutputStmt {
    ExprPtr expr;
};
struct IfStmt {
    std::vector<std::pair<ExprPtr, Body>> branches;  // if and elif, in order
    Body else_body;
};
struct ForStmt {
    Target target;
    ExprPtr iterable;
    ExprPtr filter;  // `for x in xs if cond`, may be null
    Body body;
    Body else_body;
};
struct SetStmt {
    Target target;
    ExprPtr value;
};
struct SetBlockStmt {
    Target target;
    std::vector<FilterCall> filters;
    Body body;
};
struct MacroParam {
    std::string name;
    ExprPtr default_value;
};
struct MacroStmt {
    std::string name;
    std::vector<MacroParam> params;
    Body body;
};
struct FilterBlockStmt {
    std::vector<FilterCall> filters;
    Body body;
};
struct LoopControlStmt {
    bool is_break = true;
};

struct Stmt {
    SourcePos pos;
    std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, SetBlockStmt, MacroStmt, FilterBlockStmt, LoopControlStmt> node;
};

}  // namespace lr::jinja
