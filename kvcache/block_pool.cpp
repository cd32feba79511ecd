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
    LR_ASSERT(m.place.pins == 0);
    m = BlockMeta{};  // ref_count 0; the mirrors' memory goes back
    free_.push_back(id);
    return true;
}

uint64_t BlockPool::mirror_bytes() const {
    uint64_t bytes = 0;
    for (const BlockMeta & m : blocks_) {
        bytes += m.pos.size() * sizeof(int32_t) + (m.key_min.size() + m.key_max.size()) * sizeof(uint16_t);
    }
    return bytes;
}

size_t BlockPool::n_pinned() const {
    size_t n = 0;
    for (const BlockMeta & m : blocks_) n += m.place.pins > 0;
    return n;
}

PinnedBlocks & PinnedBlocks::operator=(PinnedBlocks && o) noexcept {
    if (this != &o) {
        release();
        pool_ = o.pool_;
        ids_ = std::move(o.ids_);
        o.ids_.clear();
    }
    return *this;
}

void PinnedBlocks::add(BlockId id) {
    LR_ASSERT(pool_ != nullptr);
    ++pool_->meta(id).place.pins;
    ids_.push_back(id);
}

void PinnedBlocks::release() {
    for (BlockId id : ids_) {
        uint32_t & pins = pool_->meta(id).place.pins;
        LR_ASSERT(pins > 0);
        --pins;
    }
    ids_.clear();
}

}  // namespace lr
