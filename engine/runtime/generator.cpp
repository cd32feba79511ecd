#include "generator.h"

#include <chrono>

namespace lr {

Status validate(const GenerateParams & params) { return validate_sampler_params(params.sampler); }

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
    const Tokenizer & tokenizer = session.model().tokenizer();
    Sampler sampler(params.sampler);
    // The penalties see the end of the prompt too, as llama.cpp's do.
    const std::vector<int32_t> & history = session.tokens();
    const size_t n_recent = std::min<size_t>(history.size(), size_t(std::max(params.sampler.repeat_last_n, 0)));
    for (size_t i = history.size() - n_recent; i < history.size(); ++i) sampler.accept(history[i]);

    StreamingDecoder decoder(tokenizer, DecodeOptions{.strip_space_prefix = history.empty()});
    GenerateResult result;
    using Clock = std::chrono::steady_clock;
    for (;;) {
        if (stop.stop_requested()) {
            result.reason = StopReason::cancelled;
            break;
        }
        if (params.max_tokens > 0 && int32_t(result.tokens.size()) >= params.max_tokens) {
            result.reason = StopReason::max_tokens;
            break;
        }
        const int32_t token = sampler.sample(session.logits());
        sampler.accept(token);
        if (tokenizer.is_eog(token)) {
            result.reason = StopReason::end_of_generation;
            break;
        }
        if (session.room() == 0) {
            result.reason = StopReason::context_full;
            break;
        }
        result.tokens.push_back(token);
        const std::string piece = decoder.push(token);
        result.text += piece;
        const bool keep_going = !sink || sink(token, piece);
        const auto t0 = Clock::now();
        Status s = session.append(std::span(&token, 1), {}, stop);
        result.decode_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (s.code() == StatusCode::cancelled) {
            result.reason = StopReason::cancelled;
            break;
        }
        LR_RETURN_IF_ERROR(s);
        if (!keep_going) {
            result.reason = StopReason::sink;
            break;
        }
    }
    const std::string rest = decoder.flush();
    if (!rest.empty()) {
        result.text += rest;
        if (sink) sink(-1, rest);
    }
    return result;
}

}  // namespace lr
