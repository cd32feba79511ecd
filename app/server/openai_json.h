#pragma once
// The OpenAI API's response shapes (chat.completion, chat.completion.chunk,
// text_completion, the model list) and the framing of server-sent events.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

nlohmann::json usage_json(const Usage & usage);
nlohmann::json model_list(const std::string & model, int64_t created);

// Non-streaming replies. `reasoning` goes to message.reasoning_content when not empty.
nlohmann::json chat_completion(const ReplyIdentity & who, const std::string & text, const std::string & reasoning,
                               const std::string & finish_reason, const Usage & usage);
nlohmann::json text_completion(const ReplyIdentity & who, const std::string & text, const std::string & finish_reason, const Usage & usage);

// Streaming chunks. A chat delta is {"role"}, {"content"} or {"reasoning_content"}; the
// last chunk has an empty delta and the finish reason; the usage chunk has no choices.
nlohmann::json chat_chunk(const ReplyIdentity & who, const nlohmann::json & delta, const std::optional<std::string> & finish_reason);
nlohmann::json text_chunk(const ReplyIdentity & who, const std::string & text, const std::optional<std::string> & finish_reason);
nlohmann::json usage_chunk(const ReplyIdentity & who, bool chat, const Usage & usage);

// JSON text; invalid UTF-8 becomes U+FFFD rather than an exception.
std::string dump(const nlohmann::json & value);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json & value);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
inline constexpr std::string_view kSsePing = ": ping\n\n";

}  // namespace lr::server
