#pragma once
// Tokenizes a conversation's document once. The document's system message, rendered with
// the model's template, is remembered with its tokens (by the document's content hash, the
// model's identity and its template); the prompt of every turn then tokenizes only what
// follows the last resume point before it departs from that text (Tokenizer::encode_reusing),
// and gives exactly the tokens of tokenizing the whole prompt. A template that does not
// render the document's message first (Llama 2 folds it into the first user turn) gets the
// whole prompt tokenized.

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>

#include "engine/api/conversation.h"
#include "engine/api/text_span.h"
#include "engine/model/model.h"

namespace lr {

// A conversation's prompt as tokens.
struct PromptTokens {
    EncodedText encoded;              // tokens (one BOS) and their bytes in the rendered text
    size_t first_document_token = 0;  // [first, end): the tokens that spell the document
    size_t end_document_token = 0;
    size_t document_begin = 0;   // the document's bytes in the rendered text start here...
    size_t document_offset = 0;  // ...at this byte of the document (a template may trim it)

    uint32_t document_tokens() const { return uint32_t(end_document_token - first_document_token); }
    // Token i's bytes in the document text (clamped to it).
    TextSpan document_span(size_t i, size_t document_size) const;
};

class PromptMemo {
public:
    explicit PromptMemo(size_t capacity = 4) : capacity_(capacity) {}

    // The prompt of `conversation` (then `user_text` as a user turn, when not empty) on
    // `model`: render_chat_tokens' tokens, with offsets.
    PromptTokens tokens(const Model & model, const Conversation & conversation, std::string_view user_text, bool add_generation_prompt);

    // Documents tokenized so far (one per document, model and template while remembered),
    // and the bytes of rendered text given to the tokenizer in all.
    size_t documents_tokenized() const { return n_tokenized_; }
    uint64_t bytes_tokenized() const { return n_bytes_tokenized_; }
    void clear() { entries_.clear(); }

private:
    struct Entry {
        uint64_t content_hash = 0;
        uint64_t model_identity = 0;
        chat::ChatFamily family = chat::ChatFamily::plain;
        bool builtin_template = false;
        ThinkingChoice thinking;  // rendered with these (gpt-oss's effort, Qwen's tools come before the document)
        std::string tools;
        std::string text;     // the document's system message, rendered
        EncodedText encoded;  // its tokens, offsets and resume point
    };
    const Entry & entry_for(const Model & model, const Conversation & conversation);

    size_t capacity_;
    std::list<Entry> entries_;  // most recently used first
    size_t n_tokenized_ = 0;
    uint64_t n_bytes_tokenized_ = 0;
};

}  // namespace lr
