#include "reply_stream.h"

#include <algorithm>

namespace lr::server {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

const char * finish_reason(StopReason reason) {
    return reason == StopReason::max_tokens || reason == StopReason::context_full ? "length" : "stop";
}

}  // namespace

ReplyStream::ReplyStream(Job & job, ServerMetrics & metrics, chat::ToolCallFormat tools)
    : job_(job), metrics_(metrics), stops_(job.request.stop), tools_(tools) {}

void ReplyStream::logprob(LogprobEntry entry) {
    entry.text_offset = fed_;
    pending_.push_back(std::move(entry));
}

bool ReplyStream::answer(std::string_view text) {
    token_arrived();
    return content(take_calls(text));
}

void ReplyStream::thinking(std::string_view text) {
    token_arrived();
    job_.channel.push({.kind = JobEvent::Kind::thinking, .text = std::string(text)});
}

void ReplyStream::finish(const GenerateResult & result, uint64_t prompt_tokens) {
    std::vector<chat::ToolCall> calls;
    if (!stops_.stopped()) {
        content(held_);  // a partial "<tool_call>" at the end was text after all
        if (!call_text_.empty()) {
            chat::ParsedToolCalls parsed = chat::parse_tool_calls(tools_, call_text_);
            calls = std::move(parsed.calls);
            if (calls.empty()) content(call_text_);  // not a call after all: the model's text, not lost
        }
    }
    send_answer(stops_.flush());
    if (!stops_.stopped() && !pending_.empty()) {  // tokens without text of their own at the end
        job_.channel.push({.kind = JobEvent::Kind::answer, .logprobs = {pending_.begin(), pending_.end()}});
    }
    const bool called = !calls.empty();
    if (called) job_.channel.push({.kind = JobEvent::Kind::tool_calls, .tool_calls = std::move(calls)});
    const Usage usage{prompt_tokens, result.tokens.size()};
    metrics_.add_tokens(usage.prompt_tokens, usage.completion_tokens);
    job_.channel.push({.kind = JobEvent::Kind::finished,
                       .finish_reason = called             ? "tool_calls"
                                        : stops_.stopped() ? "stop"
                                                           : finish_reason(result.reason),
                       .usage = usage});
}

void ReplyStream::token_arrived() {
    const Clock::time_point now = Clock::now();
    if (!first_) metrics_.observe_time_to_first_token(seconds_between(job_.arrived, now));
    else metrics_.observe_inter_token(seconds_between(last_, now));
    first_ = true;
    last_ = now;
}

bool ReplyStream::content(std::string_view text) {
    fed_ += text.size();
    send_answer(stops_.feed(text));
    return !stops_.stopped();
}

std::string ReplyStream::take_calls(std::string_view text) {
    if (tools_ == chat::ToolCallFormat::none) return std::string(text);
    if (!call_text_.empty()) {
        call_text_ += text;
        return {};
    }
    held_ += text;
    if (tools_ == chat::ToolCallFormat::llama3_json) return take_leading_call();
    const size_t at = held_.find(chat::kToolCallOpen);
    if (at != std::string::npos) {
        call_text_ = held_.substr(at);
        std::string before = held_.substr(0, at);
        held_.clear();
        return before;
    }
    // Keep the longest end of held_ that may begin the marker.
    size_t keep = 0;
    for (size_t n = std::min(held_.size(), chat::kToolCallOpen.size() - 1); n > 0 && keep == 0; --n) {
        if (chat::kToolCallOpen.starts_with(std::string_view(held_).substr(held_.size() - n))) keep = n;
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string ReplyStream::take_leading_call() {
    if (plain_) {
        std::string out = std::move(held_);
        held_.clear();
        return out;
    }
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return {};  // only whitespace yet
    const std::string_view rest = std::string_view(held_).substr(first);
    if (rest.starts_with('{') || rest.starts_with(chat::kPythonTag)) {
        call_text_ = std::move(held_);
        held_.clear();
        return {};
    }
    if (chat::kPythonTag.starts_with(rest)) return {};  // may still become the tag
    plain_ = true;
    return take_leading_call();
}

void ReplyStream::send_answer(std::string text) {
    sent_ += text.size();
    JobEvent e{.kind = JobEvent::Kind::answer, .text = std::move(text)};
    while (!pending_.empty() && pending_.front().text_offset < sent_) {
        e.logprobs.push_back(std::move(pending_.front()));
        pending_.pop_front();
    }
    if (!e.text.empty() || !e.logprobs.empty()) job_.channel.push(std::move(e));
}

}  // namespace lr::server
