#pragma once
// A token's log-probability under the model's distribution, log softmax(logits)[token], and
// the most likely tokens beside it: what OpenAI's logprobs report. Computed in double over
// the whole vocabulary, so the values do not depend on the sampler's settings.

#include <cstdint>
#include <span>

#include "engine/api/generation.h"

namespace lr {

// `token` indexes `logits` (not empty); n_top in [0, logits.size()]. Ties in the top list
// go to the lower token id.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t n_top);

}  // namespace lr
