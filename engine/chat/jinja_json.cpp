#include "engine/chat/jinja_json.h"

#include "engine/common/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace lr::jinja {

namespace {

constexpr int k_max_json_depth = 128;

void append_escaped_code_point(std::string & out, uint32_t cp) {
    char buf[16];
    if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
}

// Decodes the UTF-8 sequence at s[i] (advancing i); a stray byte decodes as itself.
uint32_t decode_utf8(std::string_view s, size_t & i) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (i + n > s.size()) n = 1;
    uint32_t cp = n == 1 ? b : (b & (0x7F >> n));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    return cp;
}

void append_json_string(std::string & out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (ensure_ascii && static_cast<unsigned char>(c) >= 0x80) {
            append_escaped_code_point(out, decode_utf8(s, i));
            --i;
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

class JsonWriter {
public:
    explicit JsonWriter(const JsonFormat & format) : format_(format) {
        item_sep_ = !format.item_separator.empty() ? format.item_separator : (format.indent ? "," : ", ");
    }

    void write(const Value & v, int depth) {
        if (depth > k_max_json_depth) {
            throw TemplateError(ErrorKind::limit, "tojson: value nested too deeply (does it contain itself?)");
        }
        switch (v.kind()) {
            case ValueKind::none: out_ += "null"; return;
            case ValueKind::boolean: out_ += v.as_bool() ? "true" : "false"; return;
            case ValueKind::integer: out_ += std::to_string(v.as_int()); return;
            case ValueKind::floating: {
                const double d = v.as_float();
                if (std::isnan(d)) out_ += "NaN";
                else if (std::isinf(d)) out_ += d < 0 ? "-Infinity" : "Infinity";
                else out_ += format_float(d);
                return;
            }
            case ValueKind::string: append_json_string(out_, v.as_string(), format_.ensure_ascii); return;
            case ValueKind::array: write_array(v.as_array(), depth); return;
            case ValueKind::object:
                if (!v.as_object().is_namespace) {
                    write_object(v.as_object(), depth);
                    return;
                }
                break;
            default: break;
        }
        fail("Object of type " + std::string(type_name(v)) + " is not JSON serializable");
    }

    std::string take() { return std::move(out_); }

private:
    void newline(int depth) {
        if (!format_.indent) return;
        out_ += '\n';
        out_.append(static_cast<size_t>(*format_.indent) * static_cast<size_t>(depth), ' ');
    }

    void write_array(const Array & a, int depth) {
        if (a.empty()) {
            out_ += "[]";
            return;
        }
        out_ += '[';
        for (size_t i = 0; i < a.size(); ++i) {
            if (i > 0) out_ += item_sep_;
            newline(depth + 1);
            write(a[i], depth + 1);
        }
        newline(depth);
        out_ += ']';
    }

    void write_object(const Object & o, int depth) {
        if (o.entries.empty()) {
            out_ += "{}";
            return;
        }
        std::vector<const std::pair<std::string, Value> *> entries;
        for (const auto & e : o.entries) entries.push_back(&e);
        if (format_.sort_keys) {
            std::stable_sort(entries.begin(), entries.end(), [](auto * a, auto * b) { return a->first < b->first; });
        }
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            if (i > 0) out_ += item_sep_;
            newline(depth + 1);
            append_json_string(out_, entries[i]->first, format_.ensure_ascii);
            out_ += format_.key_separator;
            write(entries[i]->second, depth + 1);
        }
        newline(depth);
        out_ += '}';
    }

    const JsonFormat & format_;
    std::string item_sep_;
    std::string out_;
};

class JsonParser {
public:
    explicit JsonParser(std::string_view text) : s_(text) {}

    Value parse_document() {
        Value v = parse_value(0);
        skip_space();
        if (i_ != s_.size()) error("unexpected text after the value");
        return v;
    }

    [[noreturn]] void error(const std::string & what) const {
        throw TemplateError(ErrorKind::syntax, "JSON at byte " + std::to_string(i_) + ": " + what);
    }

private:
    void skip_space() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }

    bool consume(std::string_view word) {
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }

    Value parse_value(int depth) {
        if (depth > k_max_json_depth) error("nested too deeply");
        skip_space();
        if (i_ >= s_.size()) error("unexpected end");
        const char c = s_[i_];
        if (c == '{') return parse_object(depth);
        if (c == '[') return parse_array(depth);
        if (c == '"') return Value(parse_string());
        if (consume("true")) return Value(true);
        if (consume("false")) return Value(false);
        if (consume("null")) return Value::none();
        return parse_number();
    }

    Value parse_object(int depth) {
        ++i_;
        auto obj = std::make_shared<Object>();
        skip_space();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            return Value(obj);
        }
        while (true) {
            skip_space();
            if (i_ >= s_.size() || s_[i_] != '"') error("expected a string key");
            std::string key = parse_string();
            skip_space();
            if (!consume(":")) error("expected ':'");
            obj->set(std::move(key), parse_value(depth + 1));
            skip_space();
            if (consume(",")) continue;
            if (consume("}")) return Value(obj);
            error("expected ',' or '}'");
        }
    }

    Value parse_array(int depth) {
        ++i_;
        Array items;
        skip_space();
        if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            return Value(std::move(items));
        }
        while (true) {
            items.push_back(parse_value(depth + 1));
            skip_space();
            if (consume(",")) continue;
            if (consume("]")) return Value(std::move(items));
            error("expected ',' or ']'");
        }
    }

    uint32_t parse_hex4() {
        if (i_ + 4 > s_.size()) error("short \\u escape");
        uint32_t v = 0;
        const auto res = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, v, 16);
        if (res.ptr != s_.data() + i_ + 4) error("bad \\u escape");
        i_ += 4;
        return v;
    }

    std::string parse_string() {
        ++i_;  // opening quote
        std::string out;
        while (true) {
            if (i_ >= s_.size()) error("unterminated string");
            const char c = s_[i_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) error("unterminated string");
            const char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = parse_hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && consume("\\u")) {
                        const uint32_t low = parse_hex4();
                        if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: error("bad escape");
            }
        }
    }

    Value parse_number() {
        const size_t start = i_;
        bool is_float = false;
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        while (i_ < s_.size()) {
            const char c = s_[i_];
            if (c >= '0' && c <= '9') {
                ++i_;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                is_float = true;
                ++i_;
            } else {
                break;
            }
        }
        if (i_ == start) error("unexpected character");
        const char * first = s_.data() + start;
        const char * last = s_.data() + i_;
        if (!is_float) {
            int64_t v = 0;
            const auto res = std::from_chars(first, last, v);
            if (res.ec == std::errc() && res.ptr == last) return Value(v);
        }
        double d = 0;
        const auto res = std::from_chars(first, last, d);
        if (res.ec != std::errc() || res.ptr != last) error("bad number");
        return Value(d);
    }

    std::string_view s_;
    size_t i_ = 0;
};

}  // namespace

std::string to_json(const Value & value, const JsonFormat & format) {
    JsonWriter writer(format);
    writer.write(value, 0);
    return writer.take();
}

Result<Value> parse_json(std::string_view text) {
    try {
        JsonParser parser(text);
        return parser.parse_document();
    } catch (const TemplateError & e) {
        return error(StatusCode::invalid_argument, e.what());
    } catch (const std::bad_alloc &) {
        return error(StatusCode::out_of_memory, "JSON too large");
    }
}

}  // namespace lr::jinja
