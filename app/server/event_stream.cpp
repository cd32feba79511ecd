#include "event_stream.h"

namespace lr::server {

using nlohmann::json;

bool write_event_stream(Job & job, const ReplyIdentity & who, std::chrono::milliseconds ping_interval,
                        const std::function<bool(std::string_view)> & write_to_client) {
    const bool chat = job.request.kind == CompletionKind::chat;
    auto write = [&](std::string_view data) {
        if (write_to_client(data)) return true;
        job.stop.request_stop();
        return false;
    };
    if (chat && !write(sse_event(chat_chunk(who, {{"role", "assistant"}, {"content", ""}}, std::nullopt)))) return false;
    for (;;) {
        const std::optional<JobEvent> e = job.channel.next(ping_interval);
        if (!e) {
            if (!write(kSsePing)) return false;
            continue;
        }
        switch (e->kind) {
            case JobEvent::Kind::answer: {
                const std::vector<LogprobEntry> * asked = job.request.generate.logprobs >= 0 ? &e->logprobs : nullptr;
                if (!write(sse_event(chat ? chat_chunk(who, {{"content", e->text}}, std::nullopt, chat_logprobs(asked))
                                          : text_chunk(who, e->text, std::nullopt, text_logprobs(asked)))))
                    return false;
                break;
            }
            case JobEvent::Kind::tool_calls:
                if (!write(sse_event(chat_chunk(who, {{"tool_calls", tool_calls_json(e->tool_calls, who.id, true)}}, std::nullopt))))
                    return false;
                break;
            case JobEvent::Kind::thinking:
                if (!write(sse_event(chat_chunk(who, {{"reasoning_content", e->text}}, std::nullopt)))) return false;
                break;
            case JobEvent::Kind::failed: return write(sse_event(to_json(e->error)));
            case JobEvent::Kind::finished: {
                const json last = chat ? chat_chunk(who, json::object(), e->finish_reason) : text_chunk(who, "", e->finish_reason);
                if (!write(sse_event(last))) return false;
                if (job.request.include_usage && !write(sse_event(usage_chunk(who, chat, e->usage)))) return false;
                return write(kSseDone);
            }
            default: break;
        }
    }
}

}  // namespace lr::server
