#include "openai_json.h"

namespace lr::server {

using nlohmann::json;

namespace {

json finish(const std::optional<std::string> & reason) { return reason ? json(*reason) : json(nullptr); }

// JSON has no -inf: a token the model rules out gets OpenAI's floor.
double finite_logprob(float x) { return x > -9999.0f ? double(x) : -9999.0; }

json bytes_of(const std::string & text) {
    json out = json::array();
    for (const char c : text) out.push_back(int(static_cast<unsigned char>(c)));
    return out;
}

json envelope(const ReplyIdentity & who, const char * object) {
    return {{"id", who.id}, {"object", object}, {"created", who.created}, {"model", who.model}};
}

}  // namespace

json usage_json(const Usage & usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json chat_logprobs(const std::vector<LogprobEntry> * entries) {
    if (!entries) return nullptr;
    json content = json::array();
    for (const LogprobEntry & e : *entries) {
        json top = json::array();
        for (const auto & [token, logprob] : e.top) {
            top.push_back({{"token", token}, {"logprob", finite_logprob(logprob)}, {"bytes", bytes_of(token)}});
        }
        content.push_back(
            {{"token", e.token}, {"logprob", finite_logprob(e.logprob)}, {"bytes", bytes_of(e.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
}

json text_logprobs(const std::vector<LogprobEntry> * entries) {
    if (!entries) return nullptr;
    json tokens = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
    for (const LogprobEntry & e : *entries) {
        tokens.push_back(e.token);
        logprobs.push_back(finite_logprob(e.logprob));
        json top = json::object();
        for (const auto & [token, logprob] : e.top) {
            if (!top.contains(token)) top[token] = finite_logprob(logprob);  // two tokens may share a text
        }
        tops.push_back(top);
        offsets.push_back(e.text_offset);
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json model_list(const std::string & model, int64_t created) {
    return {{"object", "list"},
            {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "longread"}}})}};
}

json tool_calls_json(const std::vector<chat::ToolCall> & calls, const std::string & reply_id, bool indexed) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json call = {{"id", "call_" + reply_id + "_" + std::to_string(i)},
                     {"type", "function"},
                     {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (indexed) call["index"] = i;
        out.push_back(std::move(call));
    }
    return out;
}

json chat_completion(const ReplyIdentity & who, const std::string & text, const std::string & reasoning, const std::string & finish_reason,
                     const Usage & usage, const json & logprobs, const json & tool_calls) {
    json message = {{"role", "assistant"}, {"content", text}};
    if (!tool_calls.is_null()) {
        message["tool_calls"] = tool_calls;
        if (text.empty()) message["content"] = nullptr;
    }
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    json out = envelope(who, "chat.completion");
    out["choices"] = json::array({{{"index", 0}, {"message", message}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
    out["usage"] = usage_json(usage);
    return out;
}

json text_completion(const ReplyIdentity & who, const std::string & text, const std::string & finish_reason, const Usage & usage,
                     const json & logprobs) {
    json out = envelope(who, "text_completion");
    out["choices"] = json::array({{{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
    out["usage"] = usage_json(usage);
    return out;
}

json chat_chunk(const ReplyIdentity & who, const json & delta, const std::optional<std::string> & finish_reason, const json & logprobs) {
    json out = envelope(who, "chat.completion.chunk");
    out["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish(finish_reason)}}});
    return out;
}

json text_chunk(const ReplyIdentity & who, const std::string & text, const std::optional<std::string> & finish_reason,
                const json & logprobs) {
    json out = envelope(who, "text_completion");
    out["choices"] = json::array({{{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish(finish_reason)}}});
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
