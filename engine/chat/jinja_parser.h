#pragma once
// Builds the syntax tree of a template (Jinja's grammar and operator precedence).
// Statements: if/elif/else, for (with `if` filter, else, unpacking), set (plain, namespace
// attribute, block), macro, filter blocks, break/continue, raw, HF's generation block.

#include <string_view>

#include "engine/chat/jinja_ast.h"

namespace lr::jinja {

// Throws TemplateError(syntax) with the offending token's position. Nesting deeper than
// about 100 levels (expressions or blocks) is rejected instead of exhausting the stack.
Body parse_template(std::string_view source);

}  // namespace lr::jinja
