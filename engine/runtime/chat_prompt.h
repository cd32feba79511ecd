#pragma once
// The prompt of a conversation: its messages (the document as a system message, then the
// turns) rendered with the model's chat template, as text and as tokens.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/conversation.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"
#include "engine/model/model.h"

namespace lr {

// The text that puts a document in a conversation (as a system message). Chat and the
// one-pass summary use the same text, so a summary reuses the KV of a document already read.
std::string document_context(std::string_view title, std::string_view text);

// The conversation's messages: its document's system message (when it has a document),
// then its turns, then `user_text` as the last user turn when not empty.
std::vector<chat::ChatMessage> conversation_messages(const Conversation & conversation, std::string_view user_text = {});

// The model's template applied to `messages` (the model's BOS and EOS texts defined,
// `thinking` as the template's enable_thinking and reasoning_effort when set, and `tools`
// (a JSON array) as its tools when not empty).
std::string render_chat_text(const Model & model, std::span<const chat::ChatMessage> messages, bool add_generation_prompt,
                             const ThinkingChoice & thinking = {}, std::string_view tools = {});

// The tool-call format the model's template teaches when it is given a tool (none: it does
// not show tools, or in no format Longread reads).
chat::ToolCallFormat tool_call_format(const Model & model);

// Whether the model's template renders a reply's prompt differently under `a` and `b`
// (a choice is offered only where it changes something).
bool thinking_choice_matters(const Model & model, const ThinkingChoice & a, const ThinkingChoice & b);

// render_chat_text tokenized with special tokens parsed and a single BOS (templates that
// write the BOS text themselves do not get a second one).
std::vector<int32_t> render_chat_tokens(const Model & model, std::span<const chat::ChatMessage> messages, bool add_generation_prompt,
                                        const ThinkingChoice & thinking = {}, std::string_view tools = {});

}  // namespace lr
