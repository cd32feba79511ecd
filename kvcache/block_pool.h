#pragma once
// Metadata of every KV block, reference counts and the free list. A block holds
// block_tokens slots of one layer; its bytes live in a tier (see KvBlockLayout).

#include <cstdint>
#include <vector>

#include "engine/common/assert.h"

namespace lr {

using BlockId = uint32_t;
inline constexpr BlockId kNoBlock = UINT32_MAX;

struct BlockMeta {
    uint32_t layer = 0;
    uint32_t n_filled = 0;     // committed slots, from slot 0
    uint32_t ref_count = 0;    // block tables holding it; 0 = free
    uint8_t * data = nullptr;  // bytes on the device tier
};

class BlockPool {
public:
    // Takes a free block (or a new one) with ref_count 1. `data` is assigned by the caller.
    BlockId allocate(uint32_t layer);
    void retain(BlockId id);
    // Drops one reference; returns true when the block became free.
    bool release(BlockId id);

    BlockMeta & meta(BlockId id) {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    const BlockMeta & meta(BlockId id) const {
        LR_ASSERT(id < blocks_.size());
        return blocks_[id];
    }
    size_t n_blocks_total() const { return blocks_.size(); }
    size_t n_blocks_free() const { return free_.size(); }
    size_t n_blocks_used() const { return blocks_.size() - free_.size(); }

private:
    std::vector<BlockMeta> blocks_;
    std::vector<BlockId> free_;
};

}  // namespace lr
