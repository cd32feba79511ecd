#include "engine/runtime/token_generation.h"

#include <algorithm>

#include "engine/sampling/logprobs.h"

namespace lr {

TokenGeneration::TokenGeneration(const Tokenizer & tokenizer, const GenerateParams & params, std::span<const int32_t> history,
                                 TokenSink sink, LogprobSink logprob_sink)
    : tokenizer_(tokenizer), params_(params), sampler_(params.sampler),
      decoder_(tokenizer, DecodeOptions{.strip_space_prefix = history.empty()}), sink_(std::move(sink)),
      logprob_sink_(std::move(logprob_sink)) {
    const size_t n_recent = std::min<size_t>(history.size(), size_t(std::max(params.sampler.repeat_last_n, 0)));
    for (size_t i = history.size() - n_recent; i < history.size(); ++i) sampler_.accept(history[i]);
}

std::optional<int32_t> TokenGeneration::next(std::span<const float> logits, uint32_t room) {
    if (finished_) return std::nullopt;
    if (sink_done_) {
        finish(StopReason::sink);
        return std::nullopt;
    }
    if (params_.max_tokens > 0 && int32_t(result_.tokens.size()) >= params_.max_tokens) {
        finish(StopReason::max_tokens);
        return std::nullopt;
    }
    const int32_t token = sampler_.sample(logits);
    sampler_.accept(token);
    if (tokenizer_.is_eog(token)) {
        finish(StopReason::end_of_generation);
        return std::nullopt;
    }
    if (room == 0) {
        finish(StopReason::context_full);
        return std::nullopt;
    }
    if (params_.logprobs >= 0 && logprob_sink_) {
        logprob_sink_(token_logprobs(logits, token, std::min<int32_t>(params_.logprobs, int32_t(logits.size()))));
    }
    result_.tokens.push_back(token);
    const std::string piece = decoder_.push(token);
    result_.text += piece;
    // The token is still evaluated when the sink has had enough: it is part of the reply.
    sink_done_ = sink_ && !sink_(token, piece);
    return token;
}

void TokenGeneration::finish(StopReason reason) {
    if (finished_) return;
    finished_ = true;
    result_.reason = reason;
    const std::string rest = decoder_.flush();
    if (!rest.empty()) {
        result_.text += rest;
        if (sink_) sink_(-1, rest);
    }
}

}  // namespace lr
