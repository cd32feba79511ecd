#pragma once
// One sequence's generation, token by token, whoever evaluates the tokens: after each
// forward pass it samples the next token from the logits, streams its text, and says when
// to stop (an end-of-generation token, the token limit, a full context, the sink). generate()
// drives one on a Session; SequenceBatch drives one per sequence of a batch.

#include <cstdint>
#include <optional>
#include <span>

#include "engine/api/generation.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace lr {

class TokenGeneration {
public:
    // `history`: the tokens before the generation (the penalties see its end, as
    // llama.cpp's do; empty: the text starts without a space prefix). `params` must pass
    // validate(); the tokenizer must outlive this. `logprob_sink` gets each generated
    // token's log-probabilities when params.logprobs asks for them.
    TokenGeneration(const Tokenizer & tokenizer, const GenerateParams & params, std::span<const int32_t> history, TokenSink sink,
                    LogprobSink logprob_sink = {});

    // The token to evaluate next, given the logits after the last one and the room the
    // context has left; nothing when the generation ends here (result().reason says why; the
    // decoder's rest is flushed to the sink).
    std::optional<int32_t> next(std::span<const float> logits, uint32_t room);
    // Ends it from outside (stopped, failed): the decoder's rest is flushed to the sink.
    void finish(StopReason reason);
    bool finished() const { return finished_; }

    const GenerateResult & result() const { return result_; }
    GenerateResult & result() { return result_; }

private:
    const Tokenizer & tokenizer_;
    GenerateParams params_;
    Sampler sampler_;
    StreamingDecoder decoder_;
    TokenSink sink_;
    LogprobSink logprob_sink_;
    GenerateResult result_;
    bool finished_ = false;
    bool sink_done_ = false;  // the sink asked to stop after the last token
};

}  // namespace lr
