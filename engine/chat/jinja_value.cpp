#include "engine/chat/jinja_value.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/chat/jinja_strings.h"

namespace lr::jinja {

namespace {

// NOTE: a namespace can be made to contain itself (set ns.me = ns); walks over values stop
// at this depth instead of recursing forever.
constexpr int k_max_value_depth = 64;
constexpr size_t k_max_iterated_string_bytes = size_t{1} << 20;
// A list or dict printed: the default cap on strings (RenderLimits), checked as it grows,
// since a list of shared long strings can stand for far more text than memory holds.
constexpr size_t k_max_repr_bytes = size_t{64} << 20;

void check_repr_size(size_t bytes) {
    if (bytes > k_max_repr_bytes) throw TemplateError(ErrorKind::too_large, "a list or dict too large to print (over 64 MiB)");
}

void check_depth(int depth) {
    if (depth > k_max_value_depth) {
        throw TemplateError(ErrorKind::limit, "value nested more than 64 levels deep (does it contain itself?)");
    }
}

std::string repr_string(std::string_view s) {
    // Python picks single quotes unless the text has a ' and no ".
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c == quote) {
                    out += '\\';
                    out += c;
                } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    out += quote;
    return out;
}

std::string repr_impl(const Value & v, int depth);

std::string repr_container(const Value & v, int depth) {
    check_depth(depth);
    std::string out;
    if (v.is_array()) {
        out = "[";
        bool first = true;
        for (const Value & item : v.as_array()) {
            if (!first) out += ", ";
            first = false;
            check_repr_size(out.size() + (item.is_string() ? item.as_string().size() : 0));  // before quoting it
            out += repr_impl(item, depth + 1);
            check_repr_size(out.size());
        }
        return out + "]";
    }
    const Object & o = v.as_object();
    out = o.is_namespace ? "<Namespace {" : "{";
    bool first = true;
    for (const auto & [key, item] : o.entries) {
        if (!first) out += ", ";
        first = false;
        check_repr_size(out.size() + (item.is_string() ? item.as_string().size() : 0));
        out += repr_string(key) + ": " + repr_impl(item, depth + 1);
        check_repr_size(out.size());
    }
    return out + (o.is_namespace ? "}>" : "}");
}

std::string repr_impl(const Value & v, int depth) {
    switch (v.kind()) {
        case ValueKind::undefined: return "Undefined";
        case ValueKind::string: return repr_string(v.as_string());
        case ValueKind::array:
        case ValueKind::object: return repr_container(v, depth);
        default: return to_str(v);
    }
}

bool equals_impl(const Value & a, const Value & b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
        const int64_t x = a.is_bool() ? int64_t{a.as_bool()} : a.as_int();
        const int64_t y = b.is_bool() ? int64_t{b.as_bool()} : b.as_int();
        return x == y;
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::undefined:
        case ValueKind::none: return true;
        // A value equals itself at once, as in Python: comparing a shared list or string
        // with itself costs nothing, however much it holds.
        case ValueKind::string: return &a.as_string() == &b.as_string() || a.as_string() == b.as_string();
        case ValueKind::array: {
            const Array & x = a.as_array();
            const Array & y = b.as_array();
            if (&x == &y) return true;
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i) {
                if (!equals_impl(x[i], y[i], depth + 1)) return false;
            }
            return true;
        }
        case ValueKind::object: {
            const Object & x = a.as_object();
            const Object & y = b.as_object();
            if (&x == &y) return true;
            if (x.is_namespace || y.is_namespace) return false;
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto & [key, item] : x.entries) {
                const Value * other = y.find(key);
                if (other == nullptr || !equals_impl(item, *other, depth + 1)) return false;
            }
            return true;
        }
        case ValueKind::callable: return a.identity() == b.identity();
        default: return false;
    }
}

int compare_impl(const Value & a, const Value & b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.to_double();
            const double y = b.to_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        const int64_t x = a.is_bool() ? int64_t{a.as_bool()} : a.as_int();
        const int64_t y = b.is_bool() ? int64_t{b.as_bool()} : b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        // Byte order of UTF-8 is code point order, as Python compares.
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_array() && b.is_array()) {
        const Array & x = a.as_array();
        const Array & y = b.as_array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equals_impl(x[i], y[i], depth + 1)) return compare_impl(x[i], y[i], depth + 1);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    fail("'<' not supported between instances of '" + std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
}

}  // namespace

const Value * Object::find(std::string_view key) const {
    for (const auto & entry : entries) {
        if (entry.first == key) return &entry.second;
    }
    return nullptr;
}

void Object::set(std::string key, Value value) {
    for (auto & entry : entries) {
        if (entry.first == key) {
            entry.second = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
}

const Value * CallArgs::find(size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    for (const auto & [key, value] : keyword) {
        if (key == name) return &value;
    }
    return nullptr;
}

void CallArgs::expect(std::string_view function, size_t max_positional, std::initializer_list<std::string_view> keywords) const {
    if (positional.size() > max_positional) {
        fail(std::string(function) + "() takes at most " + std::to_string(max_positional) + " positional argument(s), " +
             std::to_string(positional.size()) + " given");
    }
    for (const auto & entry : keyword) {
        bool known = false;
        for (std::string_view k : keywords) known = known || k == entry.first;
        if (!known) fail(std::string(function) + "() got an unexpected keyword argument '" + entry.first + "'");
    }
}

double Value::to_double() const {
    if (is_float()) return as_float();
    if (is_int()) return static_cast<double>(as_int());
    return as_bool() ? 1.0 : 0.0;
}

const void * Value::identity() const {
    switch (kind()) {
        case ValueKind::array: return std::get<std::shared_ptr<Array>>(v_).get();
        case ValueKind::object: return std::get<std::shared_ptr<Object>>(v_).get();
        case ValueKind::callable: return std::get<std::shared_ptr<const Callable>>(v_).get();
        default: return nullptr;
    }
}

bool truthy(const Value & v) {
    switch (v.kind()) {
        case ValueKind::undefined:
        case ValueKind::none: return false;
        case ValueKind::boolean: return v.as_bool();
        case ValueKind::integer: return v.as_int() != 0;
        case ValueKind::floating: return v.as_float() != 0.0;
        case ValueKind::string: return !v.as_string().empty();
        case ValueKind::array: return !v.as_array().empty();
        case ValueKind::object: return v.as_object().is_namespace || !v.as_object().entries.empty();
        case ValueKind::callable: return true;
    }
    return false;
}

std::string format_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits, then laid out as Python's repr does: positional for
    // exponents in [-4, 16), scientific otherwise.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
    const size_t e_pos = sci.find('e');
    std::string_view mantissa = sci.substr(0, e_pos);
    int exp = 0;
    std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp);
    bool negative = false;
    if (!mantissa.empty() && mantissa[0] == '-') {
        negative = true;
        mantissa.remove_prefix(1);
    }
    std::string digits;
    for (char c : mantissa) {
        if (c != '.') digits += c;
    }
    std::string out = negative ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        } else {
            const auto int_digits = static_cast<size_t>(exp) + 1;
            if (digits.size() <= int_digits) {
                out += digits + std::string(int_digits - digits.size(), '0') + ".0";
            } else {
                out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
            }
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
        out += '.';
        out += std::string_view(digits).substr(1);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + exp_buf;
}

std::string to_str(const Value & v) {
    switch (v.kind()) {
        case ValueKind::undefined: return "";
        case ValueKind::none: return "None";
        case ValueKind::boolean: return v.as_bool() ? "True" : "False";
        case ValueKind::integer: return std::to_string(v.as_int());
        case ValueKind::floating: return format_float(v.as_float());
        case ValueKind::string: return v.as_string();
        case ValueKind::array:
        case ValueKind::object: return repr_container(v, 0);
        case ValueKind::callable: return "<function " + v.as_callable().name + ">";
    }
    return "";
}

std::string repr(const Value & v) { return repr_impl(v, 0); }

std::string_view type_name(const Value & v) {
    switch (v.kind()) {
        case ValueKind::undefined: return "Undefined";
        case ValueKind::none: return "NoneType";
        case ValueKind::boolean: return "bool";
        case ValueKind::integer: return "int";
        case ValueKind::floating: return "float";
        case ValueKind::string: return "str";
        case ValueKind::array: return "list";
        case ValueKind::object: return v.as_object().is_namespace ? "Namespace" : "dict";
        case ValueKind::callable: return "function";
    }
    return "?";
}

bool equals(const Value & a, const Value & b) { return equals_impl(a, b, 0); }

int compare(const Value & a, const Value & b) { return compare_impl(a, b, 0); }

std::string percent_format(std::string_view format, const Value & args) {
    const bool by_key = args.is_mapping();
    const Array positional = (args.is_array() && !by_key) ? args.as_array() : Array{args};
    size_t next_arg = 0;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size()) fail("incomplete format");
        Value value;
        bool have_value = false;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string_view::npos || !by_key) fail("format requires a mapping");
            const Value * v = args.as_object().find(format.substr(i + 1, close - i - 1));
            if (v == nullptr) fail("format key '" + std::string(format.substr(i + 1, close - i - 1)) + "' not found");
            value = *v;
            have_value = true;
            i = close + 1;
        }
        std::string flags;
        while (i < format.size() && std::string_view("-+ 0#").find(format[i]) != std::string_view::npos) flags += format[i++];
        int width = 0;
        while (i < format.size() && format[i] >= '0' && format[i] <= '9') width = std::min(width * 10 + (format[i++] - '0'), 1000);
        int precision = -1;
        if (i < format.size() && format[i] == '.') {
            precision = 0;
            while (++i < format.size() && format[i] >= '0' && format[i] <= '9')
                precision = std::min(precision * 10 + (format[i] - '0'), 100);
        }
        while (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;
        if (i >= format.size()) fail("incomplete format");
        const char type = format[i];
        if (type == '%') {
            out += '%';
            continue;
        }
        if (!have_value) {
            if (next_arg >= positional.size()) fail("not enough arguments for format string");
            value = positional[next_arg++];
        }
        std::string text;
        bool numeric = false;
        switch (type) {
            case 's': text = to_str(value); break;
            case 'r':
            case 'a': text = repr(value); break;
            case 'c':
                text = value.is_string() ? value.as_string() : std::string(1, static_cast<char>(value.is_int() ? value.as_int() : 0));
                break;
            case 'd':
            case 'i':
            case 'u':
            case 'x':
            case 'X':
            case 'o': {
                if (!value.is_number())
                    fail(std::string("%") + type + " format: a real number is required, not " + std::string(type_name(value)));
                const int64_t n = value.is_float() ? static_cast<int64_t>(value.as_float())
                                                   : (value.is_bool() ? int64_t{value.as_bool()} : value.as_int());
                const uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
                char buf[32];
                const int base = (type == 'x' || type == 'X') ? 16 : type == 'o' ? 8 : 10;
                const auto res = std::to_chars(buf, buf + sizeof buf, magnitude, base);
                text.assign(buf, res.ptr);
                if (type == 'X')
                    for (char & ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                if (flags.find('#') != std::string::npos && base != 10) text = (base == 16 ? std::string("0") + type : "0o") + text;
                if (n < 0) text = "-" + text;
                numeric = true;
                break;
            }
            case 'f':
            case 'F':
            case 'e':
            case 'E':
            case 'g':
            case 'G': {
                if (!value.is_number())
                    fail(std::string("%") + type + " format: a real number is required, not " + std::string(type_name(value)));
                const double d = value.to_double();
                const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(type)));
                const auto fmt = lower == 'f'   ? std::chars_format::fixed
                                 : lower == 'e' ? std::chars_format::scientific
                                                : std::chars_format::general;
                char buf[512];
                const auto res = std::to_chars(buf, buf + sizeof buf, d, fmt, precision < 0 ? 6 : precision);
                text.assign(buf, res.ptr);
                if (lower == 'e' || lower == 'g') {
                    // C and Python write at least two exponent digits: 1e+05, not 1e+5.
                    const size_t e = text.find('e');
                    if (e != std::string::npos && text.size() - e == 3) text.insert(e + 2, "0");
                }
                if (type != lower)
                    for (char & ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                numeric = true;
                break;
            }
            default: fail(std::string("unsupported format character '") + type + "'");
        }
        if (type == 's' || type == 'r' || type == 'a') {
            if (precision >= 0) {
                const std::vector<std::string_view> chars = utf8_chars(text);
                if (chars.size() > static_cast<size_t>(precision)) {
                    std::string cut;
                    for (int k = 0; k < precision; ++k) cut += chars[static_cast<size_t>(k)];
                    text = cut;
                }
            }
        } else if (numeric && text[0] != '-') {
            if (flags.find('+') != std::string::npos) text = "+" + text;
            else if (flags.find(' ') != std::string::npos) text = " " + text;
        }
        const size_t length = utf8_length(text);
        if (static_cast<size_t>(width) > length) {
            const size_t pad = static_cast<size_t>(width) - length;
            if (flags.find('-') != std::string::npos) {
                text.append(pad, ' ');
            } else if (numeric && flags.find('0') != std::string::npos) {
                const size_t sign = (text[0] == '-' || text[0] == '+' || text[0] == ' ') ? 1 : 0;
                text.insert(sign, pad, '0');
            } else {
                text.insert(0, pad, ' ');
            }
        }
        out += text;
    }
    if (!by_key && next_arg < positional.size()) {
        fail("not all arguments converted during string formatting");
    }
    return out;
}

Array iterate(const Value & v) {
    switch (v.kind()) {
        case ValueKind::undefined: return {};
        case ValueKind::array: return v.as_array();
        case ValueKind::object: {
            if (v.as_object().is_namespace) break;
            Array keys;
            keys.reserve(v.as_object().entries.size());
            for (const auto & entry : v.as_object().entries) keys.emplace_back(entry.first);
            return keys;
        }
        case ValueKind::string: {
            // A value per character: bounded like the interpreter's default list cap.
            if (v.as_string().size() > k_max_iterated_string_bytes) {
                throw TemplateError(ErrorKind::too_large, "iterating over a string longer than 1 MiB");
            }
            Array chars;
            for (std::string_view ch : utf8_chars(v.as_string())) chars.emplace_back(ch);
            return chars;
        }
        default: break;
    }
    fail("'" + std::string(type_name(v)) + "' object is not iterable");
}

}  // namespace lr::jinja
