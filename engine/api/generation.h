#pragma once
// What a generation request and its result carry: parameters, progress of the prompt,
// the tokens as they stream, why generation stopped.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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

struct GenerateParams {
    int32_t max_tokens = 512;  // tokens to generate at most; <= 0: until the context is full
    SamplerParams sampler;
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

// Receives each generated token with the text it completes (may be empty while a
// multi-byte character is incomplete). Returns whether to keep going.
using TokenSink = std::function<bool(int32_t token, std::string_view text)>;

}  // namespace lr
