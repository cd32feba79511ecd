#pragma once
// Byte-level BPE merges (tokenizer.ggml.merges) applied to one pre-tokenized word, as
// llama.cpp's llm_tokenizer_bpe_session does: repeatedly merge the adjacent pair with the
// lowest merge rank (leftmost first on ties) until no ranked pair is left.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/api/text_span.h"
#include "engine/tokenizer/token_index.h"

namespace lr {

class BpeModel {
public:
    BpeModel() = default;

    // `merges` are "left right" strings, rank = position. Pieces that are not tokens get
    // ids past the vocabulary so merges through them still work. A merge with no space
    // (llama.cpp ranks it but it can never apply) is skipped; a repeated pair keeps its
    // first rank.
    static BpeModel build(std::span<const std::string> merges, const TokenIndex & tokens, int32_t n_vocab);

    // Appends the tokens of `word` (already in the GPT-2 byte alphabet). A final piece that
    // is not a token falls back to its single bytes that are tokens, as llama.cpp does.
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
    TokenIndex extra_pieces_;  // merge pieces that are not tokens -> ids >= n_vocab_
    int32_t n_vocab_ = 0;
};

}  // namespace lr
