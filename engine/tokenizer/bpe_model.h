#pragma once
// BPE merges (tokenizer.ggml.merges) applied to one pre-tokenized word, as llama.cpp's
// llm_tokenizer_bpe_session does: repeatedly merge the adjacent pair with the lowest merge
// rank (leftmost first on ties) until no ranked pair is left. Words are spelled in GPT-2's
// byte alphabet (byte-level BPE) or in plain UTF-8 (Gemma 4).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/api/text_span.h"
#include "engine/tokenizer/token_index.h"

namespace lr {

// The tokens a final piece that is no token falls back to, one per byte; a byte without
// such a token is dropped, as in llama.cpp.
enum class ByteFallback {
    raw,  // the token spelled as the byte itself (byte-level BPE)
    hex,  // the token "<0xXX>" (Gemma 4)
};

class BpeModel {
public:
    BpeModel() = default;

    // `merges` are "left right" strings, rank = position. Pieces that are not tokens get
    // ids past the vocabulary so merges through them still work. A merge with no space
    // (llama.cpp ranks it but it can never apply) is skipped; a repeated pair keeps its
    // first rank.
    static BpeModel build(std::span<const std::string> merges, const TokenIndex & tokens, int32_t n_vocab,
                          ByteFallback fallback = ByteFallback::raw);

    // Appends the tokens of `word`. A final piece that is not a token falls back to the byte
    // tokens of its bytes.
    // With `spans`, also appends the bytes of `word` each token stands for. O(n log n) in
    // the word's length.
    void encode_word(std::string_view word, const TokenIndex & tokens, std::vector<int32_t> & out,
                     std::vector<TextSpan> * spans = nullptr) const;

    size_t n_merges() const { return merges_.size(); }

private:
    struct Merge {
        int32_t rank;
        int32_t result;  // id of the merged piece (a token, or >= n_vocab)
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    int32_t piece_id(std::string_view piece, const TokenIndex & tokens) const;

    std::unordered_map<uint64_t, Merge> merges_;
    std::array<int32_t, 256> byte_tokens_{};  // the fallback token of each byte, -1 when none
    TokenIndex extra_pieces_;                 // merge pieces that are not tokens -> ids >= n_vocab_
    int32_t n_vocab_ = 0;
};

}  // namespace lr
