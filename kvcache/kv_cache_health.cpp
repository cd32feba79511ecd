// KvCache's side of the health monitor (kv_health.h): the facts it reads and the repairs it
// runs, all lossless but for a block that no longer reads back, which is recomputed.
#include "kvcache/kv_cache.h"

namespace lr {

uint64_t KvCache::recycled_bytes(KvTier tier) const {
    const MemoryTier * t = placement_.memory_tier(tier);
    return t ? t->recycled_bytes() : 0;
}

uint64_t KvCache::release_recycled(KvTier tier) {
    MemoryTier * t = placement_.memory_tier(tier);
    return t ? t->release_recycled() : 0;
}

uint32_t KvCache::disable_disk_tier() {
    placement_.settle_prefetches();
    placement_.disable_disk();
    uint32_t n_lost = 0;
    for (auto & [seq, s] : state_.seqs) {
        std::vector<BlockId> unreadable;
        Status why;
        for (const LayerBlocks & layer : s.layers) {
            for (BlockId id : layer.ids) {
                if (state_.pool.meta(id).place.home != BlockHome::disk) continue;
                if (Status st = placement_.evacuate_disk_block(id, seq); !st.ok()) {
                    unreadable.push_back(id);
                    if (why.ok()) why = st;
                }
            }
        }
        if (unreadable.empty()) continue;
        n_lost += uint32_t(unreadable.size());
        (void)lose_unreadable(seq, why, unreadable);  // cuts the sequence at the earliest lost position
    }
    publish_stats();
    return n_lost;
}

void KvCache::note_health(std::vector<KvHealthFinding> findings, uint64_t repairs) {
    state_.counters.health = std::move(findings);
    ++state_.counters.health_checks;
    state_.counters.health_repairs += repairs;
    publish_stats();
}

}  // namespace lr
