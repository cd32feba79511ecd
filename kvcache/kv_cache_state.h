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
    KvBlockShape block_shape;  // of the full-attention layers (the blocks policies work on)
    KvBlockLayout layout;      // of the blocks new tokens are written to (f16, or f32)
    Backend & backend;
    BlockPool pool;
    std::map<SeqId, KvSequence> seqs;
    KvStats counters;  // running totals
    // Per layer (a shared layer: its source's): its blocks' shape, and an empty block of
    // it in `layout`'s codecs (zero bytes, kInvalidPos positions).
    std::vector<KvBlockShape> layer_shapes;
    std::vector<std::vector<uint8_t>> empty_blocks;

    KvBlockLayout layout_of(const BlockMeta & m) const { return {layer_shapes[m.layer], m.k_codec, m.v_codec}; }
    // The layout new tokens of layer il are written in.
    KvBlockLayout write_layout(uint32_t il) const { return {layer_shapes[il], layout.k_codec, layout.v_codec}; }
    // Counted, and the message kept for the stats (faults are handled where they happen).
    void report_fault(const Status & s);
    // Placement's clock: a new stamp per block made or pinned (FIFO and LRU order by it).
    uint64_t tick() { return ++clock; }
    uint64_t clock = 0;
};

}  // namespace lr
