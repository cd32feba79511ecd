#pragma once
// Positions in a template's source and the error the lexer, parser and interpreter throw
// internally. TemplateError never leaves the jinja layer: Template::parse() and
// Template::render() turn it into a Status.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace lr::jinja {

struct SourcePos {
    uint32_t line = 1;    // 1-based
    uint32_t column = 1;  // 1-based, in bytes
};

std::string format_pos(SourcePos pos);  // "line 3:14"

enum class ErrorKind {
    syntax,     // the source does not parse
    render,     // a type error, an undefined value used, a bad filter argument...
    raised,     // the template called raise_exception(message)
    limit,      // recursion or step budget exceeded
    too_large,  // the output or a string would exceed its size cap
};

class TemplateError : public std::runtime_error {
public:
    TemplateError(ErrorKind kind, SourcePos pos, const std::string & message)
        : std::runtime_error(message), kind_(kind), pos_(pos), has_pos_(true) {}
    TemplateError(ErrorKind kind, const std::string & message) : std::runtime_error(message), kind_(kind) {}

    ErrorKind kind() const { return kind_; }
    bool has_pos() const { return has_pos_; }
    SourcePos pos() const { return pos_; }
    // Attaches a position to an error raised where none was known (in a filter, say).
    TemplateError at(SourcePos pos) const { return has_pos_ ? *this : TemplateError(kind_, pos, what()); }

private:
    ErrorKind kind_;
    SourcePos pos_;
    bool has_pos_ = false;
};

// Shorthand for the common case: a render-time type or value error.
[[noreturn]] inline void fail(const std::string & message) { throw TemplateError(ErrorKind::render, message); }

}  // namespace lr::jinja
