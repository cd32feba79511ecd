#pragma once
// A string's characters as they go between the quotes of a JSON string: quotes and
// backslashes escaped, control characters as \u00XX (the rest, UTF-8 included, as is).

#include <cstdio>
#include <string>
#include <string_view>

namespace lr {

inline std::string json_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace lr
