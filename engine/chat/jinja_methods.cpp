// Methods of str and dict values (Python's, as templates call them), the global functions,
// and a locale-independent strftime.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_interpreter.h"
#include "engine/chat/jinja_strings.h"

namespace lr::jinja {

namespace {

const std::string & string_arg(const CallArgs & args, size_t index, std::string_view method) {
    const Value * v = args.find(index, "");
    if (v == nullptr || !v->is_string()) {
        fail(std::string(method) + "() argument " + std::to_string(index + 1) + " must be str");
    }
    return v->as_string();
}

std::optional<std::string_view> optional_string_arg(const CallArgs & args, size_t index, std::string_view name) {
    const Value * v = args.find(index, name);
    if (v == nullptr || v->is_none()) return std::nullopt;
    if (!v->is_string()) fail("argument '" + std::string(name) + "' must be str or None");
    return std::string_view(v->as_string());
}

int64_t int_arg(const CallArgs & args, size_t index, std::string_view name, int64_t fallback) {
    const Value * v = args.find(index, name);
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_int()) fail("argument '" + std::string(name) + "' must be int");
    return v->as_int();
}

// startswith/endswith take a str or a tuple (list) of them.
bool affix_matches(const Value & affix, std::string_view s, bool prefix) {
    auto one = [&](const Value & a) {
        if (!a.is_string()) fail("startswith/endswith: expected str or a tuple of str");
        const std::string & x = a.as_string();
        return x.size() <= s.size() && (prefix ? s.substr(0, x.size()) == x : s.substr(s.size() - x.size()) == x);
    };
    if (affix.is_array()) return std::any_of(affix.as_array().begin(), affix.as_array().end(), one);
    return one(affix);
}

template <class Pred>
bool all_chars(std::string_view s, Pred pred) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

// The parts split() gives, counted before they are built.
uint64_t split_count(std::string_view s, std::optional<std::string_view> sep, int64_t max_split) {
    uint64_t n = 0;
    if (sep) {
        for (size_t i = s.find(*sep); i != std::string_view::npos; i = s.find(*sep, i + sep->size())) ++n;
        ++n;
    } else {
        for (size_t i = 0; i < s.size(); ++i) n += !is_space(s[i]) && (i == 0 || is_space(s[i - 1]));
    }
    return max_split >= 0 ? std::min<uint64_t>(n, static_cast<uint64_t>(max_split) + 1) : n;
}

Value call_string_method(Interpreter & interp, const std::string & s, std::string_view name, CallArgs & args) {
    // Every method but startswith/endswith reads the whole string; a search may read more.
    if (name != "startswith" && name != "endswith") {
        const Value * needle = args.find(0, "");
        interp.charge_search(s.size(), needle != nullptr && needle->is_string() ? needle->as_string().size() : 1);
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const auto chars = optional_string_arg(args, 0, "chars");
        return Value(strip(s, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "split") {
        const auto sep = optional_string_arg(args, 0, "sep");
        if (sep && sep->empty()) fail("split: empty separator");
        const int64_t max_split = int_arg(args, 1, "maxsplit", -1);
        interp.check_list_size(split_count(s, sep, max_split));
        Array out;
        for (std::string & part : split(s, sep, max_split)) out.emplace_back(std::move(part));
        return Value(std::move(out));
    }
    if (name == "splitlines") {
        interp.check_list_size(1 + static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n') + std::count(s.begin(), s.end(), '\r')));
        Array out;
        for (std::string_view line : split_lines(s)) out.emplace_back(line);
        return Value(std::move(out));
    }
    if (name == "startswith" || name == "endswith") {
        const Value * affix = args.find(0, "");
        if (affix == nullptr) fail(std::string(name) + "() takes at least 1 argument");
        return Value(affix_matches(*affix, s, name == "startswith"));
    }
    if (name == "upper") return Value(to_upper(s));
    if (name == "lower") return Value(to_lower(s));
    if (name == "title") return Value(title_case(s));
    if (name == "capitalize") return Value(capitalize(s));
    if (name == "replace") {
        const std::string & from = string_arg(args, 0, name);
        const std::string & to = string_arg(args, 1, name);
        const int64_t count = int_arg(args, 2, "count", -1);
        interp.check_string_size(replaced_size(s, from, to, count));
        interp.charge_bytes(replaced_size(s, from, to, count));
        return Value(replace_all(s, from, to, count));
    }
    if (name == "find" || name == "rfind" || name == "count") {
        const std::string & sub = string_arg(args, 0, name);
        if (name == "count") {
            if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
            int64_t n = 0;
            for (size_t i = s.find(sub); i != std::string::npos; i = s.find(sub, i + sub.size())) ++n;
            return Value(n);
        }
        const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
        return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_length(s.substr(0, at))));
    }
    if (name == "join") {
        const Value * items = args.find(0, "");
        if (items == nullptr) fail("join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (const Value & item : iterate(*items)) {
            if (!item.is_string()) fail("sequence item: expected str instance, " + std::string(type_name(item)) + " found");
            if (!first) out += s;
            first = false;
            out += item.as_string();
            interp.check_string_size(out.size());
        }
        interp.charge_bytes(out.size());
        return Value(std::move(out));
    }
    if (name == "isdigit") return Value(all_chars(s, [](unsigned char c) { return c >= '0' && c <= '9'; }));
    if (name == "isalpha") return Value(all_chars(s, [](unsigned char c) { return std::isalpha(c) != 0; }));
    if (name == "isalnum") return Value(all_chars(s, [](unsigned char c) { return std::isalnum(c) != 0; }));
    if (name == "isspace") return Value(all_chars(s, [](unsigned char c) { return is_space(static_cast<char>(c)); }));
    if (name == "islower") return Value(to_lower(s) == s && to_upper(s) != s);
    if (name == "isupper") return Value(to_upper(s) == s && to_lower(s) != s);
    fail("'str' object has no attribute '" + std::string(name) + "'");
}

Value call_dict_method(const Object & o, std::string_view name, CallArgs & args) {
    if (name == "get") {
        const Value * key = args.find(0, "key");
        if (key == nullptr) fail("get() takes at least 1 argument");
        if (key->is_string()) {
            if (const Value * v = o.find(key->as_string())) return *v;
        }
        const Value * fallback = args.find(1, "default");
        return fallback ? *fallback : Value::none();
    }
    Array out;
    for (const auto & [key, value] : o.entries) {
        if (name == "items") out.emplace_back(Array{Value(key), value});
        else if (name == "keys") out.emplace_back(key);
        else out.push_back(value);
    }
    return Value(std::move(out));
}

constexpr std::string_view k_string_methods[] = {
    "strip",   "lstrip", "rstrip", "split", "splitlines", "startswith", "endswith", "upper",   "lower",   "title",   "capitalize",
    "replace", "find",   "rfind",  "count", "join",       "isdigit",    "isalpha",  "isalnum", "isspace", "islower", "isupper",
};
constexpr std::string_view k_dict_methods[] = {"get", "items", "keys", "values"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// ---- globals --------------------------------------------------------------------------------

Value g_range(Interpreter & interp, CallArgs & args) {
    args.expect("range", 3);
    auto int_at = [&](size_t i) {
        const Value & v = args.positional[i];
        if (!v.is_int()) fail("range() arguments must be integers, not " + std::string(type_name(v)));
        return v.as_int();
    };
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    if (args.positional.empty()) fail("range expected at least 1 argument");
    if (args.positional.size() == 1) {
        stop = int_at(0);
    } else {
        start = int_at(0);
        stop = int_at(1);
        if (args.positional.size() == 3) step = int_at(2);
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)));
    interp.check_list_size(count > 1e18 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(count));
    interp.charge(1 + static_cast<uint64_t>(count) / 16);
    Array out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
    return Value(std::move(out));
}

Value g_namespace(Interpreter & interp, CallArgs & args) {
    Value ns = interp.make_namespace();
    Object & o = ns.as_mutable_object();
    for (const Value & v : args.positional) {
        if (!v.is_mapping()) fail("namespace() takes a dict or keyword arguments");
        for (const auto & [key, value] : v.as_object().entries) o.set(key, value);
    }
    for (const auto & [key, value] : args.keyword) o.set(key, value);
    return ns;
}

Value g_dict(Interpreter &, CallArgs & args) {
    Value d = Value::object();
    Object & o = d.as_mutable_object();
    for (const Value & v : args.positional) {
        if (!v.is_mapping()) fail("dict() takes a dict or keyword arguments");
        for (const auto & [key, value] : v.as_object().entries) o.set(key, value);
    }
    for (const auto & [key, value] : args.keyword) o.set(key, value);
    return d;
}

Value g_raise_exception(Interpreter &, CallArgs & args) {
    const Value * message = args.find(0, "message");
    throw TemplateError(ErrorKind::raised, message ? to_str(*message) : std::string("raise_exception() called"));
}

Value g_strftime_now(Interpreter & interp, CallArgs & args) {
    const Value * format = args.find(0, "format");
    if (format == nullptr || !format->is_string()) fail("strftime_now() expects a format string");
    return Value(format_time(format->as_string(), interp.local_time()));
}

}  // namespace

Value bind_method(const Value & object, std::string_view name) {
    if (object.is_string() && listed(k_string_methods, name)) {
        const std::string method(name);
        return Value::function(method, [object, method](Interpreter & interp, CallArgs & args) {
            return call_string_method(interp, object.as_string(), method, args);
        });
    }
    if (object.is_mapping() && listed(k_dict_methods, name)) {
        const std::string method(name);
        return Value::function(method, [object, method](Interpreter &, CallArgs & args) {
            return call_dict_method(object.as_object(), method, args);
        });
    }
    std::string hint = "'";
    hint += type_name(object);
    hint += " object' has no attribute '";
    hint += name;
    hint += "'";
    return Value::undefined(std::move(hint));
}

void add_globals(Object & globals) {
    globals.set("range", Value::function("range", g_range));
    globals.set("namespace", Value::function("namespace", g_namespace));
    globals.set("dict", Value::function("dict", g_dict));
    globals.set("raise_exception", Value::function("raise_exception", g_raise_exception));
    globals.set("strftime_now", Value::function("strftime_now", g_strftime_now));
}

std::string format_time(std::string_view format, const std::tm & t) {
    static constexpr const char * k_days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    static constexpr const char * k_months[] = {"January", "February", "March",     "April",   "May",      "June",
                                                "July",    "August",   "September", "October", "November", "December"};
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%' || i + 1 == format.size()) {
            out += format[i];
            continue;
        }
        char spec = format[++i];
        bool pad = true;  // glibc's %-d drops the padding
        if (spec == '-' && i + 1 < format.size()) {
            pad = false;
            spec = format[++i];
        }
        auto number = [&](int v, int width) {
            char buf[16];
            if (pad) {
                std::snprintf(buf, sizeof buf, "%0*d", width, v);
            } else {
                std::snprintf(buf, sizeof buf, "%d", v);
            }
            out += buf;
        };
        const int wday = std::clamp(t.tm_wday, 0, 6);
        const int mon = std::clamp(t.tm_mon, 0, 11);
        switch (spec) {
            case 'a': out += std::string(k_days[wday]).substr(0, 3); break;
            case 'A': out += k_days[wday]; break;
            case 'b':
            case 'h': out += std::string(k_months[mon]).substr(0, 3); break;
            case 'B': out += k_months[mon]; break;
            case 'd': number(t.tm_mday, 2); break;
            case 'e': {
                char buf[8];
                std::snprintf(buf, sizeof buf, "%2d", t.tm_mday);
                out += pad ? buf : std::to_string(t.tm_mday);
                break;
            }
            case 'H': number(t.tm_hour, 2); break;
            case 'I': number(t.tm_hour % 12 == 0 ? 12 : t.tm_hour % 12, 2); break;
            case 'j': number(t.tm_yday + 1, 3); break;
            case 'm': number(t.tm_mon + 1, 2); break;
            case 'M': number(t.tm_min, 2); break;
            case 'p': out += t.tm_hour < 12 ? "AM" : "PM"; break;
            case 'S': number(t.tm_sec, 2); break;
            case 'y': number((t.tm_year + 1900) % 100, 2); break;
            case 'Y': number(t.tm_year + 1900, 4); break;
            case 'Z':
            case 'z': break;
            case '%': out += '%'; break;
            default:
                out += '%';
                if (!pad) out += '-';
                out += spec;
        }
    }
    return out;
}

}  // namespace lr::jinja
