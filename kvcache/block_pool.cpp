#include "block_pool.h"

namespace lr {

BlockId BlockPool::allocate() {
    BlockId id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else {
        id = static_cast<BlockId>(blocks_.size());
        blocks_.emplace_back();
    }
    blocks_[id] = BlockMeta{};
    blocks_[id].ref_count = 1;
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
    m = BlockMeta{};  // ref_count 0; the mirrors' memory goes back
    free_.push_back(id);
    return true;
}

uint64_t BlockPool::mirror_bytes() const {
    uint64_t bytes = 0;
    for (const BlockMeta & m : blocks_) {
        bytes += m.pos.size() * sizeof(int32_t) + m.importance.size() * sizeof(float) + (m.key_min.size() + m.key_max.size()) * sizeof(uint16_t);
    }
    return bytes;
}

}  // namespace lr
