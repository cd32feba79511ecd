#pragma once
// The vocabulary of a random-weight model: the tokenizer.* keys of another GGUF file,
// copied as they are, or a small built-in SentencePiece-style vocabulary so that a file
// made without one is self-contained and loads (tokenizer included).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace lr {

// The built-in vocabulary ("llama" model, byte fallback): <unk>, <s>, </s>, the 256 byte
// tokens <0x00>..<0xFF>, then filler pieces "▁", "a", "▁a", "b", ... "aa", "▁aa", ...
// (every prefix of a piece is a piece, so text made of letters tokenizes into them).
struct ByteVocab {
    static constexpr uint32_t kMinTokens = 3 + 256;

    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> token_types;  // TokenType numbers (vocab.h)
};

// n_tokens >= ByteVocab::kMinTokens (LR_ASSERT).
ByteVocab make_byte_vocab(uint32_t n_tokens);

// Sets the tokenizer.* keys of the built-in vocabulary of n_tokens tokens.
void add_byte_vocab(gguf::GgufWriter & writer, uint32_t n_tokens);

// Copies every tokenizer.* key of `from` into `writer` and returns the number of tokens
// (the length of tokenizer.ggml.tokens). corrupt_data naming the file when it has no
// token list.
Result<uint32_t> copy_tokenizer_keys(const gguf::GgufFile & from, gguf::GgufWriter & writer);

// The number of tokens in `from`'s tokenizer.ggml.tokens, with the same errors.
Result<uint32_t> count_tokens(const gguf::GgufFile & from);

}  // namespace lr
