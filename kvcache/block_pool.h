#pragma once
// Metadata of every KV block and the free list of ids. A block holds block_tokens slots
// of one layer; its bytes live in exactly one place at a time (a tier slot, or only in the
// prefix store), and a persisted block also has a durable copy. Sequences with a common
// prefix share its full blocks (ref_count > 1); a shared block is never written: a
// sequence that must change one gets its own copy first (copy-on-write).
//
// Host-side mirrors of what selection needs and that belongs to the block's contents
// (positions, Quest's key bounds) stay here whatever tier the bytes are on; what belongs
// to one sequence (H2O's attention mass) lives in that sequence's block table.

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

// Where a block is and what holds it there (kv_placement).
struct BlockPlacement {
    BlockHome home = BlockHome::device;
    TierSlot slot;                 // in the home tier (none for prefix_store)
    uint32_t pins = 0;             // readers that need it on the device tier (PinnedBlocks)
    bool moving = false;           // being moved between tiers (never a victim meanwhile)
    IoThread::JobId prefetch = 0;  // a copy to the device tier in flight (0: none)
    TierSlot prefetch_slot;        // ... into this device slot
    // Placement's clock when the block was made and when it was last pinned (the FIFO and
    // LRU demotion orders).
    uint64_t born = 0;
    uint64_t used = 0;
};

struct BlockMeta {
    SeqId owner = 0;  // the sequence that wrote it (others may share it)
    uint32_t layer = 0;
    uint32_t ref_count = 0;  // sequences holding it; 0 = free
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;
    uint32_t n_bytes = 0;
    uint64_t chain = 0;      // prefix key when the block is a full block of a pure prefix
    bool persisted = false;  // a durable copy is in the prefix store
    BlockPlacement place;

    std::vector<int32_t> pos;       // [n_head_kv][block_tokens] mirror of the block's positions
    std::vector<uint16_t> key_min;  // [pages][n_head_kv][head_dim] per-channel key bounds (Quest),
    std::vector<uint16_t> key_max;  // as halves rounded outward (half the RAM of floats)
};

class BlockPool {
public:
    BlockId allocate();  // ref_count 1, everything else default
    void retain(BlockId id);
    bool release(BlockId id);  // true when the block became free (it must not be pinned)

    BlockMeta & meta(BlockId id) {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    const BlockMeta & meta(BlockId id) const {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    size_t n_blocks_used() const { return blocks_.size() - free_.size(); }
    // Host RAM of the live blocks' mirrors (positions, key bounds).
    uint64_t mirror_bytes() const;
    // Blocks pinned now (none between ubatches).
    size_t n_pinned() const;

private:
    std::vector<BlockMeta> blocks_;
    std::vector<BlockId> free_;
};

// Blocks held on the device tier while something reads them there (a layer view, a
// fix-up); placement never moves a pinned block off the device. Released on destruction.
class PinnedBlocks {
public:
    PinnedBlocks() = default;
    explicit PinnedBlocks(BlockPool & pool) : pool_(&pool) {}
    PinnedBlocks(PinnedBlocks && o) noexcept : pool_(o.pool_), ids_(std::move(o.ids_)) { o.ids_.clear(); }
    PinnedBlocks & operator=(PinnedBlocks && o) noexcept;
    PinnedBlocks(const PinnedBlocks &) = delete;
    PinnedBlocks & operator=(const PinnedBlocks &) = delete;
    ~PinnedBlocks() { release(); }

    void add(BlockId id);
    void release();
    bool empty() const { return ids_.empty(); }

private:
    BlockPool * pool_ = nullptr;
    std::vector<BlockId> ids_;
};

}  // namespace lr
