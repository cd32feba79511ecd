#pragma once
// The settings a session is built with: its context, its prefill chunk and the KV cache's
// knobs. A session is rebuilt only when they change (sampling and lengths apply per call).

#include <cstdint>

#include "engine/api/kv_settings.h"
#include "engine/api/prefill_chunk.h"

namespace lr {

struct SessionOptions {
    uint32_t n_ctx = 0;           // positions the session may hold; 0: the model's trained context
    uint32_t chunk_tokens = 256;  // prefill chunk (ubatch) size; kAutoChunk: from each prompt's length
    KvSettings kv;
};

// Whether a cache built with `x` holds sequences of `y`: the same blocks, codecs, tiers and
// prefix cache (a sequence's selection policy is its own).
inline bool same_cache(const KvSettings & x, const KvSettings & y) {
    return x.k_bits == y.k_bits && x.v_bits == y.v_bits && x.host_bits == y.host_bits && x.disk_bits == y.disk_bits &&
           x.residual_tokens == y.residual_tokens && x.block_tokens == y.block_tokens && x.quest_page_tokens() == y.quest_page_tokens() &&
           x.device_mib == y.device_mib && x.host_mib == y.host_mib && x.disk_mib == y.disk_mib && x.dir == y.dir &&
           x.prefix_cache == y.prefix_cache;
}

// Whether a session built with `a` serves `b` as it is.
inline bool same_session(const SessionOptions & a, const SessionOptions & b) {
    const KvSettings & x = a.kv;
    const KvSettings & y = b.kv;
    return a.n_ctx == b.n_ctx && a.chunk_tokens == b.chunk_tokens && same_cache(x, y) && x.policy == y.policy &&
           x.keep_ratio == y.keep_ratio && x.budget_tokens == y.budget_tokens && x.recent_ratio == y.recent_ratio &&
           x.sink_tokens == y.sink_tokens && x.warmup_tokens == y.warmup_tokens && x.layer_budget == y.layer_budget;
}

}  // namespace lr
