#pragma once
// Pre-tokenizers of byte-level BPE vocabularies: split a text fragment into the words that
// BPE merges run within, exactly as llama.cpp does for tokenizer.ggml.pre. The regexes
// (Unicode classes, case-insensitive contractions, `\s+(?!\S)`) are hand-written
// scanners, linear in the input, so megabytes of text and long whitespace runs are fine.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace lr {

enum class PreTokenizer {
    // llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT, used for "default", a missing key and (by
    // Longread's choice) unknown names. Four passes, each splitting the previous pieces:
    //   [\p{P}\$\+<=>\^~\|]+ , then the GPT-2 regex, then \p{N}+ , then [0-9][0-9][0-9]
    llama_default,
    // "gpt-2" and aliases: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    gpt2,
    // "llama-bpe" (Llama 3) and aliases:
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    llama3,
    // "qwen2" and aliases: the Llama 3 regex with single digits (\p{N} instead of \p{N}{1,3}).
    qwen2,
    // "qwen35" (Qwen3.5, Qwen3.6): qwen2's regex with combining marks kept in words and out
    // of punctuation runs:
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
    //  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    qwen35,
    // "gpt-4o" (o200k: gpt-oss, Llama 4) as llama.cpp rewrites it for std::regex, where a
    // letter is "upper" unless it is a-z and "lower" unless it is A-Z (so any non-ASCII
    // letter is both), and combining marks (\p{M}) are not letters:
    //   [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+C?|
    //   [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*C?|
    //   \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    // with C = (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]). Where the Hugging
    // Face tokenizer (\p{Lu}, \p{Ll}, \p{M} classes) splits differently, this follows llama.cpp.
    gpt4o,
    // "tekken" (Mistral Nemo, Mistral 3): the gpt-4o regex without C and with single
    // digits (\p{N}).
    tekken,
    // Gemma 4's SentencePiece-style BPE (tokenizer.ggml.model "gemma4"): the text, its spaces
    // already escaped to U+2581, split into runs of newlines and runs of anything else,
    // [^\n]+|[\n]+. Its words are merged as UTF-8, not in GPT-2's byte alphabet.
    gemma4,
};

std::string_view pre_tokenizer_name(PreTokenizer kind);

// Splits the code points of one fragment into words. Returns the length of each word in
// code points, in order; the lengths sum to cpts.size() (text no regex matches becomes
// words of its own, as in llama.cpp).
std::vector<size_t> split_words(PreTokenizer kind, std::span<const uint32_t> cpts);

}  // namespace lr
