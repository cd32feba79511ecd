#include "engine/chat/jinja_interpreter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_strings.h"

namespace lr::jinja {

namespace {

[[noreturn]] void fail_undefined(const Value & v) { fail(v.undefined_hint()); }

std::string object_desc(const Value & v) { return "'" + std::string(type_name(v)) + " object'"; }

// What comparing or searching `v` may read: a string's bytes, a list's or a dict's items
// and their strings (one level: deeper members are charged where they are built).
uint64_t bytes_read_by(const Value & v) {
    const auto own = [](const Value & x) -> uint64_t { return x.is_string() ? x.as_string().size() : 1; };
    if (v.is_array()) {
        uint64_t n = 0;
        for (const Value & item : v.as_array()) n += own(item);
        return n;
    }
    if (v.is_object()) {
        uint64_t n = 0;
        for (const auto & [key, item] : v.as_object().entries) n += key.size() + own(item);
        return n;
    }
    return own(v);
}

// Filters that take a list's or a dict's items as whole values: they cost per item, charged
// by each, not per byte of the strings in the items.
bool reads_items_whole(std::string_view filter) {
    for (std::string_view f : {"length", "count", "first", "last", "list", "reverse", "default", "d", "batch", "slice", "items"}) {
        if (f == filter) return true;
    }
    return false;
}

[[noreturn]] void fail_operands(std::string_view op, const Value & a, const Value & b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    fail("unsupported operand type(s) for " + std::string(op) + ": '" + std::string(type_name(a)) + "' and '" + std::string(type_name(b)) +
         "'");
}

int64_t int_of(const Value & v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); }
bool is_integral(const Value & v) { return v.is_int() || v.is_bool(); }

int64_t checked(int64_t a, int64_t b, BinaryOp op) {
    int64_t r = 0;
    bool overflow = false;
    constexpr int64_t max = std::numeric_limits<int64_t>::max();
    constexpr int64_t min = std::numeric_limits<int64_t>::min();
    switch (op) {
        case BinaryOp::add:
            overflow = (b > 0 && a > max - b) || (b < 0 && a < min - b);
            if (!overflow) r = a + b;
            break;
        case BinaryOp::sub:
            overflow = (b < 0 && a > max + b) || (b > 0 && a < min + b);
            if (!overflow) r = a - b;
            break;
        default:  // mul
            if (a != 0 && b != 0) {
                overflow = (a == -1 && b == min) || (b == -1 && a == min) ||
                           (a != -1 && b != -1 && (a > 0 ? (b > 0 ? a > max / b : b < min / a) : (b > 0 ? a < min / b : a < max / b)));
            }
            if (!overflow) r = a * b;
    }
    if (overflow) fail("integer overflow");
    return r;
}

Value repeat(Interpreter & interp, const Value & seq, int64_t n) {
    if (n < 0) n = 0;
    if (seq.is_string()) {
        const std::string & s = seq.as_string();
        if (!s.empty() && static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / s.size()) {
            interp.check_string_size(std::numeric_limits<size_t>::max());
        }
        interp.check_string_size(s.size() * static_cast<size_t>(n));
        interp.charge_bytes(s.size() * static_cast<size_t>(n));
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value(std::move(out));
    }
    const Array & a = seq.as_array();
    if (!a.empty() && static_cast<uint64_t>(n) > std::numeric_limits<uint32_t>::max())
        interp.check_list_size(std::numeric_limits<uint64_t>::max());
    interp.check_list_size(a.size() * static_cast<uint64_t>(n));
    interp.charge(1 + a.size() * static_cast<uint64_t>(n) / 16);
    Array out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), a.begin(), a.end());
    return Value(std::move(out));
}

double python_mod(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

}  // namespace

// ---- free functions -------------------------------------------------------------------------

Value binary_op(Interpreter & interp, BinaryOp op, const Value & a, const Value & b) {
    switch (op) {
        case BinaryOp::concat: {
            // A list is printed at least as long as its strings: refused before it is built.
            interp.check_string_size(bytes_read_by(a) + bytes_read_by(b));
            std::string s = to_str(a);
            const std::string t = to_str(b);
            interp.check_string_size(s.size() + t.size());
            interp.charge_bytes(s.size() + t.size());
            return Value(s + t);
        }
        case BinaryOp::add:
            if (a.is_string() && b.is_string()) {
                interp.check_string_size(a.as_string().size() + b.as_string().size());
                interp.charge_bytes(a.as_string().size() + b.as_string().size());
                return Value(a.as_string() + b.as_string());
            }
            if (a.is_array() && b.is_array()) {
                const size_t n = a.as_array().size() + b.as_array().size();
                interp.check_list_size(n);
                interp.charge(1 + n / 16);
                Array out = a.as_array();
                out.insert(out.end(), b.as_array().begin(), b.as_array().end());
                return Value(std::move(out));
            }
            [[fallthrough]];
        case BinaryOp::sub:
            if (a.is_number() && b.is_number()) {
                if (a.is_float() || b.is_float()) {
                    return Value(op == BinaryOp::add ? a.to_double() + b.to_double() : a.to_double() - b.to_double());
                }
                return Value(checked(int_of(a), int_of(b), op));
            }
            fail_operands(op == BinaryOp::add ? "+" : "-", a, b);
        case BinaryOp::mul:
            if (a.is_number() && b.is_number()) {
                if (a.is_float() || b.is_float()) return Value(a.to_double() * b.to_double());
                return Value(checked(int_of(a), int_of(b), op));
            }
            if ((a.is_string() || a.is_array()) && is_integral(b)) return repeat(interp, a, int_of(b));
            if (is_integral(a) && (b.is_string() || b.is_array())) return repeat(interp, b, int_of(a));
            fail_operands("*", a, b);
        case BinaryOp::div:
            if (a.is_number() && b.is_number()) {
                if (b.to_double() == 0.0) fail("division by zero");
                return Value(a.to_double() / b.to_double());
            }
            fail_operands("/", a, b);
        case BinaryOp::floordiv:
        case BinaryOp::mod:
            if (a.is_number() && b.is_number()) {
                if (b.to_double() == 0.0) fail(op == BinaryOp::mod ? "modulo by zero" : "division by zero");
                if (a.is_float() || b.is_float()) {
                    const double x = a.to_double();
                    const double y = b.to_double();
                    return Value(op == BinaryOp::mod ? python_mod(x, y) : std::floor(x / y));
                }
                const int64_t x = int_of(a);
                const int64_t y = int_of(b);
                if (x == std::numeric_limits<int64_t>::min() && y == -1) fail("integer overflow");
                int64_t q = x / y;
                int64_t r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) {
                    --q;
                    r += y;
                }
                return Value(op == BinaryOp::mod ? r : q);
            }
            if (op == BinaryOp::mod && a.is_string()) {
                std::string out = percent_format(a.as_string(), b);
                interp.check_string_size(out.size());
                return Value(std::move(out));
            }
            fail_operands(op == BinaryOp::mod ? "%" : "//", a, b);
        case BinaryOp::pow:
            if (a.is_number() && b.is_number()) {
                if (is_integral(a) && is_integral(b) && int_of(b) >= 0) {
                    int64_t result = 1;
                    const int64_t base = int_of(a);
                    for (int64_t e = int_of(b); e > 0; --e) {
                        result = checked(result, base, BinaryOp::mul);
                        if (result == 0 || result == 1) break;
                    }
                    return Value(result);
                }
                return Value(std::pow(a.to_double(), b.to_double()));
            }
            fail_operands("**", a, b);
        case BinaryOp::logical_and:
        case BinaryOp::logical_or: break;  // short-circuited by the interpreter
    }
    fail("bad operator");
}

bool contains(const Value & container, const Value & item) {
    switch (container.kind()) {
        case ValueKind::undefined: return false;
        case ValueKind::string:
            if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + std::string(type_name(item)));
            return container.as_string().find(item.as_string()) != std::string::npos;
        case ValueKind::array:
            for (const Value & v : container.as_array()) {
                if (equals(v, item)) return true;
            }
            return false;
        case ValueKind::object:
            return item.is_string() && !container.as_object().is_namespace && container.as_object().find(item.as_string()) != nullptr;
        default: fail("argument of type '" + std::string(type_name(container)) + "' is not iterable");
    }
}

Value get_attribute(const Value & object, std::string_view name) {
    switch (object.kind()) {
        case ValueKind::undefined: fail_undefined(object);
        case ValueKind::object: {
            const Object & o = object.as_object();
            if (!o.is_namespace) {
                Value method = bind_method(object, name);
                if (!method.is_undefined()) return method;
            }
            if (const Value * v = o.find(name)) return *v;
            break;
        }
        case ValueKind::string:
        case ValueKind::array: {
            Value method = bind_method(object, name);
            if (!method.is_undefined()) return method;
            break;
        }
        default: break;
    }
    return Value::undefined(object_desc(object) + " has no attribute '" + std::string(name) + "'");
}

Value get_item(const Value & object, const Value & key) {
    switch (object.kind()) {
        case ValueKind::undefined: fail_undefined(object);
        case ValueKind::array:
        case ValueKind::string:
            if (is_integral(key)) {
                int64_t i = int_of(key);
                if (object.is_array()) {
                    const auto n = static_cast<int64_t>(object.as_array().size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return object.as_array()[static_cast<size_t>(i)];
                } else {
                    const std::vector<std::string_view> chars = utf8_chars(object.as_string());
                    const auto n = static_cast<int64_t>(chars.size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return Value(chars[static_cast<size_t>(i)]);
                }
                return Value::undefined(object_desc(object) + " has no element " + std::to_string(int_of(key)));
            }
            break;
        case ValueKind::object:
            if (key.is_string()) {
                if (!object.as_object().is_namespace) {
                    if (const Value * v = object.as_object().find(key.as_string())) return *v;
                }
                return get_attribute(object, key.as_string());
            }
            break;
        default: break;
    }
    if (key.is_string()) return get_attribute(object, key.as_string());
    return Value::undefined(object_desc(object) + " has no element " + repr(key));
}

// ---- Frame ----------------------------------------------------------------------------------

const Value * Frame::lookup(std::string_view name) const {
    for (const Frame * f = this; f != nullptr; f = f->parent.get()) {
        for (const auto & [key, value] : f->vars) {
            if (key == name) return &value;
        }
    }
    return nullptr;
}

void Frame::set(const std::string & name, Value value) {
    for (auto & [key, v] : vars) {
        if (key == name) {
            v = std::move(value);
            return;
        }
    }
    vars.emplace_back(name, std::move(value));
}

// ---- Interpreter ----------------------------------------------------------------------------

struct Interpreter::DepthGuard {
    explicit DepthGuard(Interpreter & i) : interp(i) {
        if (++interp.depth_ > interp.options_.limits.max_depth) {
            throw TemplateError(ErrorKind::limit, "recursion deeper than " + std::to_string(interp.options_.limits.max_depth) + " levels");
        }
    }
    ~DepthGuard() { --interp.depth_; }
    DepthGuard(const DepthGuard &) = delete;
    DepthGuard & operator=(const DepthGuard &) = delete;
    Interpreter & interp;
};

Interpreter::Interpreter(const RenderOptions & options) : options_(options) {}

Interpreter::~Interpreter() {
    for (const auto & ns : namespaces_) ns->entries.clear();
}

std::string Interpreter::render(const Body & body, const Value & context) {
    root_ = std::make_shared<Frame>();
    Object globals;
    add_globals(globals);
    for (auto & [name, value] : globals.entries) root_->set(name, std::move(value));
    if (context.is_object()) {
        for (const auto & [name, value] : context.as_object().entries) root_->set(name, value);
    }
    std::string out;
    out_ = &out;
    exec_body(body, root_);
    out_ = nullptr;
    root_.reset();
    return out;
}

void Interpreter::charge(uint64_t units) {
    steps_ += units;
    if (steps_ > options_.limits.max_steps) {
        throw TemplateError(ErrorKind::limit, "template ran too long (over " + std::to_string(options_.limits.max_steps) + " steps)");
    }
}

void Interpreter::charge_search(uint64_t haystack_bytes, uint64_t needle_bytes) {
    const double worst = static_cast<double>(haystack_bytes) * static_cast<double>(std::max<uint64_t>(needle_bytes, 1)) / 1024;
    charge(1 + (worst < 1e18 ? static_cast<uint64_t>(worst) : uint64_t{1} << 60));
}

void Interpreter::check_string_size(size_t bytes) const {
    if (bytes > options_.limits.max_string_bytes) {
        throw TemplateError(ErrorKind::too_large,
                            "template output or string larger than " + std::to_string(options_.limits.max_string_bytes >> 20) + " MiB");
    }
}

void Interpreter::check_list_size(uint64_t n) const {
    if (n > options_.limits.max_list_items) {
        throw TemplateError(ErrorKind::too_large, "list longer than " + std::to_string(options_.limits.max_list_items) + " items");
    }
}

std::tm Interpreter::local_time() const {
    if (options_.local_time) return options_.local_time();
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm t{};
#ifdef _WIN32
    localtime_s(&t, &now);
#else
    localtime_r(&now, &t);
#endif
    return t;
}

Value Interpreter::make_namespace() {
    auto ns = std::make_shared<Object>();
    ns->is_namespace = true;
    namespaces_.push_back(ns);
    return Value(ns);
}

void Interpreter::write(std::string_view text) {
    check_string_size(out_->size() + text.size());
    out_->append(text);
}

std::string Interpreter::capture(const Body & body, const std::shared_ptr<Frame> & frame) {
    std::string buffer;
    std::string * saved = out_;
    out_ = &buffer;
    try {
        exec_body(body, frame);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buffer;
}

Value Interpreter::call(const Value & callee, CallArgs & args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is_callable()) fail("'" + std::string(type_name(callee)) + "' object is not callable");
    return callee.as_callable().function(*this, args);
}

Value Interpreter::apply_filter(std::string_view name, const Value & operand, CallArgs & args) {
    const FilterFunction f = find_filter(name);
    if (f == nullptr) fail("no filter named '" + std::string(name) + "'");
    if (operand.is_string() || !reads_items_whole(name)) charge_bytes(bytes_read_by(operand));
    return f(*this, operand, args);
}

bool Interpreter::apply_test(std::string_view name, const Value & operand, CallArgs & args) {
    const TestFunction t = find_test(name);
    if (t == nullptr) fail("no test named '" + std::string(name) + "'");
    if (args.positional.size() != test_arity(name) || !args.keyword.empty()) {
        fail("test '" + std::string(name) + "' takes " + std::to_string(test_arity(name)) + " argument(s), " +
             std::to_string(args.positional.size() + args.keyword.size()) + " given");
    }
    if (name == "in") {
        charge_search(bytes_read_by(args.positional[0]), bytes_read_by(operand));
    } else if (!args.positional.empty()) {  // a comparison
        charge_bytes(bytes_read_by(operand) + bytes_read_by(args.positional[0]));
    }
    return t(*this, operand, args);
}

// ---- statements -----------------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_body(const Body & body, const std::shared_ptr<Frame> & frame) {
    for (const StmtPtr & stmt : body) {
        const Flow flow = exec(*stmt, frame);
        if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt & stmt, const std::shared_ptr<Frame> & frame) {
    DepthGuard guard(*this);
    charge(1);
    try {
        return std::visit([&](const auto & node) { return exec_node(node, frame); }, stmt.node);
    } catch (const TemplateError & e) {
        if (e.has_pos()) throw;
        throw e.at(stmt.pos);
    }
}

Interpreter::Flow Interpreter::exec_node(const TextStmt & s, const std::shared_ptr<Frame> &) {
    write(s.text);
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const OutputStmt & s, const std::shared_ptr<Frame> & frame) {
    const Value v = eval(*s.expr, frame);
    if (v.is_string()) {
        write(v.as_string());
    } else {
        check_string_size(out_->size() + bytes_read_by(v));
        write(to_str(v));
    }
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const IfStmt & s, const std::shared_ptr<Frame> & frame) {
    for (const auto & [condition, body] : s.branches) {
        if (truthy(eval(*condition, frame))) return exec_body(body, frame);
    }
    return exec_body(s.else_body, frame);
}

Interpreter::Flow Interpreter::exec_node(const ForStmt & s, const std::shared_ptr<Frame> & frame) {
    const Value iterable = eval(*s.iterable, frame);
    // A list is walked in place (`iterable` keeps it alive); dicts and strings are expanded.
    Array expanded;
    const Array * items = &expanded;
    if (iterable.is_array()) {
        items = &iterable.as_array();
    } else {
        expanded = iterate(iterable);
    }
    charge(items->size() / 16);
    if (s.filter) {
        // `for x in xs if cond`: cond sees x; loop.length counts the items that pass.
        Array kept;
        for (const Value & item : *items) {
            auto scope = std::make_shared<Frame>();
            scope->parent = frame;
            assign(s.target, item, scope);
            if (truthy(eval(*s.filter, scope))) kept.push_back(item);
        }
        expanded = std::move(kept);
        items = &expanded;
    }
    if (items->empty()) return exec_body(s.else_body, frame);

    const auto n = static_cast<int64_t>(items->size());
    // One `loop` object for the whole loop, its values updated in place each iteration.
    // NOTE: so a template that stashes `loop` away sees it change; Jinja would keep a
    // snapshot. Building a fresh 12-entry object per iteration costs more than the rest of
    // an iteration together.
    auto index = std::make_shared<int64_t>(0);
    auto loop = std::make_shared<Object>();
    for (const char * key :
         {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem", "nextitem"}) {
        loop->entries.emplace_back(key, Value());
    }
    loop->entries.emplace_back("cycle", Value::function("cycle", [index](Interpreter &, CallArgs & args) {
                                   if (args.positional.empty()) fail("loop.cycle() needs at least one value");
                                   return args.positional[static_cast<size_t>(*index) % args.positional.size()];
                               }));
    const Value loop_value(loop);
    for (int64_t i = 0; i < n; ++i) {
        charge(1);
        *index = i;
        const auto at = [&](int64_t k) { return (*items)[static_cast<size_t>(k)]; };
        auto & e = loop->entries;
        e[0].second = Value(i + 1);
        e[1].second = Value(i);
        e[2].second = Value(n - i);
        e[3].second = Value(n - i - 1);
        e[4].second = Value(i == 0);
        e[5].second = Value(i == n - 1);
        e[6].second = Value(n);
        e[7].second = Value(1);
        e[8].second = Value(0);
        e[9].second = i > 0 ? at(i - 1) : Value::undefined("there is no previous item");
        e[10].second = i + 1 < n ? at(i + 1) : Value::undefined("there is no next item");
        auto scope = std::make_shared<Frame>();
        scope->parent = frame;
        scope->vars.reserve(1 + s.target.names.size());
        scope->vars.emplace_back("loop", loop_value);
        assign(s.target, at(i), scope);
        const Flow flow = exec_body(s.body, scope);
        if (flow == Flow::break_loop) break;
    }
    return Flow::normal;
}

void Interpreter::assign(const Target & target, Value value, const std::shared_ptr<Frame> & frame) {
    if (!target.ns_attribute.empty()) {
        const Value * ns = frame->lookup(target.names[0]);
        if (ns == nullptr || !ns->is_object() || !ns->as_object().is_namespace) {
            fail("cannot assign attribute '" + target.ns_attribute + "' on '" + target.names[0] + "': not a namespace()");
        }
        ns->as_mutable_object().set(target.ns_attribute, std::move(value));
        return;
    }
    if (target.names.size() == 1) {
        frame->set(target.names[0], std::move(value));
        return;
    }
    const Array parts = iterate(value);
    if (parts.size() != target.names.size()) {
        fail(parts.size() > target.names.size() ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                                                : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                                                      ", got " + std::to_string(parts.size()) + ")");
    }
    for (size_t i = 0; i < parts.size(); ++i) frame->set(target.names[i], parts[i]);
}

Interpreter::Flow Interpreter::exec_node(const SetStmt & s, const std::shared_ptr<Frame> & frame) {
    assign(s.target, eval(*s.value, frame), frame);
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const SetBlockStmt & s, const std::shared_ptr<Frame> & frame) {
    Value text(capture(s.body, frame));
    assign(s.target, apply_filters(s.filters, std::move(text), frame), frame);
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const MacroStmt & s, const std::shared_ptr<Frame> & frame) {
    // NOTE: the macro holds its scope weakly: a scope holding a macro that held the scope
    // would never be freed.
    std::weak_ptr<Frame> defined_in = frame;
    const MacroStmt * macro = &s;
    frame->set(s.name, Value::function(s.name, [macro, defined_in](Interpreter & interp, CallArgs & args) {
                   return interp.call_macro(*macro, defined_in, args);
               }));
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const FilterBlockStmt & s, const std::shared_ptr<Frame> & frame) {
    Value text(capture(s.body, frame));
    const Value result = apply_filters(s.filters, std::move(text), frame);
    write(to_str(result));
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_node(const LoopControlStmt & s, const std::shared_ptr<Frame> &) {
    return s.is_break ? Flow::break_loop : Flow::continue_loop;
}

Value Interpreter::apply_filters(const std::vector<FilterCall> & filters, Value value, const std::shared_ptr<Frame> & frame) {
    for (const FilterCall & f : filters) {
        try {
            CallArgs args = eval_args(f.args, f.kwargs, frame);
            value = apply_filter(f.name, value, args);
        } catch (const TemplateError & e) {
            if (e.has_pos()) throw;
            throw e.at(f.pos);
        }
    }
    return value;
}

Value Interpreter::call_macro(const MacroStmt & macro, const std::weak_ptr<Frame> & defined_in, CallArgs & args) {
    DepthGuard guard(*this);
    charge(1);
    if (args.positional.size() > macro.params.size()) {
        fail("macro '" + macro.name + "' takes not more than " + std::to_string(macro.params.size()) + " argument(s)");
    }
    for (const auto & [name, value] : args.keyword) {
        bool known = false;
        for (const MacroParam & p : macro.params) known = known || p.name == name;
        if (!known) fail("macro '" + macro.name + "' takes no keyword argument '" + name + "'");
    }
    auto scope = std::make_shared<Frame>();
    std::shared_ptr<Frame> parent = defined_in.lock();
    scope->parent = parent ? parent : root_;
    for (size_t i = 0; i < macro.params.size(); ++i) {
        const MacroParam & p = macro.params[i];
        if (const Value * v = args.find(i, p.name)) {
            scope->set(p.name, *v);
        } else if (p.default_value) {
            scope->set(p.name, eval(*p.default_value, scope));
        } else {
            scope->set(p.name, Value::undefined("'" + p.name + "' is undefined"));
        }
    }
    return Value(capture(macro.body, scope));
}

// ---- expressions ----------------------------------------------------------------------------

Value Interpreter::eval(const Expr & expr, const std::shared_ptr<Frame> & frame) {
    DepthGuard guard(*this);
    try {
        return std::visit([&](const auto & node) { return eval_node(node, frame); }, expr.node);
    } catch (const TemplateError & e) {
        if (e.has_pos()) throw;
        throw e.at(expr.pos);
    }
}

CallArgs Interpreter::eval_args(const std::vector<ExprPtr> & args, const std::vector<Keyword> & kwargs,
                                const std::shared_ptr<Frame> & frame) {
    CallArgs out;
    out.positional.reserve(args.size());
    for (const ExprPtr & a : args) out.positional.push_back(eval(*a, frame));
    for (const Keyword & k : kwargs) out.keyword.emplace_back(k.name, eval(*k.value, frame));
    return out;
}

Value Interpreter::eval_node(const LiteralExpr & e, const std::shared_ptr<Frame> &) { return e.value; }

Value Interpreter::eval_node(const NameExpr & e, const std::shared_ptr<Frame> & frame) {
    if (const Value * v = frame->lookup(e.name)) return *v;
    return Value::undefined("'" + e.name + "' is undefined");
}

Value Interpreter::eval_node(const ListExpr & e, const std::shared_ptr<Frame> & frame) {
    Array items;
    items.reserve(e.items.size());
    for (const ExprPtr & item : e.items) items.push_back(eval(*item, frame));
    return Value(std::move(items));
}

Value Interpreter::eval_node(const DictExpr & e, const std::shared_ptr<Frame> & frame) {
    auto obj = std::make_shared<Object>();
    for (const auto & [key_expr, value_expr] : e.items) {
        const Value key = eval(*key_expr, frame);
        if (!key.is_string()) fail("dict keys must be strings, not " + std::string(type_name(key)));
        obj->set(key.as_string(), eval(*value_expr, frame));
    }
    return Value(obj);
}

Value Interpreter::eval_node(const GetAttrExpr & e, const std::shared_ptr<Frame> & frame) {
    return get_attribute(eval(*e.object, frame), e.attribute);
}

Value Interpreter::eval_node(const GetItemExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value object = eval(*e.object, frame);
    // A string is indexed by characters, found by walking its bytes.
    if (object.is_string()) charge_bytes(object.as_string().size());
    return get_item(object, eval(*e.index, frame));
}

Value Interpreter::eval_node(const SliceExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value object = eval(*e.object, frame);
    auto bound = [&](const ExprPtr & x) -> std::optional<int64_t> {
        if (!x) return std::nullopt;
        const Value v = eval(*x, frame);
        if (v.is_none()) return std::nullopt;
        if (!is_integral(v)) fail("slice indices must be integers or None, not " + std::string(type_name(v)));
        return int_of(v);
    };
    const std::optional<int64_t> start = bound(e.start);
    const std::optional<int64_t> stop = bound(e.stop);
    const int64_t step = bound(e.step).value_or(1);
    if (step == 0) fail("slice step cannot be zero");
    if (object.is_undefined()) fail_undefined(object);
    if (object.is_array()) {
        const Array & a = object.as_array();
        charge(a.size() / 16);
        Array out;
        for (size_t i : slice_indices(a.size(), start, stop, step)) out.push_back(a[i]);
        return Value(std::move(out));
    }
    if (object.is_string()) {
        const std::vector<std::string_view> chars = utf8_chars(object.as_string());
        charge_bytes(object.as_string().size());
        std::string out;
        for (size_t i : slice_indices(chars.size(), start, stop, step)) out += chars[i];
        return Value(std::move(out));
    }
    // Jinja turns a failed subscript into an undefined value.
    return Value::undefined("'" + std::string(type_name(object)) + "' object is not subscriptable");
}

Value Interpreter::eval_node(const CallExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value callee = eval(*e.callee, frame);
    CallArgs args = eval_args(e.args, e.kwargs, frame);
    return call(callee, args);
}

Value Interpreter::eval_node(const FilterExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value operand = eval(*e.operand, frame);
    CallArgs args = eval_args(e.args, e.kwargs, frame);
    return apply_filter(e.name, operand, args);
}

Value Interpreter::eval_node(const TestExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value operand = eval(*e.operand, frame);
    CallArgs args = eval_args(e.args, {}, frame);
    return Value(apply_test(e.name, operand, args) != e.negated);
}

Value Interpreter::eval_node(const UnaryExpr & e, const std::shared_ptr<Frame> & frame) {
    const Value v = eval(*e.operand, frame);
    if (e.op == UnaryOp::logical_not) return Value(!truthy(v));
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_number())
        fail("bad operand type for unary " + std::string(e.op == UnaryOp::neg ? "-" : "+") + ": '" + std::string(type_name(v)) + "'");
    if (e.op == UnaryOp::pos) return v.is_bool() ? Value(int_of(v)) : v;
    if (v.is_float()) return Value(-v.as_float());
    return Value(checked(0, int_of(v), BinaryOp::sub));
}

Value Interpreter::eval_node(const BinaryExpr & e, const std::shared_ptr<Frame> & frame) {
    if (e.op == BinaryOp::logical_and || e.op == BinaryOp::logical_or) {
        Value left = eval(*e.left, frame);
        const bool short_circuit = truthy(left) == (e.op == BinaryOp::logical_or);
        return short_circuit ? left : eval(*e.right, frame);
    }
    const Value left = eval(*e.left, frame);
    const Value right = eval(*e.right, frame);
    return binary_op(*this, e.op, left, right);
}

Value Interpreter::eval_node(const CompareExpr & e, const std::shared_ptr<Frame> & frame) {
    Value left = eval(*e.first, frame);
    for (const auto & [op, right_expr] : e.rest) {
        Value right = eval(*right_expr, frame);
        if (op == CompareOp::in || op == CompareOp::not_in) {
            charge_search(bytes_read_by(right), bytes_read_by(left));
        } else {
            charge_bytes(bytes_read_by(left) + bytes_read_by(right));
        }
        bool result = false;
        switch (op) {
            case CompareOp::eq: result = equals(left, right); break;
            case CompareOp::ne: result = !equals(left, right); break;
            case CompareOp::in: result = contains(right, left); break;
            case CompareOp::not_in: result = !contains(right, left); break;
            default: {
                if (left.is_undefined()) fail_undefined(left);
                if (right.is_undefined()) fail_undefined(right);
                const int c = compare(left, right);
                result = op == CompareOp::lt ? c < 0 : op == CompareOp::le ? c <= 0 : op == CompareOp::gt ? c > 0 : c >= 0;
            }
        }
        if (!result) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Value Interpreter::eval_node(const ConditionalExpr & e, const std::shared_ptr<Frame> & frame) {
    if (truthy(eval(*e.condition, frame))) return eval(*e.then_value, frame);
    if (e.else_value) return eval(*e.else_value, frame);
    return Value::undefined("the inline if-expression on " + format_pos(e.then_value->pos) +
                            " evaluated to false and no else section was defined");
}

}  // namespace lr::jinja
