#pragma once
// The paged KV cache as the model sees it. For each ubatch of one sequence:
//   reserve(seq, n)       finds room for n new positions in every layer (mutates nothing
//                         on failure);
//   layer_view(seq, il)   the blocks attention reads for layer il, with the slots the new
//                         tokens are written to;
//   commit(seq)           the reserved positions become part of the sequence, or
//   rollback(seq)         they are dropped (a cancelled or failed ubatch).

#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "kvcache/block_pool.h"
#include "kvcache/kv_cache_config.h"
#include "kvcache/kv_stats.h"

namespace lr {

using SeqId = uint32_t;

class KvCache {
public:
    static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);

    const KvCacheConfig & config() const { return config_; }
    const KvBlockLayout & layout() const { return layout_; }

    // Committed positions of `seq` (0 for an unknown sequence): the next position to write.
    uint32_t n_tokens(SeqId seq) const;

    // Room for n_new positions after the committed ones. Status::context_full when the
    // sequence would exceed max_tokens; out_of_memory when no block can be allocated.
    Status reserve(SeqId seq, uint32_t n_new);
    PagedKvView layer_view(SeqId seq, uint32_t il);
    void commit(SeqId seq);
    void rollback(SeqId seq);

    // Keeps the first n_keep positions of `seq` (edit/regenerate), or drops it (n_keep = 0).
    void truncate(SeqId seq, uint32_t n_keep);

    // A snapshot of the cache's state. Safe to call from any thread.
    KvStats stats() const;

    size_t n_blocks_used() const { return pool_.n_blocks_used(); }
    size_t bytes_used() const { return pool_.n_blocks_used() * layout_.block_bytes(); }

private:
    KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);

    struct Sequence {
        std::vector<std::vector<BlockId>> blocks;  // [layer][logical block]
        uint32_t n_committed = 0;
        uint32_t n_reserved = 0;                   // positions of the pending ubatch
        std::vector<uint32_t> write_slots;         // flat slot index of each pending position
        std::vector<KvBlockRef> view_blocks;       // scratch for layer_view
    };

    Result<uint8_t *> slot_for_new_block();
    void clear_positions(uint8_t * block, uint32_t first_slot, uint32_t n_slots);
    void free_block(BlockId id);
    void publish_stats();

    KvCacheConfig config_;
    KvModelShape shape_;
    KvBlockLayout layout_;
    Backend & backend_;
    BlockPool pool_;
    std::map<SeqId, Sequence> seqs_;
    std::vector<DeviceBuffer> arenas_;     // block storage, grown in chunks
    std::vector<uint8_t *> free_slots_;    // storage of freed blocks
    std::vector<int32_t> invalid_pos_;     // a block's worth of kInvalidPos, to clear slots
    mutable std::mutex stats_mutex_;
    KvStats stats_;                        // updated at the end of each ubatch
};

}  // namespace lr
