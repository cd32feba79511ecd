#pragma once
// A parsed Jinja template, rendered the way Hugging Face's apply_chat_template renders chat
// templates (trim_blocks, lstrip_blocks, loop controls, tojson without ASCII escaping,
// raise_exception and strftime_now). The supported subset is described in jinja_parser.h
// and jinja_builtins.h. Parsing and rendering never throw: failures come back as Status.
//
// Known differences from Python's Jinja, none of which the shipped chat templates meet:
// - tuples are lists (they print as [1, 2]); integers are 64-bit (overflow is an error);
// - map/select/reject/unique/items return lists at once, not lazy generators;
// - `loop` is one object updated in place (a stashed `loop` changes as the loop runs);
// - no extends/include/import/call/with/do, recursive loops or tuple subscripts a[1, 2];
// - a few constructs Jinja rejects parse here (`x is test if c else y`);
// - str case mapping and whitespace are ASCII-only; dict keys must be strings.
// Nesting is capped (about 100 levels in the source, 500 while rendering: about 256 KiB of
// stack in an optimized build), as are steps, string sizes and list lengths (RenderLimits).

#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/jinja_interpreter.h"
#include "engine/chat/jinja_value.h"
#include "engine/common/status.h"

namespace lr::jinja {

class Template {
public:
    // Status invalid_argument "line L:C: what" for a syntax error, an unknown filter or test.
    static Result<Template> parse(std::string_view source);

    // Renders with the variables of `context` (a dict; other values give no variables).
    // Errors: the template's raise_exception(message) gives invalid_argument with exactly
    // that message; other render errors give invalid_argument "line L:C: what"; exceeding a
    // limit gives out_of_memory (string size) or invalid_argument (steps, recursion).
    Result<std::string> render(const Value & context, const RenderOptions & options = {}) const;

private:
    std::shared_ptr<const Body> body_;  // shared: a Template is cheap to copy
};

}  // namespace lr::jinja
