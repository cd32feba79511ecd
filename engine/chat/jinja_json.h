#pragma once
// JSON in and out of Values. Output matches what Hugging Face's `tojson` filter writes:
// Python's json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys), so
// non-ASCII text stays as is and floats print as Python's repr.

#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/jinja_value.h"
#include "engine/common/status.h"

namespace lr::jinja {

struct JsonFormat {
    std::optional<int> indent;  // none: one line; n: newline and n spaces per level
    bool sort_keys = false;
    bool ensure_ascii = false;   // true: non-ASCII as \uXXXX (Python's default, not HF's)
    std::string item_separator;  // empty: ", " on one line, "," when indenting
    std::string key_separator = ": ";
};

// Throws TemplateError for undefined values, namespaces and callables (not serializable).
std::string to_json(const Value & value, const JsonFormat & format = {});

// Parses JSON text (objects keep their key order; integers without fraction or exponent
// become ints). Status invalid_argument with the byte offset on malformed input.
Result<Value> parse_json(std::string_view text);

}  // namespace lr::jinja
