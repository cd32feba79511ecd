#pragma once
// A job's events as server-sent events: the role chunk (chat), a chunk per piece of answer
// or thinking, ": ping" whenever `ping_interval` passes without one, then the finish chunk,
// the usage chunk when asked, and "data: [DONE]" (an error event instead on failure).

#include <chrono>
#include <functional>
#include <string_view>

#include "app/server/generation_queue.h"
#include "app/server/openai_json.h"

namespace lr::server {

// Writes until the job ends; false as soon as `write` fails (the client left), after
// stopping the job.
bool write_event_stream(Job & job, const ReplyIdentity & who, std::chrono::milliseconds ping_interval,
                        const std::function<bool(std::string_view)> & write);

}  // namespace lr::server
