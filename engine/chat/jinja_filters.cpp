// Filters and tests (Jinja's builtins plus HF's tojson), looked up by name.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_interpreter.h"
#include "engine/chat/jinja_json.h"
#include "engine/chat/jinja_strings.h"

namespace lr::jinja {

namespace {

// ---- argument helpers -----------------------------------------------------------------------

Value arg(const CallArgs & args, size_t index, std::string_view name, Value fallback = {}) {
    const Value * v = args.find(index, name);
    return v ? *v : std::move(fallback);
}

bool arg_bool(const CallArgs & args, size_t index, std::string_view name, bool fallback) {
    const Value * v = args.find(index, name);
    return v ? truthy(*v) : fallback;
}

int64_t arg_int(const CallArgs & args, size_t index, std::string_view name, int64_t fallback) {
    const Value * v = args.find(index, name);
    if (v == nullptr || v->is_none()) return fallback;
    if (v->is_int()) return v->as_int();
    if (v->is_bool()) return v->as_bool() ? 1 : 0;
    fail("argument '" + std::string(name) + "' must be an integer, not " + std::string(type_name(*v)));
}

std::optional<std::string> arg_string(const CallArgs & args, size_t index, std::string_view name) {
    const Value * v = args.find(index, name);
    if (v == nullptr || v->is_none() || v->is_undefined()) return std::nullopt;
    return to_str(*v);
}

std::string str_of(const Value & v) { return v.is_string() ? v.as_string() : to_str(v); }

// Arguments after the first `skip` positional ones, for the test or filter that
// select/map/selectattr hand items to.
CallArgs rest_args(const CallArgs & args, size_t skip) {
    CallArgs rest;
    for (size_t i = skip; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
    return rest;
}

// `attribute="a.b.0"` lookups as Jinja's make_attrgetter does.
Value get_path(const Value & object, std::string_view path) {
    Value v = object;
    size_t start = 0;
    while (start <= path.size()) {
        const size_t dot = path.find('.', start);
        const std::string_view part = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        int64_t index = 0;
        const auto res = std::from_chars(part.data(), part.data() + part.size(), index);
        if (!part.empty() && res.ec == std::errc() && res.ptr == part.data() + part.size()) {
            v = get_item(v, Value(index));
        } else {
            v = get_item(v, Value(part));
        }
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return v;
}

// The key sort/unique/min/max compare: the attribute if given, lower-cased unless case-sensitive.
Value sort_key(const Value & item, const std::optional<std::string> & attribute, bool case_sensitive) {
    Value key = attribute ? get_path(item, *attribute) : item;
    if (!case_sensitive && key.is_string()) return Value(to_lower(key.as_string()));
    return key;
}

// ---- filters --------------------------------------------------------------------------------

Value f_abs(Interpreter &, const Value & v, CallArgs &) {
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_bool()) return Value(int64_t{v.as_bool()});
    fail("bad operand type for abs(): '" + std::string(type_name(v)) + "'");
}

// Attribute only, never an item: d|attr('key') is undefined for a plain dict.
Value f_attr(Interpreter &, const Value & v, CallArgs & args) {
    const std::string name = str_of(arg(args, 0, "name"));
    if (v.is_object() && v.as_object().is_namespace) {
        if (const Value * found = v.as_object().find(name)) return *found;
    }
    return bind_method(v, name);
}

Value f_capitalize(Interpreter &, const Value & v, CallArgs &) { return Value(capitalize(str_of(v))); }
Value f_lower(Interpreter &, const Value & v, CallArgs &) { return Value(to_lower(str_of(v))); }
Value f_upper(Interpreter &, const Value & v, CallArgs &) { return Value(to_upper(str_of(v))); }
Value f_title(Interpreter &, const Value & v, CallArgs &) { return Value(title_case(str_of(v))); }
Value f_string(Interpreter &, const Value & v, CallArgs &) { return Value(str_of(v)); }
Value f_safe(Interpreter &, const Value & v, CallArgs &) { return v; }

Value f_escape(Interpreter &, const Value & v, CallArgs &) {
    std::string out;
    for (char c : str_of(v)) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return Value(std::move(out));
}

Value f_length(Interpreter &, const Value & v, CallArgs &) {
    switch (v.kind()) {
        case ValueKind::undefined: return Value(0);
        case ValueKind::string: return Value(static_cast<int64_t>(utf8_length(v.as_string())));
        case ValueKind::array: return Value(static_cast<int64_t>(v.as_array().size()));
        case ValueKind::object:
            if (!v.as_object().is_namespace) return Value(static_cast<int64_t>(v.as_object().entries.size()));
            break;
        default: break;
    }
    fail("object of type '" + std::string(type_name(v)) + "' has no len()");
}

Value f_default(Interpreter &, const Value & v, CallArgs & args) {
    const bool boolean = arg_bool(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !truthy(v))) return arg(args, 0, "default_value", Value(""));
    return v;
}

Value f_first(Interpreter &, const Value & v, CallArgs &) {
    const Array items = iterate(v);
    return items.empty() ? Value::undefined("first: the sequence is empty") : items.front();
}

Value f_last(Interpreter &, const Value & v, CallArgs &) {
    const Array items = iterate(v);
    return items.empty() ? Value::undefined("last: the sequence is empty") : items.back();
}

Value f_list(Interpreter & interp, const Value & v, CallArgs &) {
    Array items = iterate(v);
    interp.charge(items.size() / 16);
    return Value(std::move(items));
}

Value f_items(Interpreter &, const Value & v, CallArgs &) {
    if (v.is_undefined()) return Value(Array{});
    if (!v.is_mapping()) fail("can only get item pairs from a mapping, not " + std::string(type_name(v)));
    Array out;
    for (const auto & [key, value] : v.as_object().entries) out.emplace_back(Array{Value(key), value});
    return Value(std::move(out));
}

Value f_join(Interpreter & interp, const Value & v, CallArgs & args) {
    const std::string sep = arg_string(args, 0, "d").value_or("");
    const std::optional<std::string> attribute = arg_string(args, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value & item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += str_of(attribute ? get_path(item, *attribute) : item);
        interp.check_string_size(out.size());
    }
    interp.charge_bytes(out.size());
    return Value(std::move(out));
}

Value f_trim(Interpreter &, const Value & v, CallArgs & args) {
    const std::optional<std::string> chars = arg_string(args, 0, "chars");
    return Value(strip(str_of(v), chars ? std::optional<std::string_view>(*chars) : std::nullopt, true, true));
}

Value f_replace(Interpreter & interp, const Value & v, CallArgs & args) {
    const std::string s = str_of(v);
    const std::string from = str_of(arg(args, 0, "old"));
    const std::string to = str_of(arg(args, 1, "new"));
    const int64_t count = arg_int(args, 2, "count", -1);
    const size_t size = replaced_size(s, from, to, count);
    interp.check_string_size(size);
    interp.charge_bytes(size);
    return Value(replace_all(s, from, to, count));
}

Value f_indent(Interpreter & interp, const Value & v, CallArgs & args) {
    if (v.is_undefined()) fail(v.undefined_hint());
    const Value width = arg(args, 0, "width", Value(4));
    std::string pad;
    if (width.is_string()) {
        pad = width.as_string();
    } else {
        const int64_t n = arg_int(args, 0, "width", 4);
        if (n < 0 || n > 1024) fail("indent: width out of range");
        pad.assign(static_cast<size_t>(n), ' ');
    }
    const bool first = arg_bool(args, 1, "first", false);
    const bool blank = arg_bool(args, 2, "blank", false);
    const std::string s = str_of(v) + "\n";  // Jinja appends a newline so splitlines keeps a trailing empty line
    const std::vector<std::string_view> lines = split_lines(s);
    interp.check_string_size(s.size() + lines.size() * pad.size());
    interp.charge_bytes(s.size() + lines.size() * pad.size());
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        const bool indent_line = i == 0 ? first : (blank || !lines[i].empty());
        if (indent_line) out += pad;
        out += lines[i];
    }
    return Value(std::move(out));
}

Value f_int(Interpreter &, const Value & v, CallArgs & args) {
    if (v.is_undefined()) fail(v.undefined_hint());  // int(Undefined) raises in Jinja too
    const int64_t fallback = arg_int(args, 0, "default", 0);
    const int64_t base = arg_int(args, 1, "base", 10);
    if (v.is_int()) return v;
    if (v.is_bool()) return Value(int64_t{v.as_bool()});
    if (v.is_float()) {
        const double d = v.as_float();
        if (std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
        return Value(fallback);
    }
    if (v.is_string()) {
        std::string_view s = strip(v.as_string(), std::nullopt, true, true);
        if (!s.empty() && s[0] == '+') s.remove_prefix(1);
        const bool negative = !s.empty() && s[0] == '-';
        std::string digits(negative ? s.substr(1) : s);
        // Python accepts the 0x / 0o / 0b prefix matching the base.
        const std::string prefix = digits.size() > 2 ? to_lower(digits.substr(0, 2)) : "";
        if ((base == 16 && prefix == "0x") || (base == 8 && prefix == "0o") || (base == 2 && prefix == "0b")) {
            digits.erase(0, 2);
            if (negative) digits.insert(0, 1, '-');
            s = digits;
        }
        int64_t i = 0;
        if (base >= 2 && base <= 36) {
            const auto res = std::from_chars(s.data(), s.data() + s.size(), i, static_cast<int>(base));
            if (!s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size()) return Value(i);
        }
        double d = 0;
        const auto res = std::from_chars(s.data(), s.data() + s.size(), d);
        if (!s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size() && std::fabs(d) < 9.2e18) {
            return Value(static_cast<int64_t>(d));
        }
    }
    return Value(fallback);
}

Value f_float(Interpreter &, const Value & v, CallArgs & args) {
    if (v.is_undefined()) fail(v.undefined_hint());
    const Value fallback = arg(args, 0, "default", Value(0.0));
    if (v.is_number()) return Value(v.to_double());
    if (v.is_string()) {
        std::string_view s = strip(v.as_string(), std::nullopt, true, true);
        if (!s.empty() && s[0] == '+') s.remove_prefix(1);
        double d = 0;
        const auto res = std::from_chars(s.data(), s.data() + s.size(), d);
        if (!s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size()) return Value(d);
    }
    return fallback;
}

Value f_round(Interpreter &, const Value & v, CallArgs & args) {
    if (!v.is_number()) fail("round: expected a number, not " + std::string(type_name(v)));
    const int64_t precision = arg_int(args, 0, "precision", 0);
    const std::string method = arg_string(args, 1, "method").value_or("common");
    if (precision < 0 || precision > 15) fail("round: precision out of range");
    if (method == "common" && (v.is_int() || v.is_bool())) return Value(v.is_int() ? v.as_int() : int64_t{v.as_bool()});
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.to_double() * scale;
    double r = 0;
    if (method == "common") r = std::nearbyint(x);  // half to even, as Python's round()
    else if (method == "ceil") r = std::ceil(x);
    else if (method == "floor") r = std::floor(x);
    else fail("round: method must be 'common', 'ceil' or 'floor'");
    return Value(r / scale);
}

Value f_tojson(Interpreter & interp, const Value & v, CallArgs & args) {
    args.expect("tojson", 1, {"indent", "ensure_ascii", "separators", "sort_keys"});
    JsonFormat format;
    const Value indent = arg(args, 0, "indent");
    if (!indent.is_undefined() && !indent.is_none()) {
        const int64_t n = arg_int(args, 0, "indent", 0);
        if (n < 0 || n > 64) fail("tojson: indent out of range");
        format.indent = static_cast<int>(n);
    }
    format.ensure_ascii = arg_bool(args, 99, "ensure_ascii", false);
    format.sort_keys = arg_bool(args, 99, "sort_keys", false);
    const Value separators = arg(args, 99, "separators");
    if (separators.is_array() && separators.as_array().size() == 2) {
        format.item_separator = str_of(separators.as_array()[0]);
        format.key_separator = str_of(separators.as_array()[1]);
    }
    std::string out = to_json(v, format);
    interp.check_string_size(out.size());
    interp.charge_bytes(out.size());
    return Value(std::move(out));
}

Value f_map(Interpreter & interp, const Value & v, CallArgs & args) {
    Array out;
    const std::optional<std::string> attribute = arg_string(args, 99, "attribute");
    const Value fallback = arg(args, 99, "default");
    if (attribute) {
        for (const Value & item : iterate(v)) {
            Value x = get_path(item, *attribute);
            out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
        }
        return Value(std::move(out));
    }
    if (args.positional.empty()) fail("map: expected a filter name or attribute=");
    const std::string filter = str_of(args.positional[0]);
    for (const Value & item : iterate(v)) {
        CallArgs rest = rest_args(args, 1);
        out.push_back(interp.apply_filter(filter, item, rest));
    }
    return Value(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_impl(Interpreter & interp, const Value & v, CallArgs & args, bool by_attribute, bool keep) {
    Array out;
    if (v.is_none()) return Value(std::move(out));  // Jinja skips a falsy sequence
    std::optional<std::string> attribute;
    size_t first_arg = 0;
    if (by_attribute) {
        attribute = arg_string(args, 0, "attr");
        if (!attribute) fail("selectattr/rejectattr: missing attribute name");
        first_arg = 1;
    }
    const std::optional<std::string> test = args.positional.size() > first_arg
                                                ? std::optional<std::string>(str_of(args.positional[first_arg]))
                                                : std::nullopt;
    for (const Value & item : iterate(v)) {
        const Value subject = attribute ? get_path(item, *attribute) : item;
        bool passed = false;
        if (test) {
            CallArgs rest = rest_args(args, first_arg + 1);
            passed = interp.apply_test(*test, subject, rest);
        } else {
            passed = truthy(subject);
        }
        if (passed == keep) out.push_back(item);
    }
    return Value(std::move(out));
}

Value f_select(Interpreter & i, const Value & v, CallArgs & a) { return select_impl(i, v, a, false, true); }
Value f_reject(Interpreter & i, const Value & v, CallArgs & a) { return select_impl(i, v, a, false, false); }
Value f_selectattr(Interpreter & i, const Value & v, CallArgs & a) { return select_impl(i, v, a, true, true); }
Value f_rejectattr(Interpreter & i, const Value & v, CallArgs & a) { return select_impl(i, v, a, true, false); }

Value f_unique(Interpreter &, const Value & v, CallArgs & args) {
    const bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
    const std::optional<std::string> attribute = arg_string(args, 1, "attribute");
    Array out;
    Array seen;
    for (const Value & item : iterate(v)) {
        const Value key = sort_key(item, attribute, case_sensitive);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value & s) { return equals(s, key); })) {
            seen.push_back(key);
            out.push_back(item);
        }
    }
    return Value(std::move(out));
}

Value f_sort(Interpreter & interp, const Value & v, CallArgs & args) {
    const bool reverse = arg_bool(args, 0, "reverse", false);
    const bool case_sensitive = arg_bool(args, 1, "case_sensitive", false);
    const std::optional<std::string> attribute = arg_string(args, 2, "attribute");
    Array items = iterate(v);
    interp.charge(items.size());
    std::vector<std::pair<Value, size_t>> keyed;
    for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(sort_key(items[i], attribute, case_sensitive), i);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto & a, const auto & b) {
        const int c = compare(a.first, b.first);
        return reverse ? c > 0 : c < 0;
    });
    Array out;
    for (const auto & k : keyed) out.push_back(items[k.second]);
    return Value(std::move(out));
}

Value f_dictsort(Interpreter &, const Value & v, CallArgs & args) {
    if (!v.is_mapping()) fail("dictsort: expected a dict, not " + std::string(type_name(v)));
    const bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
    const std::string by = arg_string(args, 1, "by").value_or("key");
    const bool reverse = arg_bool(args, 2, "reverse", false);
    Array pairs;
    for (const auto & [key, value] : v.as_object().entries) pairs.emplace_back(Array{Value(key), value});
    const size_t pos = by == "value" ? 1 : 0;
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value & a, const Value & b) {
        const int c = compare(sort_key(a.as_array()[pos], std::nullopt, case_sensitive),
                              sort_key(b.as_array()[pos], std::nullopt, case_sensitive));
        return reverse ? c > 0 : c < 0;
    });
    return Value(std::move(pairs));
}

Value min_max(const Value & v, CallArgs & args, bool want_max) {
    const bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
    const std::optional<std::string> attribute = arg_string(args, 1, "attribute");
    const Array items = iterate(v);
    if (items.empty()) return Value::undefined("no min/max of an empty sequence");
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        const int c = compare(sort_key(items[i], attribute, case_sensitive), sort_key(items[best], attribute, case_sensitive));
        if (want_max ? c > 0 : c < 0) best = i;
    }
    return items[best];
}

Value f_max(Interpreter &, const Value & v, CallArgs & args) { return min_max(v, args, true); }
Value f_min(Interpreter &, const Value & v, CallArgs & args) { return min_max(v, args, false); }

Value f_sum(Interpreter & interp, const Value & v, CallArgs & args) {
    const std::optional<std::string> attribute = arg_string(args, 0, "attribute");
    Value total = arg(args, 1, "start", Value(0));
    for (const Value & item : iterate(v)) {
        total = binary_op(interp, BinaryOp::add, total, attribute ? get_path(item, *attribute) : item);
    }
    return total;
}

Value f_reverse(Interpreter &, const Value & v, CallArgs &) {
    Array items = iterate(v);
    std::reverse(items.begin(), items.end());
    if (!v.is_string()) return Value(std::move(items));
    std::string out;
    for (const Value & ch : items) out += ch.as_string();
    return Value(std::move(out));
}

// Runs of word characters, as Jinja's \w+ (letters, digits, _; any non-ASCII byte counts).
Value f_wordcount(Interpreter &, const Value & v, CallArgs &) {
    int64_t n = 0;
    bool in_word = false;
    for (char c : str_of(v)) {
        const auto b = static_cast<unsigned char>(c);
        const bool word = std::isalnum(b) != 0 || c == '_' || b >= 0x80;
        if (word && !in_word) ++n;
        in_word = word;
    }
    return Value(n);
}

struct NamedFilter {
    std::string_view name;
    FilterFunction function;
};

constexpr NamedFilter k_filters[] = {
    {"abs", f_abs},           {"attr", f_attr},       {"capitalize", f_capitalize},
    {"count", f_length},      {"d", f_default},       {"default", f_default},
    {"dictsort", f_dictsort}, {"e", f_escape},        {"escape", f_escape},
    {"first", f_first},       {"float", f_float},     {"indent", f_indent},
    {"int", f_int},           {"items", f_items},     {"join", f_join},
    {"last", f_last},         {"length", f_length},   {"list", f_list},
    {"lower", f_lower},       {"map", f_map},         {"max", f_max},
    {"min", f_min},           {"reject", f_reject},   {"rejectattr", f_rejectattr},
    {"replace", f_replace},   {"reverse", f_reverse}, {"round", f_round},
    {"safe", f_safe},         {"select", f_select},   {"selectattr", f_selectattr},
    {"sort", f_sort},         {"string", f_string},   {"sum", f_sum},
    {"title", f_title},       {"tojson", f_tojson},   {"trim", f_trim},
    {"unique", f_unique},     {"upper", f_upper},     {"wordcount", f_wordcount},
};

// ---- tests ----------------------------------------------------------------------------------

Value test_arg(const CallArgs & args) {
    if (args.positional.empty()) fail("this test needs an argument");
    return args.positional[0];
}

// value % divisor == 0, for ints and floats as Python computes it.
bool divisible(const Value & v, const Value & divisor, std::string_view test) {
    if (!v.is_number() || !divisor.is_number()) {
        fail("test '" + std::string(test) + "' expects a number, not " + std::string(type_name(v.is_number() ? divisor : v)));
    }
    if (divisor.to_double() == 0.0) fail(std::string(test) + ": division by zero");
    if (v.is_float() || divisor.is_float()) return std::fmod(v.to_double(), divisor.to_double()) == 0.0;
    const int64_t d = divisor.is_bool() ? 1 : divisor.as_int();
    return (v.is_bool() ? int64_t{v.as_bool()} : v.as_int()) % d == 0;
}

bool t_defined(Interpreter &, const Value & v, CallArgs &) { return !v.is_undefined(); }
bool t_undefined(Interpreter &, const Value & v, CallArgs &) { return v.is_undefined(); }
bool t_none(Interpreter &, const Value & v, CallArgs &) { return v.is_none(); }
bool t_boolean(Interpreter &, const Value & v, CallArgs &) { return v.is_bool(); }
bool t_true(Interpreter &, const Value & v, CallArgs &) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter &, const Value & v, CallArgs &) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Interpreter &, const Value & v, CallArgs &) { return v.is_int(); }
bool t_float(Interpreter &, const Value & v, CallArgs &) { return v.is_float(); }
bool t_number(Interpreter &, const Value & v, CallArgs &) { return v.is_number(); }
bool t_string(Interpreter &, const Value & v, CallArgs &) { return v.is_string(); }
bool t_mapping(Interpreter &, const Value & v, CallArgs &) { return v.is_mapping(); }
bool t_callable(Interpreter &, const Value & v, CallArgs &) { return v.is_callable(); }
bool t_iterable(Interpreter &, const Value & v, CallArgs &) { return v.is_undefined() || v.is_string() || v.is_array() || v.is_mapping(); }
bool t_sequence(Interpreter & i, const Value & v, CallArgs & a) { return t_iterable(i, v, a); }
bool t_odd(Interpreter &, const Value & v, CallArgs &) {
    return !divisible(v, Value(2), "odd") && (!v.is_float() || std::fmod(v.as_float(), 1.0) == 0.0);
}
bool t_even(Interpreter &, const Value & v, CallArgs &) { return divisible(v, Value(2), "even"); }
bool t_divisibleby(Interpreter &, const Value & v, CallArgs & a) { return divisible(v, test_arg(a), "divisibleby"); }
bool t_eq(Interpreter &, const Value & v, CallArgs & a) { return equals(v, test_arg(a)); }
bool t_ne(Interpreter &, const Value & v, CallArgs & a) { return !equals(v, test_arg(a)); }
bool t_lt(Interpreter &, const Value & v, CallArgs & a) { return compare(v, test_arg(a)) < 0; }
bool t_le(Interpreter &, const Value & v, CallArgs & a) { return compare(v, test_arg(a)) <= 0; }
bool t_gt(Interpreter &, const Value & v, CallArgs & a) { return compare(v, test_arg(a)) > 0; }
bool t_ge(Interpreter &, const Value & v, CallArgs & a) { return compare(v, test_arg(a)) >= 0; }
bool t_in(Interpreter &, const Value & v, CallArgs & a) { return contains(test_arg(a), v); }
bool t_sameas(Interpreter &, const Value & v, CallArgs & a) {
    const Value other = test_arg(a);
    if (v.identity() != nullptr || other.identity() != nullptr) return v.identity() == other.identity();
    return v.kind() == other.kind() && equals(v, other);
}
bool cased(const Value & v, bool upper) {
    bool any = false;
    for (char c : str_of(v)) {
        const bool is_upper = c >= 'A' && c <= 'Z';
        const bool is_lower = c >= 'a' && c <= 'z';
        if ((upper && is_lower) || (!upper && is_upper)) return false;
        any = any || is_upper || is_lower;
    }
    return any;
}
bool t_lower(Interpreter &, const Value & v, CallArgs &) { return cased(v, false); }
bool t_upper(Interpreter &, const Value & v, CallArgs &) { return cased(v, true); }
bool t_filter(Interpreter &, const Value & v, CallArgs &) { return v.is_string() && find_filter(v.as_string()); }
bool t_test(Interpreter &, const Value & v, CallArgs &) { return v.is_string() && find_test(v.as_string()); }

struct NamedTest {
    std::string_view name;
    TestFunction function;
    size_t n_args = 0;  // arguments after the value tested
};

constexpr NamedTest k_tests[] = {
    {"!=", t_ne, 1},
    {"<", t_lt, 1},
    {"<=", t_le, 1},
    {"==", t_eq, 1},
    {">", t_gt, 1},
    {">=", t_ge, 1},
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby, 1},
    {"eq", t_eq, 1},
    {"equalto", t_eq, 1},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge, 1},
    {"greaterthan", t_gt, 1},
    {"gt", t_gt, 1},
    {"in", t_in, 1},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le, 1},
    {"lessthan", t_lt, 1},
    {"lower", t_lower},
    {"lt", t_lt, 1},
    {"mapping", t_mapping},
    {"ne", t_ne, 1},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas, 1},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

FilterFunction find_filter(std::string_view name) {
    for (const NamedFilter & f : k_filters) {
        if (f.name == name) return f.function;
    }
    return nullptr;
}

TestFunction find_test(std::string_view name) {
    for (const NamedTest & t : k_tests) {
        if (t.name == name) return t.function;
    }
    return nullptr;
}

size_t test_arity(std::string_view name) {
    for (const NamedTest & t : k_tests) {
        if (t.name == name) return t.n_args;
    }
    return 0;
}

}  // namespace lr::jinja
