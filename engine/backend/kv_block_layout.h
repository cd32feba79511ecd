#pragma once
// The byte layout of one paged KV block, shared by the KV cache (which allocates and
// moves blocks between tiers) and the backends (whose kernels read and write them).
//
// A block holds `block_tokens` consecutive slots of one layer, for all KV heads:
//   K   [n_head_kv][block_tokens][head_dim]   in k_codec
//   V   [n_head_kv][block_tokens][head_dim]   in v_codec
//   pos [n_head_kv][block_tokens]  int32      the position of each slot, per head
//                                              (kInvalidPos: empty or evicted)
// Positions are per head because compression policies may keep different tokens per
// head; without compression every head has the same positions.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lr {

inline constexpr int32_t kInvalidPos = -1;

// How K or V values are stored in a block. The numbers are written to the prefix cache
// on disk: never renumber.
enum class KvCodec : uint8_t {
    f32 = 0,  // exact (tests, oracles)
    f16 = 1,  // the default, as llama.cpp
    q8 = 2,   // 8-bit, groups of 32 along head_dim (ggml Q8_0 blocks)
    q4 = 3,   // 4-bit with min, groups of 32 along head_dim (ggml Q4_1 blocks)
};

std::string_view kv_codec_name(KvCodec codec);
// Bytes one head's row of head_dim values takes in the codec (head_dim multiple of 32 for q8/q4).
size_t kv_codec_row_bytes(KvCodec codec, uint32_t head_dim);
// Bits per value, for planners and stats (f16 -> 16, q8 -> 8.5, q4 -> 5).
double kv_codec_bits(KvCodec codec);

struct KvBlockLayout {
    uint32_t block_tokens = 32;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;

    size_t k_row_bytes() const { return kv_codec_row_bytes(k_codec, head_dim); }
    size_t v_row_bytes() const { return kv_codec_row_bytes(v_codec, head_dim); }
    size_t k_bytes() const { return size_t(n_head_kv) * block_tokens * k_row_bytes(); }
    size_t v_bytes() const { return size_t(n_head_kv) * block_tokens * v_row_bytes(); }
    size_t pos_bytes() const { return size_t(n_head_kv) * block_tokens * sizeof(int32_t); }

    size_t v_offset() const { return align(k_bytes()); }
    size_t pos_offset() const { return v_offset() + align(v_bytes()); }
    size_t block_bytes() const { return pos_offset() + align(pos_bytes()); }

    // Byte offset of (head, slot) inside the K or V region.
    size_t k_row_offset(uint32_t head, uint32_t slot) const { return (size_t(head) * block_tokens + slot) * k_row_bytes(); }
    size_t v_row_offset(uint32_t head, uint32_t slot) const { return v_offset() + (size_t(head) * block_tokens + slot) * v_row_bytes(); }

    bool operator==(const KvBlockLayout &) const = default;

private:
    static size_t align(size_t n) { return (n + 63) / 64 * 64; }  // cache lines, and SIMD loads
};

}  // namespace lr
