#include "generator.h"

#include <chrono>

#include "engine/runtime/token_generation.h"

namespace lr {

Status validate(const GenerateParams & params) {
    if (params.logprobs < -1 || params.logprobs > kMaxTopLogprobs) {
        return error(StatusCode::invalid_argument,
                     "logprobs must be -1 (none) or 0 to " + std::to_string(kMaxTopLogprobs) + ", got " + std::to_string(params.logprobs));
    }
    return validate_sampler_params(params.sampler);
}

const char * stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::end_of_generation: return "end of generation";
        case StopReason::max_tokens: return "token limit";
        case StopReason::context_full: return "context full";
        case StopReason::cancelled: return "stopped";
        case StopReason::sink: return "stopped by the receiver";
    }
    return "?";
}

Result<GenerateResult> generate(Session & session, const GenerateParams & params, const TokenSink & sink, std::stop_token stop) {
    LR_RETURN_IF_ERROR(validate(params));
    if (session.logits().empty()) return error(StatusCode::invalid_argument, "nothing to continue: evaluate a prompt first");
    TokenGeneration generation(session.model().tokenizer(), params, session.tokens(), sink);
    using Clock = std::chrono::steady_clock;
    for (;;) {
        if (stop.stop_requested()) {
            generation.finish(StopReason::cancelled);
            break;
        }
        const std::optional<int32_t> token = generation.next(session.logits(), session.room());
        if (!token) break;
        const auto t0 = Clock::now();
        Status s = session.append(std::span(&*token, 1), {}, stop);
        generation.result().decode_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (s.code() == StatusCode::cancelled) {
            generation.finish(StopReason::cancelled);
            break;
        }
        LR_RETURN_IF_ERROR(s);
    }
    return std::move(generation.result());
}

}  // namespace lr
