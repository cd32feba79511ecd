#pragma once
// UTF-8 encoding of one code point, shared by the tokenizer, the chat templates and the
// JSON writers. Surrogates and values past U+10FFFF cannot be encoded: they become U+FFFD.

#include <cstdint>
#include <string>

namespace lr {

inline void append_utf8(std::string & out, uint32_t cp) {
    if ((cp >= 0xD800 && cp < 0xE000) || cp >= 0x110000) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace lr
