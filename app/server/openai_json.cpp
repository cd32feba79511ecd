#include "openai_json.h"

namespace lr::server {

using nlohmann::json;

namespace {

json finish(const std::optional<std::string> & reason) { return reason ? json(*reason) : json(nullptr); }

json envelope(const ReplyIdentity & who, const char * object) {
    return {{"id", who.id}, {"object", object}, {"created", who.created}, {"model", who.model}};
}

}  // namespace

json usage_json(const Usage & usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json model_list(const std::string & model, int64_t created) {
    return {{"object", "list"},
            {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "longread"}}})}};
}

json chat_completion(const ReplyIdentity & who, const std::string & text, const std::string & reasoning, const std::string & finish_reason,
                     const Usage & usage) {
    json message = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    json out = envelope(who, "chat.completion");
    out["choices"] = json::array({{{"index", 0}, {"message", message}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}});
    out["usage"] = usage_json(usage);
    return out;
}

json text_completion(const ReplyIdentity & who, const std::string & text, const std::string & finish_reason, const Usage & usage) {
    json out = envelope(who, "text_completion");
    out["choices"] = json::array({{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}});
    out["usage"] = usage_json(usage);
    return out;
}

json chat_chunk(const ReplyIdentity & who, const json & delta, const std::optional<std::string> & finish_reason) {
    json out = envelope(who, "chat.completion.chunk");
    out["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish(finish_reason)}}});
    return out;
}

json text_chunk(const ReplyIdentity & who, const std::string & text, const std::optional<std::string> & finish_reason) {
    json out = envelope(who, "text_completion");
    out["choices"] = json::array({{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish(finish_reason)}}});
    return out;
}

json usage_chunk(const ReplyIdentity & who, bool chat, const Usage & usage) {
    json out = envelope(who, chat ? "chat.completion.chunk" : "text_completion");
    out["choices"] = json::array();
    out["usage"] = usage_json(usage);
    return out;
}

std::string dump(const json & value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json & value) { return "data: " + dump(value) + "\n\n"; }

}  // namespace lr::server
