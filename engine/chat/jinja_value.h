#pragma once
// Values of the Jinja subset: Python's None, bool, int, float, str, list and dict, plus
// Jinja's Undefined, namespace() objects and callables (macros, builtins, bound methods).
// Lists and dicts are shared, as in Python: copying a Value copies a reference, so a
// namespace changed inside a macro or a loop is seen outside it. Strings are shared too
// (immutable), so no copy of a Value costs more than a reference: a template cannot make
// the interpreter copy a long string by reading it in a loop. Lists and plain dicts are
// never changed after they are built (as in HF's immutable sandbox); only namespaces are.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat/jinja_error.h"

namespace lr::jinja {

class Value;
class Interpreter;

enum class ValueKind { undefined, none, boolean, integer, floating, string, array, object, callable };

using Array = std::vector<Value>;

// A str-keyed dict in insertion order (Python 3.7+ dict order; tojson keeps it).
struct Object {
    std::vector<std::pair<std::string, Value>> entries;
    bool is_namespace = false;  // namespace(): attributes may be assigned

    const Value * find(std::string_view key) const;
    void set(std::string key, Value value);  // replaces or appends
};

// Arguments of a call, positional then keyword, as written.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    // The argument at position `index` or named `name`, else nullptr.
    const Value * find(size_t index, std::string_view name) const;
    // Fails when more than `max_positional` positional arguments or an unknown keyword was given.
    void expect(std::string_view function, size_t max_positional, std::initializer_list<std::string_view> keywords = {}) const;
};

using NativeFunction = std::function<Value(Interpreter &, CallArgs &)>;

struct Callable {
    std::string name;
    NativeFunction function;
};

struct Undefined {
    std::string hint;  // why it is undefined, for errors: "'x' is undefined"
};
struct None {};

class Value {
public:
    Value() = default;                                                               // undefined
    Value(None) : v_(None{}) {}                                                      // NOLINT(google-explicit-constructor)
    Value(bool b) : v_(b) {}                                                         // NOLINT(google-explicit-constructor)
    Value(int i) : v_(static_cast<int64_t>(i)) {}                                    // NOLINT(google-explicit-constructor)
    Value(int64_t i) : v_(i) {}                                                      // NOLINT(google-explicit-constructor)
    Value(double d) : v_(d) {}                                                       // NOLINT(google-explicit-constructor)
    Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT(google-explicit-constructor)
    Value(std::string_view s) : v_(std::make_shared<const std::string>(s)) {}        // NOLINT(google-explicit-constructor)
    Value(const char * s) : v_(std::make_shared<const std::string>(s)) {}            // NOLINT(google-explicit-constructor)
    Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}                    // NOLINT(google-explicit-constructor)
    Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}                           // NOLINT(google-explicit-constructor)
    Value(std::shared_ptr<const Callable> c) : v_(std::move(c)) {}                   // NOLINT(google-explicit-constructor)

    static Value undefined(std::string hint) {
        Value v;
        v.v_ = Undefined{std::move(hint)};
        return v;
    }
    static Value none() { return Value(None{}); }
    static Value object() { return Value(std::make_shared<Object>()); }
    static Value function(std::string name, NativeFunction fn) {
        return Value(std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)}));
    }

    ValueKind kind() const { return static_cast<ValueKind>(v_.index()); }
    bool is_undefined() const { return kind() == ValueKind::undefined; }
    bool is_none() const { return kind() == ValueKind::none; }
    bool is_bool() const { return kind() == ValueKind::boolean; }
    bool is_int() const { return kind() == ValueKind::integer; }
    bool is_float() const { return kind() == ValueKind::floating; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }  // bool is an int in Python
    bool is_string() const { return kind() == ValueKind::string; }
    bool is_array() const { return kind() == ValueKind::array; }
    bool is_object() const { return kind() == ValueKind::object; }
    bool is_mapping() const { return is_object() && !as_object().is_namespace; }
    bool is_callable() const { return kind() == ValueKind::callable; }

    bool as_bool() const { return std::get<bool>(v_); }
    int64_t as_int() const { return std::get<int64_t>(v_); }
    double as_float() const { return std::get<double>(v_); }
    const std::string & as_string() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
    const Array & as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
    const Object & as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
    Object & as_mutable_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
    const std::shared_ptr<Object> & object_ptr() const { return std::get<std::shared_ptr<Object>>(v_); }
    const Callable & as_callable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
    const std::string & undefined_hint() const { return std::get<Undefined>(v_).hint; }

    // Numeric value of an int, float or bool (Python's True == 1).
    double to_double() const;
    // Identity of a list, dict or callable (for `is sameas`); nullptr for scalars.
    const void * identity() const;

private:
    std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const std::string>, std::shared_ptr<Array>,
                 std::shared_ptr<Object>, std::shared_ptr<const Callable>>
        v_;
};

// Python's truth value: undefined, None, False, 0, 0.0, '' and empty containers are false.
bool truthy(const Value & v);

// Python's str() as Jinja prints it: undefined -> '', None -> 'None', True -> 'True',
// 1.0 -> '1.0', lists and dicts as their repr().
std::string to_str(const Value & v);

// Python's repr(): strings quoted, as inside a printed list.
std::string repr(const Value & v);

// Python's float repr: shortest round-trip digits, '1.0', '1e+20', '1.5e-07'.
std::string format_float(double d);

// Python's type name, for error messages: 'str', 'int', 'list', 'dict', 'NoneType', 'Undefined'...
std::string_view type_name(const Value & v);

// Python's ==. Undefined equals only undefined; 1 == 1.0 == True.
bool equals(const Value & a, const Value & b);

// Python's ordering for numbers, strings and lists: <0, 0, >0. Throws TemplateError for
// types Python cannot order ('<' not supported between 'int' and 'str').
int compare(const Value & a, const Value & b);

// Python's `format % args` for str: %s %r %d %i %f %e %g %x %o %c %% with flags, width and
// precision, `%(key)s` with a dict. A list on the right counts as a tuple of arguments.
std::string percent_format(std::string_view format, const Value & args);

// The items a for-loop visits: a list's elements, a dict's keys, a string's characters.
// Undefined iterates as empty (Jinja's default Undefined); None and numbers throw.
Array iterate(const Value & v);

}  // namespace lr::jinja
