#pragma once
// Metadata of every KV block and the free list of ids. A block holds block_tokens slots
// of one layer of one sequence; its bytes live in exactly one place at a time (a tier
// slot, or only in the prefix store), and a persisted block also has a durable copy.
// Host-side mirrors of what policies need (positions, accumulated attention, key bounds)
// stay here whatever tier the bytes are on.

#include <cstdint>
#include <vector>

#include "engine/backend/kv_block_layout.h"
#include "engine/common/assert.h"
#include "kvcache/io_thread.h"
#include "kvcache/tier_store.h"

namespace lr {

using BlockId = uint32_t;
using SeqId = uint32_t;

// Where a block's bytes are.
enum class BlockHome : uint8_t { device, host, disk, prefix_store };

struct BlockMeta {
    SeqId seq = 0;
    uint32_t layer = 0;
    uint32_t ref_count = 0;       // sequences holding it; 0 = free
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;
    uint32_t n_bytes = 0;
    BlockHome home = BlockHome::device;
    TierSlot slot;                // in the tier of `home` (unused for prefix_store)
    bool pinned = false;          // in the layer view attention is reading
    bool moving = false;          // being moved between tiers (never a victim meanwhile)
    IoThread::JobId prefetch = 0; // a copy to the device tier in flight (0: none)
    TierSlot prefetch_slot;       // ... into this device slot
    uint64_t last_use = 0;        // tick of the last attention read
    uint64_t chain = 0;           // prefix-cache key when the block is a full prefix block
    bool persisted = false;       // a durable copy is in the prefix store

    std::vector<int32_t> pos;         // [n_head_kv][block_tokens] mirror of the block's positions
    std::vector<float> importance;    // [n_head_kv][block_tokens] accumulated attention (when collected)
    std::vector<uint16_t> key_min;    // [pages][n_head_kv][head_dim] per-channel key bounds (quest),
    std::vector<uint16_t> key_max;    // as halves rounded outward (half the RAM of floats)
};

class BlockPool {
public:
    BlockId allocate();           // ref_count 1, everything else default
    void retain(BlockId id);
    bool release(BlockId id);     // true when the block became free

    BlockMeta & meta(BlockId id) {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    const BlockMeta & meta(BlockId id) const {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    size_t n_blocks_used() const { return blocks_.size() - free_.size(); }
    // Host RAM of the live blocks' mirrors (positions, attention mass, key bounds).
    uint64_t mirror_bytes() const;

private:
    std::vector<BlockMeta> blocks_;
    std::vector<BlockId> free_;
};

}  // namespace lr
