#pragma once
// Encoding and decoding of one head's row of head_dim K or V values in a KvCodec
// (scalar reference; backends may use faster equivalents).

#include <cstdint>

#include "engine/backend/kv_block_layout.h"

namespace lr {

void kv_encode_row(KvCodec codec, const float * src, void * dst, uint32_t head_dim);
void kv_decode_row(KvCodec codec, const void * src, float * dst, uint32_t head_dim);

// A whole block's K and V rows (every head and slot) from layout `from` into `to` (same
// shape, other codecs). dst holds to.block_bytes(); its positions are left zero for the
// caller, whose mirror of them is authoritative.
void kv_recode_block(const KvBlockLayout & from, const uint8_t * src, const KvBlockLayout & to, uint8_t * dst);

}  // namespace lr
