#pragma once
// A request to /v1/chat/completions or /v1/completions, read and checked: the OpenAI
// fields Longread honours (and llama.cpp's top_k, min_p, repeat_penalty, repeat_last_n,
// chat_template_kwargs' enable_thinking and reasoning_effort),
// the `longread` object's cache settings, and an OpenAI-style 400 naming the field for
// anything wrong or for a feature it does not have (response_format, logit_bias, echo,
// suffix, functions). Tools and the messages of a call (an assistant's tool_calls, "tool"
// results) go to the chat template. Unknown fields are ignored, as OpenAI's clients expect.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/server/api_error.h"
#include "app/server/kv_request_settings.h"
#include "engine/api/conversation.h"
#include "engine/api/generation.h"
#include "engine/api/kv_settings.h"

namespace lr::server {

enum class CompletionKind { chat, text };

struct CompletionRequest {
    CompletionKind kind = CompletionKind::chat;
    Conversation conversation;  // chat: the messages before the last user message (all of them when a tool's result ends them)
    std::string user_text;      // chat: the last user message; empty when a tool's result is last
    std::string prompt;         // text: the prompt
    GenerateParams generate;
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    KvSettings kv;
};

// What a request does not say: the server's sampling and cache flags.
struct RequestDefaults {
    SamplerParams sampler;
    KvFlags kv_flags;
    ThinkingChoice thinking;  // chat requests'
};

// Parses a body; malformed JSON and bad fields are 400s.
std::variant<CompletionRequest, ApiError> parse_completion_request(CompletionKind kind, std::string_view body,
                                                                   const RequestDefaults & defaults);

}  // namespace lr::server
