#include "engine/chat/jinja_lexer.h"

#include <algorithm>
#include <charconv>

#include "engine/chat/jinja_strings.h"
#include "engine/common/utf8.h"

namespace lr::jinja {

namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Jinja normalizes line ends to \n and, with keep_trailing_newline off, drops one final newline.
std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i) {
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
        }
    }

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < src_.size()) {
            const size_t tag = find_tag(pos_);
            if (tag == std::string::npos) {
                emit_text(std::string_view(src_).substr(pos_), pos_);
                break;
            }
            const char kind = src_[tag + 1];
            std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
            size_t after = tag + 2;
            const char marker = after < src_.size() ? src_[after] : '\0';
            const bool strip_before = marker == '-';
            const bool keep_before = marker == '+' && kind != '{';
            if (strip_before || keep_before) ++after;
            if (strip_before) {
                text = strip(text, std::nullopt, false, true);
            } else if (kind != '{' && !keep_before) {
                text = lstrip_block_indent(text, line_starting);
            }
            emit_text(text, pos_);
            pos_ = after;
            if (kind == '#') {
                skip_comment(tag);
            } else {
                lex_tag(kind == '{', tag);
            }
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        }
        Token end;
        end.kind = TokenKind::eof;
        end.pos = pos_at(src_.size());
        tokens_.push_back(end);
        return std::move(tokens_);
    }

private:
    SourcePos pos_at(size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const auto line = static_cast<size_t>(it - line_starts_.begin());
        return SourcePos{static_cast<uint32_t>(line), static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
    }

    [[noreturn]] void error(size_t offset, const std::string & what) const { throw TemplateError(ErrorKind::syntax, pos_at(offset), what); }

    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return std::string::npos;
    }

    // lstrip_blocks: a block or comment tag preceded on its line only by spaces and tabs
    // takes that indentation away.
    static std::string_view lstrip_block_indent(std::string_view text, bool line_starting) {
        const size_t nl = text.rfind('\n');
        const size_t line_begin = nl == std::string_view::npos ? 0 : nl + 1;
        if (line_begin == 0 && !line_starting) return text;
        if (line_begin == text.size()) return text;
        for (size_t i = line_begin; i < text.size(); ++i) {
            if (!is_space(text[i])) return text;
        }
        return text.substr(0, line_begin);
    }

    void emit_text(std::string_view text, size_t offset) {
        if (text.empty()) return;
        Token t;
        t.kind = TokenKind::text;
        t.value = std::string(text);
        t.pos = pos_at(offset);
        tokens_.push_back(std::move(t));
    }

    void emit(TokenKind kind, std::string value, size_t offset) {
        Token t;
        t.kind = kind;
        t.value = std::move(value);
        t.pos = pos_at(offset);
        tokens_.push_back(std::move(t));
    }

    void skip_spaces() {
        while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    }

    // After a block tag or comment: `-` strips all following whitespace, `+` keeps it,
    // otherwise trim_blocks removes one newline.
    void after_tag(char marker, bool is_block) {
        if (marker == '-') {
            skip_spaces();
        } else if (is_block && marker != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
    }

    void skip_comment(size_t tag) {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) error(tag, "unterminated comment: missing '#}'");
        const char marker = end > pos_ ? src_[end - 1] : '\0';
        pos_ = end + 2;
        after_tag(marker, true);
    }

    void lex_tag(bool is_variable, size_t tag) {
        const size_t first_token = tokens_.size();
        emit(is_variable ? TokenKind::variable_begin : TokenKind::block_begin, is_variable ? "{{" : "{%", tag);
        open_brackets_.clear();  // ( [ { still open: an end marker inside them is not the tag's end
        while (true) {
            skip_spaces();
            if (pos_ >= src_.size()) {
                if (!open_brackets_.empty()) {
                    error(open_brackets_.back(), std::string("unclosed '") + src_[open_brackets_.back()] + "'");
                }
                error(tag, std::string("unexpected end of template: missing '") + (is_variable ? "}}" : "%}") + "'");
            }
            if (open_brackets_.empty()) {
                const std::string_view rest = std::string_view(src_).substr(pos_);
                const std::string_view close = is_variable ? "}}" : "%}";
                char marker = '\0';
                if ((rest.substr(0, 1) == "-" || (!is_variable && rest.substr(0, 1) == "+")) && rest.substr(1, 2) == close) {
                    marker = rest[0];
                    ++pos_;
                }
                if (std::string_view(src_).substr(pos_, 2) == close) {
                    emit(is_variable ? TokenKind::variable_end : TokenKind::block_end, std::string(close), pos_);
                    pos_ += 2;
                    after_tag(marker, !is_variable);
                    if (!is_variable) maybe_raw_block(first_token);
                    return;
                }
            }
            lex_token();
        }
    }

    // {% raw %}...{% endraw %}: everything between is text.
    void maybe_raw_block(size_t first_token) {
        if (tokens_.size() - first_token != 3 || tokens_[first_token + 1].kind != TokenKind::name ||
            tokens_[first_token + 1].value != "raw") {
            return;
        }
        const size_t start = pos_;
        for (size_t i = find_tag(pos_); i != std::string::npos; i = find_tag(i + 2)) {
            if (src_[i + 1] != '%') continue;
            size_t j = i + 2;
            const bool strip_before = j < src_.size() && src_[j] == '-';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) ++j;
            while (j < src_.size() && is_space(src_[j])) ++j;
            if (src_.compare(j, 6, "endraw") != 0) continue;
            j += 6;
            while (j < src_.size() && is_space(src_[j])) ++j;
            char marker = '\0';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) marker = src_[j++];
            if (src_.compare(j, 2, "%}") != 0) continue;
            std::string_view body = std::string_view(src_).substr(start, i - start);
            if (strip_before) body = strip(body, std::nullopt, false, true);
            tokens_.resize(first_token);
            emit_text(body, start);
            pos_ = j + 2;
            after_tag(marker, true);
            return;
        }
        error(start, "unterminated raw block: missing '{% endraw %}'");
    }

    void lex_token() {
        const size_t start = pos_;
        const char c = src_[pos_];
        if (is_name_start(c)) {
            while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
            emit(TokenKind::name, src_.substr(start, pos_ - start), start);
            return;
        }
        if (is_digit(c)) {
            lex_number();
            return;
        }
        if (c == '\'' || c == '"') {
            lex_string();
            return;
        }
        static constexpr std::string_view two_char[] = {"//", "**", "==", "!=", "<=", ">="};
        for (std::string_view op : two_char) {
            if (std::string_view(src_).substr(pos_, 2) == op) {
                pos_ += 2;
                emit(TokenKind::op, std::string(op), start);
                return;
            }
        }
        if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
            const std::string_view ch = utf8_chars(std::string_view(src_).substr(start, 4)).front();
            error(start, "unexpected character '" + std::string(ch) + "'");
        }
        if (c == '(' || c == '[' || c == '{') open_brackets_.push_back(start);
        if ((c == ')' || c == ']' || c == '}') && !open_brackets_.empty()) {
            const char open = src_[open_brackets_.back()];
            const char expected = open == '(' ? ')' : open == '[' ? ']' : '}';
            if (c != expected) error(start, std::string("unexpected '") + c + "', expected '" + expected + "'");
            open_brackets_.pop_back();
        }
        ++pos_;
        emit(TokenKind::op, std::string(1, c), start);
    }

    void lex_number() {
        const size_t start = pos_;
        auto digits = [&] {
            while (pos_ < src_.size() &&
                   (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])))) {
                ++pos_;
            }
        };
        digits();
        bool is_float = false;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
            is_float = true;
            ++pos_;
            digits();
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            size_t j = pos_ + 1;
            if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
            if (j < src_.size() && is_digit(src_[j])) {
                is_float = true;
                pos_ = j;
                digits();
            }
        }
        std::string text;
        for (size_t i = start; i < pos_; ++i) {
            if (src_[i] != '_') text += src_[i];
        }
        Token t;
        t.pos = pos_at(start);
        t.value = text;
        if (is_float) {
            t.kind = TokenKind::floating;
            std::from_chars(text.data(), text.data() + text.size(), t.float_value);
        } else {
            t.kind = TokenKind::integer;
            const auto res = std::from_chars(text.data(), text.data() + text.size(), t.int_value);
            if (res.ec != std::errc()) error(start, "integer literal out of range: " + text);
        }
        tokens_.push_back(std::move(t));
    }

    uint32_t hex_escape(size_t & i, int n, size_t start) const {
        if (i + static_cast<size_t>(n) > src_.size()) error(start, "truncated \\x/\\u escape in string");
        uint32_t v = 0;
        const auto res = std::from_chars(src_.data() + i, src_.data() + i + n, v, 16);
        if (res.ptr != src_.data() + i + n) error(start, "bad \\x/\\u escape in string");
        i += static_cast<size_t>(n);
        return v;
    }

    // Python string literal escapes, as Jinja decodes them.
    void lex_string() {
        const size_t start = pos_;
        const char quote = src_[pos_++];
        std::string value;
        while (true) {
            if (pos_ >= src_.size()) error(start, "unterminated string literal");
            const char c = src_[pos_++];
            if (c == quote) break;
            if (c != '\\') {
                value += c;
                continue;
            }
            if (pos_ >= src_.size()) error(start, "unterminated string literal");
            const char e = src_[pos_++];
            switch (e) {
                case 'n': value += '\n'; break;
                case 't': value += '\t'; break;
                case 'r': value += '\r'; break;
                case '\\': value += '\\'; break;
                case '\'': value += '\''; break;
                case '"': value += '"'; break;
                case 'a': value += '\a'; break;
                case 'b': value += '\b'; break;
                case 'f': value += '\f'; break;
                case 'v': value += '\v'; break;
                case '0': value += '\0'; break;
                case '\n': break;  // line continuation
                case 'x': append_utf8(value, hex_escape(pos_, 2, start)); break;
                case 'u': append_utf8(value, hex_escape(pos_, 4, start)); break;
                case 'U': append_utf8(value, hex_escape(pos_, 8, start)); break;
                default: value += '\\'; value += e;
            }
        }
        emit(TokenKind::string, std::move(value), start);
    }

    std::string src_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    std::vector<size_t> open_brackets_;  // offsets
    size_t pos_ = 0;
};

}  // namespace

std::string format_pos(SourcePos pos) { return "line " + std::to_string(pos.line) + ":" + std::to_string(pos.column); }

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace lr::jinja
