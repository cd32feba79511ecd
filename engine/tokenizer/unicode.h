#pragma once
// UTF-8 and code point helpers for the tokenizers, with llama.cpp's exact conventions:
// how it splits bytes into "characters", how it decodes bad UTF-8, which code points
// count as letters / numbers / whitespace, and GPT-2's byte <-> code point mapping.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/common/utf8.h"
#include <string_view>
#include <vector>

namespace lr::unicode {

constexpr uint32_t replacement_char = 0xFFFD;

// Length of the UTF-8 sequence a byte starts, judged by its high bits only (llama.cpp's
// unicode_len_utf8): 1 for ASCII and stray continuation bytes, 2/3/4 for lead bytes.
inline size_t lead_byte_len(uint8_t b) {
    constexpr uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[b >> 4];
}

// Length of the well-formed UTF-8 sequence at text[pos] (no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t valid_sequence_len(std::string_view text, size_t pos);

// True when all of `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

struct Decoded {
    uint32_t cpt;
    uint32_t n_bytes;
};

// llama.cpp's lenient decoding (unicode_cpt_from_utf8 + unicode_cpts_from_utf8): the lead
// byte gives the length and only the continuation bits are checked, so overlongs and
// surrogates decode; a bad sequence yields U+FFFD for one byte. Code points above
// U+10FFFF (which llama.cpp cannot re-encode) also become U+FFFD.
Decoded decode_lenient(std::string_view text, size_t pos);
std::vector<uint32_t> codepoints_lenient(std::string_view text);

using lr::append_utf8;  // engine/common/utf8.h

// The classes the pre-tokenizer regexes use (\p{L}, \p{N}, \p{P}, \p{M}, \s = White_Space).
struct CodepointFlags {
    bool is_letter = false;
    bool is_number = false;
    bool is_punctuation = false;
    bool is_whitespace = false;
    bool is_mark = false;  // combining marks: Mn, Mc, Me
};
CodepointFlags codepoint_flags(uint32_t cpt);

// GPT-2's byte-level alphabet: printable Latin-1 bytes map to themselves, the 68 others
// to U+0100.. in byte order. Every byte-level BPE vocabulary is spelled in it.
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a code point of that alphabet stands for; -1 for any other code point.
int codepoint_to_byte(uint32_t cpt);

}  // namespace lr::unicode
