#pragma once
// A chat reply generated after a rendered prompt, its thinking told apart from its answer
// in the format of the model's chat template (chat/thinking_splitter.h): Qwen3's <think>,
// gpt-oss's analysis channel, Magistral's [THINK].

#include <functional>
#include <stop_token>
#include <string_view>

#include "engine/api/generation.h"
#include "engine/chat/thinking_splitter.h"
#include "engine/runtime/session.h"

namespace lr {

// Receives pieces of a reply's thinking as they stream.
using ThinkingSink = std::function<void(std::string_view thinking)>;

// What tells the thinking from the answer in a reply after `prompt`: the model's template
// format, starting inside the thinking when the prompt ends by opening it.
chat::ThinkingSplitter reply_splitter(const Model & model, std::span<const int32_t> prompt);

// generate() after the chat prompt `session` holds: the result's text is the answer and its
// thinking apart; `sink` gets every token with the answer's text it adds (often
// "" during the thinking), `thinking_sink` the thinking's.
Result<GenerateResult> generate_reply(Session & session, const GenerateParams & params, const ThinkingSink & thinking_sink,
                                      const TokenSink & sink, std::stop_token stop = {});

}  // namespace lr
