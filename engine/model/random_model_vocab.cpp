#include "random_model_vocab.h"

#include <cstdio>

#include "engine/common/assert.h"

namespace lr {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space
constexpr std::string_view kTokenizerPrefix = "tokenizer.";

// tokenizer.ggml.token_type values (TokenType in engine/tokenizer/vocab.h; on disk).
constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeUnknown = 2;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeByte = 6;

// The k-th string of "a".."z", "aa".."zz", "aaa"... (bijective base 26).
std::string letters(uint64_t k) {
    std::string s;
    for (uint64_t n = k + 1; n > 0; n = (n - 1) / 26) s.insert(s.begin(), char('a' + (n - 1) % 26));
    return s;
}

}  // namespace

ByteVocab make_byte_vocab(uint32_t n_tokens) {
    LR_ASSERT(n_tokens >= ByteVocab::kMinTokens);
    ByteVocab v;
    v.tokens.reserve(n_tokens);
    auto add = [&](std::string text, float score, int32_t type) {
        v.tokens.push_back(std::move(text));
        v.scores.push_back(score);
        v.token_types.push_back(type);
    };
    add("<unk>", 0.0f, kTypeUnknown);
    add("<s>", 0.0f, kTypeControl);
    add("</s>", 0.0f, kTypeControl);
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        add(piece, 0.0f, kTypeByte);
    }
    // Filler pieces, shorter ones first and scored higher, so SentencePiece's BPE merges
    // letters into them; ids stay stable whatever n_tokens is.
    add(std::string(kSpace), -float(v.tokens.size()), kTypeNormal);
    for (uint64_t k = 0; v.tokens.size() < n_tokens; ++k) {
        const std::string s = letters(k);
        add(s, -float(v.tokens.size()), kTypeNormal);
        if (v.tokens.size() < n_tokens) add(std::string(kSpace) + s, -float(v.tokens.size()), kTypeNormal);
    }
    return v;
}

void add_byte_vocab(gguf::GgufWriter & writer, uint32_t n_tokens) {
    ByteVocab v = make_byte_vocab(n_tokens);
    writer.set_string("tokenizer.ggml.model", "llama");
    writer.set_string_array("tokenizer.ggml.tokens", v.tokens);
    writer.set_float32_array("tokenizer.ggml.scores", v.scores);
    writer.set_int32_array("tokenizer.ggml.token_type", v.token_types);
    writer.set_uint32("tokenizer.ggml.unknown_token_id", 0);
    writer.set_uint32("tokenizer.ggml.bos_token_id", 1);
    writer.set_uint32("tokenizer.ggml.eos_token_id", 2);
    writer.set_bool("tokenizer.ggml.add_bos_token", true);
    writer.set_bool("tokenizer.ggml.add_eos_token", false);
}

Result<uint32_t> count_tokens(const gguf::GgufFile & from) {
    const gguf::MetaValue * tokens = from.find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != gguf::ValueType::array || tokens->array_type != gguf::ValueType::string) {
        return error(StatusCode::corrupt_data, from.path() + ": no tokenizer.ggml.tokens string array to take the vocabulary from");
    }
    if (tokens->array_size == 0 || tokens->array_size > UINT32_MAX) {
        return error(StatusCode::corrupt_data,
                     from.path() + ": tokenizer.ggml.tokens has " + std::to_string(tokens->array_size) + " tokens");
    }
    return static_cast<uint32_t>(tokens->array_size);
}

Result<uint32_t> copy_tokenizer_keys(const gguf::GgufFile & from, gguf::GgufWriter & writer) {
    LR_ASSIGN_OR_RETURN(uint32_t n_tokens, count_tokens(from));
    for (const gguf::MetaEntry & e : from.metadata()) {
        if (e.key.starts_with(kTokenizerPrefix)) writer.copy_entry(e);
    }
    return n_tokens;
}

}  // namespace lr
