#pragma once
// Walks a parsed template and writes its output. Scoping follows Jinja: `set` at the top
// level or in an `if` changes the enclosing scope; each loop iteration and each macro call
// gets its own scope, and only namespace() attributes carry values out of them. Macros see
// the live variables of the scope they were defined in.
//
// Budgets keep hostile templates from hanging or exhausting memory: a step budget charged
// per statement, iteration and byte copied, compared or searched, a recursion depth, and a
// cap on any one string or list.
// Internal: errors are thrown as TemplateError; Template (jinja_template.h) catches them.

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_value.h"

namespace lr::jinja {

struct RenderLimits {
    size_t max_string_bytes = size_t{64} << 20;  // output and any single string value
    uint64_t max_steps = 5'000'000;              // statements + iterations + bytes/1024 copied
    int max_depth = 500;                         // nested statements, expressions and macro calls
    size_t max_list_items = size_t{1} << 20;     // any one list (range(), +, *)
};

struct RenderOptions {
    RenderLimits limits;
    // Local time for strftime_now(); empty means the system clock.
    std::function<std::tm()> local_time;
};

// One scope: its own variables, then its parent's.
struct Frame {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Frame> parent;

    const Value * lookup(std::string_view name) const;
    void set(const std::string & name, Value value);
};

class Interpreter {
public:
    explicit Interpreter(const RenderOptions & options);
    ~Interpreter();
    Interpreter(const Interpreter &) = delete;
    Interpreter & operator=(const Interpreter &) = delete;

    // Renders `body` with the variables of `context` (a dict) over the builtin globals.
    std::string render(const Body & body, const Value & context);

    // ---- for builtins ----
    Value call(const Value & callee, CallArgs & args);
    Value apply_filter(std::string_view name, const Value & operand, CallArgs & args);
    bool apply_test(std::string_view name, const Value & operand, CallArgs & args);
    // Charges `units` steps; throws TemplateError(limit) when the budget is spent.
    void charge(uint64_t units);
    void charge_bytes(size_t bytes) { charge(1 + bytes / 1024); }
    // Charges a search for `needle_bytes` in `haystack_bytes` (a substring, a list item):
    // std::string::find reads up to their product at worst.
    void charge_search(uint64_t haystack_bytes, uint64_t needle_bytes);
    // Throw TemplateError(too_large) when a string of `bytes` or a list of `n` items would
    // exceed its cap.
    void check_string_size(size_t bytes) const;
    void check_list_size(uint64_t n) const;
    std::tm local_time() const;
    // Namespaces are the only mutable values, so the only way to build a reference cycle;
    // the interpreter empties them all after rendering to free such cycles.
    Value make_namespace();

private:
    enum class Flow { normal, break_loop, continue_loop };

    Flow exec_body(const Body & body, const std::shared_ptr<Frame> & frame);
    Flow exec(const Stmt & stmt, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const TextStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const OutputStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const IfStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const ForStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const SetStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const SetBlockStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const MacroStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const FilterBlockStmt & s, const std::shared_ptr<Frame> & frame);
    Flow exec_node(const LoopControlStmt & s, const std::shared_ptr<Frame> & frame);

    Value eval(const Expr & expr, const std::shared_ptr<Frame> & frame);
    Value eval_node(const LiteralExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const NameExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const ListExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const DictExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const GetAttrExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const GetItemExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const SliceExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const CallExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const FilterExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const TestExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const UnaryExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const BinaryExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const CompareExpr & e, const std::shared_ptr<Frame> & frame);
    Value eval_node(const ConditionalExpr & e, const std::shared_ptr<Frame> & frame);

    CallArgs eval_args(const std::vector<ExprPtr> & args, const std::vector<Keyword> & kwargs, const std::shared_ptr<Frame> & frame);
    Value apply_filters(const std::vector<FilterCall> & filters, Value value, const std::shared_ptr<Frame> & frame);
    void assign(const Target & target, Value value, const std::shared_ptr<Frame> & frame);
    Value call_macro(const MacroStmt & macro, const std::weak_ptr<Frame> & defined_in, CallArgs & args);
    std::string capture(const Body & body, const std::shared_ptr<Frame> & frame);
    void write(std::string_view text);

    struct DepthGuard;

    const RenderOptions & options_;
    std::shared_ptr<Frame> root_;
    std::string * out_ = nullptr;
    uint64_t steps_ = 0;
    int depth_ = 0;
    std::vector<std::shared_ptr<Object>> namespaces_;
};

// Python's binary operators and `in`, for the interpreter and filters.
Value binary_op(Interpreter & interp, BinaryOp op, const Value & a, const Value & b);
bool contains(const Value & container, const Value & item);

// Member lookup: a.b (Jinja tries the attribute, then the item) and a[b] (item, then attribute).
Value get_attribute(const Value & object, std::string_view name);
Value get_item(const Value & object, const Value & key);

}  // namespace lr::jinja
