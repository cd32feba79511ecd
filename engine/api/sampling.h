#pragma once
// The sampler's knobs (llama.cpp's names and defaults), as settings and requests carry them.

#include <cstdint>

#include "engine/common/status.h"

namespace lr {

struct SamplerParams {
    float temperature = 0.8f;               // <= 0: greedy
    int32_t top_k = 40;                     // keep the k most likely; 0: off
    float top_p = 0.95f;                    // keep the smallest set whose probability reaches p; 1: off
    float min_p = 0.05f;                    // drop tokens less likely than min_p x the top one; 0: off
    float repeat_penalty = 1.0f;            // divide positive logits (multiply negative) of recent tokens; 1: off
    int32_t repeat_last_n = 64;             // how many accepted tokens the penalties look at; 0: off
    float presence_penalty = 0.0f;          // subtracted once from the logit of any recent token
    float frequency_penalty = 0.0f;         // subtracted per occurrence among the recent tokens
    uint64_t seed = 0x4c6f6e6772656164ull;  // fixed by default; set a random one for varied replies
};

// Ok, or invalid_argument naming the first parameter out of range and its allowed range.
Status validate_sampler_params(const SamplerParams & params);

}  // namespace lr
