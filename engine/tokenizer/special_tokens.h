#pragma once
// Splits input text around the texts of special tokens before any tokenizer runs, as
// llama.cpp's tokenizer_st_partition does: control, unknown and user-defined tokens,
// longest text first; control and unknown ones only when parse_special is set,
// user-defined ones always. A token with lstrip/rstrip swallows the ASCII whitespace
// before/after it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace lr {

// A stretch of the input: raw text to tokenize, or one special token.
struct Fragment {
    int32_t token = -1;  // >= 0: a special token
    size_t offset = 0;   // [offset, offset + length) of the input: the raw text, or the token's text
    size_t length = 0;

    bool is_token() const { return token >= 0; }
};

class SpecialTokenSplitter {
public:
    SpecialTokenSplitter() = default;
    explicit SpecialTokenSplitter(const Vocab & vocab);

    // Fragments of `text` in order; none for empty text. Raw fragments are never empty.
    std::vector<Fragment> split(std::string_view text, bool parse_special) const;

    // Whether a special token split() looks for could begin before `from` and run past the
    // end of `text`: then text with more after it may split differently before `from`.
    bool may_straddle_end(std::string_view text, size_t from, bool parse_special) const;

private:
    struct Special {
        std::string text;
        int32_t id;
        uint32_t attr;
    };
    std::vector<Special> specials_;  // longest text first, then lowest id
};

}  // namespace lr
