#pragma once
// What a generation request and its result carry: parameters, progress of the prompt,
// the tokens as they stream, why generation stopped.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/api/sampling.h"
#include "engine/common/status.h"

namespace lr {

struct PrefillProgress {
    uint32_t n_done = 0;      // tokens of this call evaluated (or restored) so far
    uint32_t n_total = 0;     // tokens of this call
    uint32_t n_restored = 0;  // of n_done, restored from the prefix cache
};
using ProgressFn = std::function<void(const PrefillProgress &)>;

// The most alternatives a token's log-probabilities list (OpenAI's top_logprobs limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct GenerateParams {
    int32_t max_tokens = 512;  // tokens to generate at most; <= 0: until the context is full
    SamplerParams sampler;
    // Each generated token's log-probability and this many alternatives at its place
    // (0..kMaxTopLogprobs); -1: none.
    int32_t logprobs = -1;
};

// Checks the parameters; messages name the setting.
Status validate(const GenerateParams & params);

enum class StopReason {
    end_of_generation,  // the model ended its turn
    max_tokens,
    context_full,  // the context window is full: nothing was truncated, generation stopped
    cancelled,     // the stop token fired
    sink,          // the sink returned false
};
const char * stop_reason_name(StopReason reason);

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated, excluding the end-of-generation token
    std::string text;             // their text, whole UTF-8 characters (a reply's: its answer)
    std::string thinking;         // a reply's thinking, apart from its answer (Engine::reply)
    StopReason reason = StopReason::max_tokens;
    double decode_ms = 0;  // time spent evaluating the generated tokens
};

// A generated token's log-probability and the most likely tokens at its place, from the
// model's own distribution (the softmax of the logits, before penalties, temperature or
// any cut of the sampler), as OpenAI's logprobs report it.
struct TokenLogprobs {
    int32_t token = -1;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // (token, logprob), most likely first
};
// Receives each generated token's log-probabilities, just before the TokenSink gets its text.
using LogprobSink = std::function<void(const TokenLogprobs &)>;

// Receives each generated token with the text it completes (may be empty while a
// multi-byte character is incomplete). Returns whether to keep going.
using TokenSink = std::function<bool(int32_t token, std::string_view text)>;

}  // namespace lr
