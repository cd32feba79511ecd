// StreamingDecoder (declared in tokenizer.h): whole UTF-8 characters out of a token stream.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace lr {

namespace {

constexpr std::string_view replacement = "\xef\xbf\xbd";  // U+FFFD

struct Prefix {
    size_t n_valid;   // bytes at the position that start a well-formed sequence
    size_t n_needed;  // length of the sequence the lead byte announces (0: not a lead byte)
};

// How far the bytes at `pos` follow the well-formed UTF-8 table (Unicode 15, table 3-7):
// the second byte's range depends on the lead (no overlongs, no surrogates, <= U+10FFFF).
Prefix valid_prefix(std::string_view s, size_t pos) {
    const auto b0 = static_cast<uint8_t>(s[pos]);
    if (b0 < 0x80) return {1, 1};
    size_t needed = 0;
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        needed = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        needed = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        needed = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return {0, 0};
    }
    size_t n = 1;
    while (n < needed && pos + n < s.size()) {
        const auto b = static_cast<uint8_t>(s[pos + n]);
        const bool ok = n == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) break;
        ++n;
    }
    return {n, needed};
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer & tokenizer, DecodeOptions options) : tokenizer_(&tokenizer), options_(options) {}

std::string StreamingDecoder::push(int32_t id) {
    std::string piece = tokenizer_->token_to_piece(id, options_.render_special);
    if (tokenizer_->is_special(id)) {
        at_start_ = true;
    } else {
        if (at_start_ && options_.strip_space_prefix && tokenizer_->adds_space_prefix() && !piece.empty() && piece[0] == ' ') {
            piece.erase(0, 1);
        }
        at_start_ = false;
    }
    pending_ += piece;

    // Emit every complete character; stop at an unfinished one at the end.
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const Prefix p = valid_prefix(pending_, pos);
        if (p.n_needed != 0 && p.n_valid == p.n_needed) {
            out.append(pending_, pos, p.n_valid);
            pos += p.n_valid;
        } else if (p.n_needed != 0 && pos + p.n_valid == pending_.size()) {
            break;  // may still complete
        } else {
            // Can never complete: one U+FFFD per maximal ill-formed subpart.
            out.append(replacement);
            pos += p.n_valid > 0 ? p.n_valid : 1;
        }
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamingDecoder::flush() {
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const Prefix p = valid_prefix(pending_, pos);
        out.append(replacement);
        pos += p.n_valid > 0 ? p.n_valid : 1;
    }
    reset();
    return out;
}

void StreamingDecoder::reset() {
    pending_.clear();
    at_start_ = true;
}

}  // namespace lr
