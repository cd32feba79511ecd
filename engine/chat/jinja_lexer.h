#pragma once
// Splits a template into text and the tokens of its {{ }} and {% %} tags, applying
// whitespace control the way Hugging Face's chat environment does: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, `-` strips and `+` keeps. Comments vanish.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja_error.h"

namespace lr::jinja {

enum class TokenKind {
    text,            // template data between tags
    variable_begin,  // {{
    variable_end,    // }}
    block_begin,     // {%
    block_end,       // %}
    name,            // identifiers and keywords
    string,          // a string literal, escapes resolved
    integer,
    floating,
    op,  // punctuation: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    eof,
};

struct Token {
    TokenKind kind = TokenKind::eof;
    std::string value;  // text, name, string contents or operator
    SourcePos pos;
    int64_t int_value = 0;
    double float_value = 0.0;
};

// Throws TemplateError(syntax) for an unterminated tag, comment or string, or a stray character.
std::vector<Token> tokenize(std::string_view source);

}  // namespace lr::jinja
