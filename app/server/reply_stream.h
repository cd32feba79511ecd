#pragma once
// One reply's text on its way to its job's channel: stop strings held back (a client never
// sees any part of one), the latencies recorded, each token's log-probabilities (when asked
// for) sent with the answer text it starts in, so that a token after a stop string is never
// reported, and, when the request offers tools, everything from the first "<tool_call>" on
// (Llama 3: a reply that opens with "{") kept back and parsed into the reply's tool calls at
// its end (a malformed call is sent as text: nothing the model wrote is lost).

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "app/server/generation_queue.h"
#include "app/server/stop_matcher.h"
#include "engine/api/generation.h"
#include "engine/chat/tool_calls.h"

namespace lr::server {

class ReplyStream {
public:
    // `tools`: how the model calls tools, when the request offers some (none: it does not).
    ReplyStream(Job & job, ServerMetrics & metrics, chat::ToolCallFormat tools);

    // The log-probabilities of the token whose answer text answer() gets next.
    void logprob(LogprobEntry entry);
    // The next piece of the answer; false when a stop string ended the reply.
    bool answer(std::string_view text);
    void thinking(std::string_view text);
    // The end: what was held back, the tool calls, the finish reason and the usage.
    void finish(const GenerateResult & result, uint64_t prompt_tokens);

private:
    using Clock = std::chrono::steady_clock;

    void token_arrived();
    // Answer text through the stop strings; false when one ended the reply.
    bool content(std::string_view text);
    // With tools: the text before a call goes on as content; from "<tool_call>" on it is kept
    // for finish() (a partial marker at the end waits for the next piece).
    std::string take_calls(std::string_view text);
    // Llama 3's form: a reply that starts with "{" or the python tag is kept whole.
    std::string take_leading_call();
    void send_answer(std::string text);

    Job & job_;
    ServerMetrics & metrics_;
    StopMatcher stops_;
    bool first_ = false;
    Clock::time_point last_;
    uint64_t fed_ = 0;   // answer bytes given to the stop strings' matcher
    uint64_t sent_ = 0;  // of them, sent
    std::deque<LogprobEntry> pending_;
    const chat::ToolCallFormat tools_;
    std::string held_;       // text that may begin a call's marker
    std::string call_text_;  // from the first "<tool_call>" on (Llama 3: the whole reply)
    bool plain_ = false;     // Llama 3: the reply began as text, so it is not a call
};

}  // namespace lr::server
