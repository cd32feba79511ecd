#pragma once
// A conversation as the engine reads it: an optional document (put in the context as a
// system message), then the turns said so far, oldest first; and how much of the context
// it takes. Plain values: the engine keeps no conversation of its own besides its KV cache.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/api/thinking_choice.h"

namespace lr {

struct ChatTurn {
    std::string role;  // "user", "assistant", "tool" (a call's result), or "system" (an instruction, as `chat -s` gives)
    std::string text;
    // An assistant reply's thinking, apart from its text (the answer). The chat template
    // decides whether a later prompt shows it (Qwen3 and gpt-oss drop it from past turns).
    std::string thinking;
    std::string tool_calls;    // an assistant turn's tool calls (chat::ChatMessage::tool_calls)
    std::string tool_call_id;  // a "tool" turn's: the call its text answers
};

struct Conversation {
    std::string document_title;  // its name in the prompt ("report.pdf"); may be empty
    std::string document_text;   // empty: no document in the context
    std::vector<ChatTurn> turns;
    ThinkingChoice thinking;  // for the reply to come
    std::string tools;        // the tools it may call: a JSON array as OpenAI's `tools`; empty: none

    bool has_document() const { return !document_text.empty(); }
};

// How much of the session's context a conversation takes.
struct ContextMeasure {
    uint32_t document_tokens = 0;  // the document's own tokens in the prompt
    uint32_t prompt_tokens = 0;    // the whole rendered conversation (template, document, turns)
    uint32_t context_limit = 0;    // the session's context
    uint32_t reserve_tokens = 0;   // kept free for the next question and its answer
    bool fits = true;              // prompt_tokens + reserve_tokens <= context_limit
};

}  // namespace lr
