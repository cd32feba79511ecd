#include "block_pool.h"

namespace lr {

BlockId BlockPool::allocate(uint32_t layer) {
    BlockId id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else {
        id = static_cast<BlockId>(blocks_.size());
        blocks_.emplace_back();
    }
    BlockMeta & m = blocks_[id];
    uint8_t * keep_data = m.data;  // a recycled block keeps its slot on the tier
    m = BlockMeta{};
    m.layer = layer;
    m.ref_count = 1;
    m.data = keep_data;
    return id;
}

void BlockPool::retain(BlockId id) {
    BlockMeta & m = meta(id);
    LR_ASSERT(m.ref_count > 0);
    ++m.ref_count;
}

bool BlockPool::release(BlockId id) {
    BlockMeta & m = meta(id);
    LR_ASSERT(m.ref_count > 0);
    if (--m.ref_count > 0) return false;
    free_.push_back(id);
    return true;
}

}  // namespace lr
