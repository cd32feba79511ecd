#pragma once
// Token-by-token generation after a prompt: sample, stream the text, evaluate, repeat,
// until an end-of-generation token, the token limit, a full context, a stop, or the sink
// saying "enough".

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/session.h"
#include "engine/sampling/sampler.h"

namespace lr {

struct GenerateParams {
    int32_t max_tokens = 512;  // tokens to generate at most; <= 0: until the context is full
    SamplerParams sampler;
};

// Checks the parameters; messages name the setting.
Status validate(const GenerateParams & params);

enum class StopReason {
    end_of_generation,  // the model ended its turn
    max_tokens,
    context_full,       // the context window is full: nothing was truncated, generation stopped
    cancelled,          // the stop token fired
    sink,               // the sink returned false
};
const char * stop_reason_name(StopReason reason);

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated, excluding the end-of-generation token
    std::string text;             // their text, whole UTF-8 characters
    StopReason reason = StopReason::max_tokens;
    double decode_ms = 0;         // time spent evaluating the generated tokens
};

// Receives each generated token with the text it completes (may be empty while a
// multi-byte character is incomplete). Returns whether to keep going.
using TokenSink = std::function<bool(int32_t token, std::string_view text)>;

// Generates after what `session` holds (its logits must be those of its last token).
// Fails only on errors (no logits, an engine failure); stopping is a StopReason.
Result<GenerateResult> generate(Session & session, const GenerateParams & params, const TokenSink & sink,
                                std::stop_token stop = {});

}  // namespace lr
