#pragma once
// SentencePiece ("llama") vocabularies tokenized by the sentencepiece library, set up so
// the ids are llama.cpp's (llm_tokenizer_spm):
// - every token is a merge candidate, as in llama.cpp (which looks merged text up among
//   all tokens): the model proto marks them all NORMAL with the GGUF scores; the library's
//   mandatory UNKNOWN and BYTE pieces are extra pieces past the vocabulary, mapped back to
//   the vocabulary's unk and <0xXX> tokens;
// - identity normalization (llama.cpp does no NFKC), no dummy prefix, no whitespace
//   handling: the caller adds the space prefix and escapes ' ' to U+2581 beforehand;
// - bytes that are not well-formed UTF-8 never reach the library (it would turn them into
//   U+FFFD): they are split off, character by character the way llama.cpp cuts them, and
//   emitted as byte tokens, which is what llama.cpp's merges end up with too.

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/api/text_span.h"
#include "engine/common/status.h"
#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/vocab.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace lr {

class SpmModel {
public:
    // `tokens` is the vocabulary's text index (for the byte tokens). Fails when the
    // library rejects the model (the message says why).
    static Result<SpmModel> create(const Vocab & vocab, const TokenIndex & tokens);

    SpmModel(SpmModel &&) noexcept;
    SpmModel & operator=(SpmModel &&) noexcept;
    ~SpmModel();

    // Appends the tokens of `escaped` (spaces already U+2581; no special tokens). With
    // `spans`, also appends the bytes of `escaped` each token stands for (a byte the
    // vocabulary has no token for belongs to none).
    void encode(std::string_view escaped, std::vector<int32_t> & out, std::vector<TextSpan> * spans = nullptr) const;

    // True when no token of two or more bytes contains the ASCII character `c` ('\n' in
    // Llama's vocabulary): encoding never merges across it, so text cut just after it
    // encodes to the same tokens in two pieces, whatever follows.
    bool isolates(char c) const;

private:
    // Where tokens go: the ids, and with spans their bytes in the text encode() was given.
    struct Sink {
        std::vector<int32_t> & out;
        std::vector<TextSpan> * spans;
        const char * text;  // encode()'s `escaped`: pieces are views into it

        void push(int32_t id, std::string_view piece) {
            out.push_back(id);
            if (spans) spans->push_back({size_t(piece.data() - text), size_t(piece.data() - text) + piece.size()});
        }
    };

    SpmModel();
    void encode_valid_run(std::string_view run, Sink & sink) const;
    void encode_chunk(std::string_view run, Sink & sink) const;
    void encode_with_library(std::string_view run, Sink & sink) const;
    void push_byte(std::string_view byte, Sink & sink) const;

    std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
    int32_t n_vocab_ = 0;
    int32_t unk_id_ = -1;
    std::vector<uint32_t>
        text_bytes_;  // per token: the bytes of its text, what it stands for in `escaped`                 // the vocabulary's, -1 if none
    std::array<int32_t, 256> byte_ids_{};  // byte -> token ("<0xXX>", else the 1-byte text), -1 if none
    // ASCII characters no token of two or more bytes contains ('\n' in Llama's vocabulary):
    // nothing merges across them, so the text is cut there and each library call stays
    // short (its BPE slows down on very long inputs). -1: not isolated; else the
    // character's own token, or -2 for its byte token.
    std::array<int32_t, 128> isolated_ascii_{};
    // No token has U+2581 after another character (SentencePiece pieces start words), so
    // the text can also be cut before a U+2581 that follows a non-U+2581: long lines are
    // fed to the library a few KiB at a time.
    bool cut_before_space_ = false;
};

}  // namespace lr
