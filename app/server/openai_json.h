#pragma once
// The OpenAI API's response shapes (chat.completion, chat.completion.chunk,
// text_completion, the model list) and the framing of server-sent events.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/tool_calls.h"

namespace lr::server {

struct Usage {
    uint64_t prompt_tokens = 0;
    uint64_t completion_tokens = 0;
};

// Who answers: the id, the time and the model every object of one reply shares.
struct ReplyIdentity {
    std::string id;  // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;
    std::string model;
};

// A generated token's log-probability as the API reports it.
struct LogprobEntry {
    std::string token;  // its text (a byte token's byte: bytes may not be UTF-8 alone)
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // the most likely tokens at its place, first first
    uint64_t text_offset = 0;                        // where its text starts in the reply's text
};

nlohmann::json usage_json(const Usage & usage);
// A choice's "logprobs": chat's {"content": [{token, logprob, bytes, top_logprobs}], ...};
// the completions API's {tokens, token_logprobs, top_logprobs, text_offset}. Null when
// `entries` is null (not asked for).
nlohmann::json chat_logprobs(const std::vector<LogprobEntry> * entries);
nlohmann::json text_logprobs(const std::vector<LogprobEntry> * entries);
nlohmann::json model_list(const std::string & model, int64_t created);

// A reply's tool calls as OpenAI's message.tool_calls: [{"id", "type": "function",
// "function": {"name", "arguments"}}], the ids `reply_id` + "_" + the call's index; with
// `indexed`, each has its "index" too (a streamed delta's form).
nlohmann::json tool_calls_json(const std::vector<chat::ToolCall> & calls, const std::string & reply_id, bool indexed = false);

// Non-streaming replies. `reasoning` goes to message.reasoning_content when not empty;
// `logprobs` is the choice's (from the functions above); with `tool_calls` (tool_calls_json)
// the message has them, and its content is null when it has no text.
nlohmann::json chat_completion(const ReplyIdentity & who, const std::string & text, const std::string & reasoning,
                               const std::string & finish_reason, const Usage & usage, const nlohmann::json & logprobs = nullptr,
                               const nlohmann::json & tool_calls = nullptr);
nlohmann::json text_completion(const ReplyIdentity & who, const std::string & text, const std::string & finish_reason, const Usage & usage,
                               const nlohmann::json & logprobs = nullptr);

// Streaming chunks. A chat delta is {"role"}, {"content"} or {"reasoning_content"}; the
// last chunk has an empty delta and the finish reason; the usage chunk has no choices.
nlohmann::json chat_chunk(const ReplyIdentity & who, const nlohmann::json & delta, const std::optional<std::string> & finish_reason,
                          const nlohmann::json & logprobs = nullptr);
nlohmann::json text_chunk(const ReplyIdentity & who, const std::string & text, const std::optional<std::string> & finish_reason,
                          const nlohmann::json & logprobs = nullptr);
nlohmann::json usage_chunk(const ReplyIdentity & who, bool chat, const Usage & usage);

// JSON text; invalid UTF-8 becomes U+FFFD rather than an exception.
std::string dump(const nlohmann::json & value);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json & value);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
inline constexpr std::string_view kSsePing = ": ping\n\n";

}  // namespace lr::server
