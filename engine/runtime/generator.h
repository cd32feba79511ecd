#pragma once
// Token-by-token generation after a prompt: sample, stream the text, evaluate, repeat,
// until an end-of-generation token, the token limit, a full context, a stop, or the sink
// saying "enough".

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/generation.h"
#include "engine/runtime/session.h"
#include "engine/sampling/sampler.h"

namespace lr {

// Generates after what `session` holds (its logits must be those of its last token).
// Fails only on errors (no logits, an engine failure); stopping is a StopReason.
Result<GenerateResult> generate(Session & session, const GenerateParams & params, const TokenSink & sink, std::stop_token stop = {});

}  // namespace lr
