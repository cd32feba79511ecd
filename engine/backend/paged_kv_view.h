#pragma once
// What attention reads: the KV blocks of one layer of one sequence, resident on the
// backend's device tier, in logical order. Built by the KV cache for each layer of each
// ubatch; backends only read and write through it.

#include <cstdint>
#include <span>

#include "engine/backend/kv_block_layout.h"

namespace lr {

struct KvBlockRef {
    uint8_t * data = nullptr;  // the block, in backend memory
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;
};

struct PagedKvView {
    KvBlockShape shape;
    std::span<const KvBlockRef> blocks;

    // Where the ubatch's new tokens are written: token i goes to block write_slots[i] /
    // block_tokens, slot write_slots[i] % block_tokens (same slot for every head). Blocks
    // written to are always f16 or f32.
    std::span<const uint32_t> write_slots;

    // Optional: attention mass each slot receives (softmax weight, summed over the query
    // heads of its KV head and over the ubatch's queries), added to
    // [n_blocks][n_head_kv][block_tokens].
    float * attn_mass = nullptr;  // backend memory, or nullptr when not collected

    // Optional (quest): which slots each KV head reads. read_pages[b * n_head_kv + g] has
    // bit p set when head g reads slots [p * page_tokens, (p + 1) * page_tokens) of block
    // b; for that head the other slots are as if empty. Empty: every slot is read.
    std::span<const uint32_t> read_pages;  // host memory
    uint32_t page_tokens = 0;

    uint32_t n_blocks() const { return static_cast<uint32_t>(blocks.size()); }
    bool reads(uint32_t block, uint32_t head, uint32_t slot) const {
        return read_pages.empty() || (read_pages[size_t(block) * shape.n_head_kv + head] >> (slot / page_tokens) & 1u) != 0;
    }
    KvBlockLayout layout(uint32_t block) const { return {shape, blocks[block].k_codec, blocks[block].v_codec}; }
};

}  // namespace lr
