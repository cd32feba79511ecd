#pragma once
// The byte layout of one paged KV block, shared by the KV cache (which allocates blocks
// and moves them between tiers) and the backends (whose kernels read and write them).
//
// A block holds `block_tokens` consecutive slots of one layer, for all KV heads:
//   K   [n_head_kv][block_tokens] rows of head_dim values, in k_codec
//   V   [n_head_kv][block_tokens] rows of head_dim values, in v_codec
//   pos [n_head_kv][block_tokens] int32: the position of each slot, per head
//                                 (kInvalidPos: empty or evicted)
// Positions are per head because compression policies may keep different tokens per
// head; without compression every head holds the same positions. Each block has its own
// codecs: blocks are written in f16 and re-encoded (q8, q4) when they leave the
// full-precision window, so one layer may mix codecs.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/api/kv_codec.h"

namespace lr {

inline constexpr int32_t kInvalidPos = -1;

// Values per quantization group of a head row: 32, or the largest of 16, 8 dividing head_dim.
uint32_t kv_codec_group(uint32_t head_dim);
// Bytes one head's row of head_dim values takes in the codec.
size_t kv_codec_row_bytes(KvCodec codec, uint32_t head_dim);
// Whether the codec can hold rows of head_dim values.
bool kv_codec_supports(KvCodec codec, uint32_t head_dim);

// The shape of every block of a cache.
struct KvBlockShape {
    uint32_t block_tokens = 32;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    bool operator==(const KvBlockShape &) const = default;
};

struct KvBlockLayout {
    KvBlockShape shape;
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;

    uint32_t n_slots() const { return shape.n_head_kv * shape.block_tokens; }
    size_t k_row_bytes() const { return kv_codec_row_bytes(k_codec, shape.head_dim); }
    size_t v_row_bytes() const { return kv_codec_row_bytes(v_codec, shape.head_dim); }
    size_t k_bytes() const { return size_t(n_slots()) * k_row_bytes(); }
    size_t v_bytes() const { return size_t(n_slots()) * v_row_bytes(); }
    size_t pos_bytes() const { return size_t(n_slots()) * sizeof(int32_t); }

    size_t v_offset() const { return align(k_bytes()); }
    size_t pos_offset() const { return v_offset() + align(v_bytes()); }
    size_t block_bytes() const { return pos_offset() + align(pos_bytes()); }

    // Byte offset of (head, slot) inside the block.
    size_t k_row_offset(uint32_t head, uint32_t slot) const { return (size_t(head) * shape.block_tokens + slot) * k_row_bytes(); }
    size_t v_row_offset(uint32_t head, uint32_t slot) const {
        return v_offset() + (size_t(head) * shape.block_tokens + slot) * v_row_bytes();
    }
    size_t pos_index(uint32_t head, uint32_t slot) const { return size_t(head) * shape.block_tokens + slot; }

    bool operator==(const KvBlockLayout &) const = default;

private:
    static size_t align(size_t n) { return (n + 63) / 64 * 64; }  // cache lines, and SIMD loads
};

}  // namespace lr
