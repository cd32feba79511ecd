#include "unicode.h"

#include <unicode/uchar.h>

namespace lr::unicode {

size_t valid_sequence_len(std::string_view text, size_t pos) {
    const size_t n_left = text.size() - pos;
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
    const uint8_t b0 = byte(0);
    if (b0 < 0x80) return 1;
    size_t len = 0;
    uint32_t cpt = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
        cpt = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        cpt = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        cpt = b0 & 0x07u;
    } else {
        return 0;  // continuation byte, C0/C1 (always overlong) or F5..FF
    }
    if (n_left < len) return 0;
    for (size_t i = 1; i < len; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return 0;
        cpt = (cpt << 6) | (byte(i) & 0x3Fu);
    }
    if (len == 3 && (cpt < 0x800 || (cpt >= 0xD800 && cpt <= 0xDFFF))) return 0;
    if (len == 4 && (cpt < 0x10000 || cpt > 0x10FFFF)) return 0;
    return len;
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const size_t len = valid_sequence_len(text, pos);
        if (len == 0) return false;
        pos += len;
    }
    return true;
}

Decoded decode_lenient(std::string_view text, size_t pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
    const auto cont = [&](size_t i) { return pos + i < text.size() && (byte(i) & 0xC0) == 0x80; };
    const uint8_t b0 = byte(0);
    if (!(b0 & 0x80)) return {b0, 1};
    if (!(b0 & 0x40)) return {replacement_char, 1};
    if (!(b0 & 0x20)) {
        if (!cont(1)) return {replacement_char, 1};
        return {((b0 & 0x1Fu) << 6) | (byte(1) & 0x3Fu), 2};
    }
    if (!(b0 & 0x10)) {
        if (!cont(1) || !cont(2)) return {replacement_char, 1};
        return {((b0 & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu), 3};
    }
    if (!(b0 & 0x08)) {
        if (!cont(1) || !cont(2) || !cont(3)) return {replacement_char, 1};
        const uint32_t cpt = ((b0 & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) | ((byte(2) & 0x3Fu) << 6) | (byte(3) & 0x3Fu);
        // NOTE: llama.cpp would throw re-encoding such a code point; the replacement
        // character keeps the rest of the text tokenizable.
        if (cpt > 0x10FFFF) return {replacement_char, 4};
        return {cpt, 4};
    }
    return {replacement_char, 1};
}

std::vector<uint32_t> codepoints_lenient(std::string_view text) {
    std::vector<uint32_t> cpts;
    cpts.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const Decoded d = decode_lenient(text, pos);
        cpts.push_back(d.cpt);
        pos += d.n_bytes;
    }
    return cpts;
}

CodepointFlags codepoint_flags(uint32_t cpt) {
    CodepointFlags f;
    if (cpt < 0x80) {
        // ASCII fast path; the same answers ICU gives.
        const char c = static_cast<char>(cpt);
        f.is_letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        f.is_number = c >= '0' && c <= '9';
        f.is_whitespace = c == ' ' || (c >= '\t' && c <= '\r');
        f.is_punctuation = (c >= '!' && c <= '#') || (c >= '%' && c <= '*') || (c >= ',' && c <= '/') || c == ':' || c == ';' || c == '?' ||
                           c == '@' || (c >= '[' && c <= ']') || c == '_' || c == '{' || c == '}';
        return f;
    }
    if (cpt > 0x10FFFF) return f;
    const auto c = static_cast<UChar32>(cpt);
    const uint32_t mask = U_GET_GC_MASK(c);
    f.is_letter = (mask & U_GC_L_MASK) != 0;
    f.is_number = (mask & U_GC_N_MASK) != 0;
    f.is_punctuation = (mask & U_GC_P_MASK) != 0;
    f.is_mark = (mask & U_GC_M_MASK) != 0;
    f.is_whitespace = u_isUWhiteSpace(c) != 0;
    return f;
}

uint32_t byte_to_codepoint(uint8_t byte) {
    if ((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE) return byte;
    if (byte <= 0x20) return 256u + byte;                  // 33 control bytes and space
    if (byte <= 0xA0) return 256u + 33u + (byte - 0x7Fu);  // DEL, C1 controls, NBSP
    return 256u + 33u + 34u;                               // 0xAD, soft hyphen
}

int codepoint_to_byte(uint32_t cpt) {
    if (cpt < 256) {
        const auto b = static_cast<uint8_t>(cpt);
        return byte_to_codepoint(b) == cpt ? b : -1;
    }
    if (cpt < 256 + 33) return static_cast<int>(cpt - 256);
    if (cpt < 256 + 33 + 34) return static_cast<int>(0x7F + (cpt - 256 - 33));
    if (cpt == 256 + 33 + 34) return 0xAD;
    return -1;
}

}  // namespace lr::unicode
