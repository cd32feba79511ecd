#pragma once
// The tokenizer vocabulary a GGUF file holds (tokenizer.ggml.*), validated, with
// llama.cpp's defaults filled in for the keys a file leaves out.
//
// Decisions (llama.cpp behaviour unless said otherwise):
// - tokenizer.ggml.model "llama" -> SentencePiece (spm), "gpt2" -> byte-level BPE, "gemma4"
//   -> BPE with PreTokenizer::gemma4 whatever tokenizer.ggml.pre says (merges over UTF-8 with
//   spaces as U+2581, byte fallback <0xXX>, no default special ids, BOS always added). Other
//   models ("bert", "t5", "rwkv", ...) are Status::unsupported naming the model.
// - tokenizer.ggml.pre (BPE only) picks the pre-tokenizer; llama.cpp's aliases of the
//   supported ones are accepted. A missing key or "default" -> PreTokenizer::llama_default.
//   An unknown name: llama.cpp refuses the file; Longread uses llama_default too and says
//   so in `notes` (generation may degrade, but the document still opens).
// - Special ids: bos/eos/unk default per model (spm 1/2/0, bpe 11/11/none, dropped when
//   outside the vocabulary). A key holding -1 / 0xFFFFFFFF (llama2.c's "none") is ignored
//   and the default stays, as in llama.cpp. Any other id out of range: an error for
//   bos/eos/unk (llama.cpp would warn and keep the default); a note, and the key ignored,
//   for padding/eot/eom.
// - add_bos / add_eos / add_space_prefix default per model and pre-tokenizer (spm: BOS and
//   space prefix; llama-bpe: BOS; others: neither), then the file's keys override, except
//   that Gemma 4 always adds BOS (as llama.cpp does).
// - End of generation: eos, eot, eom, and every token whose text llama.cpp treats as
//   end-of-turn (<|eot_id|>, <|im_end|>, <|end|>, <|return|>, <|call|>, <end_of_turn>,
//   <|endoftext|>, </s>, <|eom_id|>, <eos>, <EOT>, <|end_of_text|>, ...: the list is in
//   vocab.cpp) plus the FIM pad/repo/file-separator tokens. Such tokens become control
//   tokens if the file typed them otherwise. The eot and eom ids are detected from those
//   texts when the keys are absent (the first text of the list that the vocabulary has
//   wins).
// - gpt-oss (harmony): <|channel|>, <|message|>, <|start|>, <|constrain|> are user-defined
//   tokens (always parsed, always rendered); when <|return|> and <|call|> end generation,
//   <|end|> does not (it ends a message, then the model goes on) and is user-defined too.
//   When <|tool_response> is there (Gemma 4), </s> is ordinary text.
// - Control tokens whose text contains "unused" are marked unused.
// - Phi-3 (general.name contains "phi-3"/"phi3"): control and user-defined tokens strip
//   the whitespace that follows them when parsed from text, except <unk>, <s>,
//   <|endoftext|>; "</s>" does.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/tokenizer/pre_tokenizer.h"

namespace lr::gguf {
class GgufFile;
}

namespace lr {

enum class VocabType {
    spm,  // "llama": SentencePiece BPE over U+2581-escaped text, byte fallback <0xXX>
    bpe,  // "gpt2": byte-level BPE with merges and a pre-tokenizer; "gemma4" (PreTokenizer::gemma4)
};

// tokenizer.ggml.token_type values. Written to disk: never renumber.
enum class TokenType : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

// A token's attributes as a bit set (llama.cpp's llama_token_attr): the type from the
// file, plus adjustments (an end-of-turn token gains `control`, Phi-3 specials `rstrip`).
namespace token_attr {
constexpr uint32_t undefined = 0;
constexpr uint32_t unknown = 1u << 0;
constexpr uint32_t unused = 1u << 1;
constexpr uint32_t normal = 1u << 2;
constexpr uint32_t control = 1u << 3;
constexpr uint32_t user_defined = 1u << 4;
constexpr uint32_t byte = 1u << 5;
constexpr uint32_t lstrip = 1u << 8;  // parsed from text: eats the whitespace before it
constexpr uint32_t rstrip = 1u << 9;  // ... and after it
}  // namespace token_attr

uint32_t token_attr_from_type(TokenType type);

struct TokenData {
    std::string text;
    float score = 0.0f;
    uint32_t attr = token_attr::normal;
};

struct Vocab {
    VocabType type = VocabType::spm;
    std::string model_name;                          // tokenizer.ggml.model
    std::string pre_name;                            // tokenizer.ggml.pre as written ("" when absent)
    PreTokenizer pre = PreTokenizer::llama_default;  // bpe only

    std::vector<TokenData> tokens;
    std::vector<std::string> merges;  // bpe: "left right", in rank order

    // -1 when there is none.
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    int32_t eot_id = -1;
    int32_t eom_id = -1;

    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;  // spm: " " before text at the start / after a special token
    bool ignore_merges = false;     // bpe: a word that is a whole token is not merged (Llama 3)
    bool clean_spaces = false;      // detokenizer's clean_up_tokenization_spaces

    std::vector<int32_t> eog_ids;    // sorted, unique
    std::vector<std::string> notes;  // what loading chose that a user may want to know

    int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
    bool in_range(int32_t id) const { return id >= 0 && id < n_tokens(); }
};

// Reads and validates tokenizer.ggml.* (array lengths agree, ids in range, no empty
// vocabulary, known model); messages name the file and the key. Needs no other metadata,
// so vocab-only files load. Duplicate token texts are caught by Tokenizer::create.
Result<Vocab> load_vocab(const gguf::GgufFile & file);

// Applies llama.cpp's end-of-generation and special-token rules to a vocabulary built by
// hand (tests, converters): fills eot/eom when unset, eog_ids, and the control attribute
// of end-of-turn tokens. load_vocab calls it.
void finish_special_tokens(Vocab & vocab);

}  // namespace lr
