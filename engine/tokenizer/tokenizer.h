#pragma once
// Text <-> token ids for a GGUF vocabulary, with llama.cpp's results (the same ids as
// llama_tokenize for the same text and flags). Immutable after create(); every method is
// const and safe to call from several threads.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/text_span.h"
#include "engine/common/status.h"
#include "engine/tokenizer/vocab.h"

namespace lr {

// How ids become text.
struct DecodeOptions {
    // Control and unknown tokens (<s>, <|im_end|>, ...) as their text; otherwise nothing.
    bool render_special = false;
    // SentencePiece vocabularies put a " " before text that starts the input or follows a
    // special token; drop it again, so decode(encode(x)) == x. Off for a continuation
    // (tokens generated after a prompt), where that space is real.
    bool strip_space_prefix = true;
    // The vocabulary's clean_up_tokenization_spaces (" ," -> ",", " 's" -> "'s", ...), as
    // llama_detokenize applies it; only for vocabularies that ask for it. Lossy.
    bool clean_spaces = false;
};

// A place where encoding a text can start again, whatever follows the text up to it:
// encoding text[0, byte) + anything gives the first n_tokens tokens of text[0, byte), then
// what encoding from `byte` on gives. The start of a special token (when no special token
// could straddle the end) and, for SentencePiece, just after a character no longer token
// contains ('\n' in Llama's vocabulary) are such places; so is the start.
struct ResumePoint {
    size_t n_tokens = 0;    // tokens before `byte` (a BOS added by add_special included)
    size_t byte = 0;        // where encoding restarts
    bool mid_text = false;  // inside a run of text: no SentencePiece space prefix there
};

// A text's tokens with the bytes of the text each one stands for.
struct EncodedText {
    std::vector<int32_t> tokens;
    // Per token, in order and without overlap. Tokens the text does not spell (a BOS or
    // EOS added by add_special, SentencePiece's space prefix on its own) are empty at
    // their place; a token that spells part of a character (byte tokens) covers its bytes.
    std::vector<TextSpan> spans;
    // Candidate resume points, in order: the last kResumePointsKept of the text.
    std::vector<ResumePoint> resume_points;
    // encode_reusing: the bytes at the start whose tokens were taken over, not encoded.
    size_t reused_bytes = 0;

    static constexpr size_t kResumePointsKept = 16;
};

class Tokenizer {
public:
    // Builds the tokenizer for `vocab` (from load_vocab). Fails on duplicate token texts,
    // an invalid special id, or a vocabulary the sentencepiece library rejects.
    static Result<Tokenizer> create(Vocab vocab);

    Tokenizer(Tokenizer &&) noexcept;
    Tokenizer & operator=(Tokenizer &&) noexcept;
    ~Tokenizer();

    // add_special: BOS/EOS as the vocabulary asks (add_bos / add_eos).
    // parse_special: control/unknown token texts in `text` become their ids; otherwise
    // they are tokenized as plain text. User-defined tokens are always matched.
    // Invalid UTF-8 is accepted (byte tokens for SentencePiece, U+FFFD for BPE, as
    // llama.cpp). Linear-ish in the text: megabytes take well under a second per MB.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // As encode(), with each token's bytes in `text` and candidate resume points.
    EncodedText encode_with_offsets(std::string_view text, bool add_special, bool parse_special) const;

    // What encode_with_offsets(text) gives, reusing `earlier`, the encoding of `earlier_text`
    // (same flags): only the text from the last resume point before the two texts differ is
    // encoded. A long document's conversation turns tokenize little this way.
    EncodedText encode_reusing(const EncodedText & earlier, std::string_view earlier_text, std::string_view text, bool add_special,
                               bool parse_special) const;

    // The text of one token: spaces unescaped, byte tokens as their byte (so a piece may
    // be part of a UTF-8 character). Control/unknown tokens give "" unless
    // render_special. Out-of-range ids give "".
    std::string token_to_piece(int32_t id, bool render_special) const;

    // The text of a sequence of tokens, bytes as they come (may be invalid UTF-8 if the
    // tokens are; use StreamingDecoder for display).
    std::string decode(std::span<const int32_t> ids) const { return decode(ids, DecodeOptions{}); }
    std::string decode(std::span<const int32_t> ids, const DecodeOptions & options) const;

    bool is_eog(int32_t id) const;
    // True when encode() puts " " before text at the start and after special tokens
    // (SentencePiece vocabularies with add_space_prefix).
    bool adds_space_prefix() const;
    // True for the tokens encode() treats as special (control, unknown, user-defined).
    bool is_special(int32_t id) const;
    std::optional<int32_t> token_id(std::string_view text) const;

    int32_t bos() const;  // -1 if none
    int32_t eos() const;  // -1 if none
    int32_t n_vocab() const;
    const Vocab & vocab() const;

private:
    struct Impl;
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Turns tokens arriving one at a time into text that is always whole UTF-8 characters: a
// multi-byte character split across tokens (byte tokens like <0xE2>, or byte-level BPE
// pieces) is held back until it completes. Bytes that can never form a character become
// U+FFFD at once; an unfinished character becomes U+FFFD at flush(). Holds a reference to
// the tokenizer, which must outlive it. For generated tokens (a continuation of the
// prompt), pass DecodeOptions{.strip_space_prefix = false}: their leading space is real.
class StreamingDecoder {
public:
    explicit StreamingDecoder(const Tokenizer & tokenizer, DecodeOptions options = {});

    // The text completed by `id` (often the whole piece, sometimes "").
    std::string push(int32_t id);
    // What is still held back, as U+FFFD; the decoder is then as new.
    std::string flush();
    void reset();

    bool has_pending() const { return !pending_.empty(); }

private:
    const Tokenizer * tokenizer_;
    DecodeOptions options_;
    bool at_start_ = true;  // the next text piece may carry the space prefix
    std::string pending_;   // bytes of an unfinished character
};

}  // namespace lr
