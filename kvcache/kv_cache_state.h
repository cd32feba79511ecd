#pragma once
// What the pieces of the cache share: its configuration, the blocks, the sequences and the
// running counters. The cache owns one; placement, the prefix cache and the layer edits
// work on it. Engine thread only (KvCache::stats() publishes copies for other threads).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/api/kv_stats.h"
#include "engine/backend/backend.h"
#include "kvcache/block_pool.h"
#include "kvcache/kv_cache_config.h"
#include "kvcache/kv_sequence.h"

namespace lr {

struct KvCacheState {
    KvCacheState(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);

    KvCacheConfig config;
    KvModelShape shape;
    KvBlockShape block_shape;
    KvBlockLayout layout;  // of the blocks new tokens are written to (f16, or f32)
    Backend & backend;
    BlockPool pool;
    std::map<SeqId, KvSequence> seqs;
    KvStats counters;                  // running totals
    std::vector<uint8_t> empty_block;  // zero bytes and kInvalidPos positions, in `layout`

    KvBlockLayout layout_of(const BlockMeta & m) const { return {block_shape, m.k_codec, m.v_codec}; }
    // Counted, and the message kept for the stats (faults are handled where they happen).
    void report_fault(const Status & s);
};

}  // namespace lr
