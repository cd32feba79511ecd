#pragma once
// One sequence of a continuous batch (the server's SequenceBatch) as a plain value: what
// it has read and generated and what it holds in the cache. Polled by the desktop app's
// cache panel while the app serves.

#include <cstdint>
#include <string>

namespace lr {

struct SequenceStats {
    uint64_t id = 0;                // the batch's id for it, in the order sequences came
    uint32_t prompt_tokens = 0;     // its whole prompt
    uint32_t prompt_read = 0;       // ... in the cache so far (restored or computed)
    uint32_t generated_tokens = 0;  // so far
    uint32_t tokens_held = 0;       // positions the cache holds for it
    uint32_t tokens_kept = 0;       // ... that its policy keeps (per layer and head, mean)
    uint64_t kv_bytes = 0;          // its blocks (a block shared with others counts in shares) and states
    std::string policy;             // describe(KvSettings) of its selection
};

}  // namespace lr
