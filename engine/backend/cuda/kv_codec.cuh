#pragma once
// KV codecs on the device (kv_codec_rows.cpp is the spec). Decoding is per element, so
// that a warp reads a row's bytes side by side; encoding is per row, by one thread, in
// exactly the CPU's order (the max search, the scale, the rounding), so that a block
// written by the GPU has the same bytes as one written by the CPU. Both also run on the
// host (tests/gpu/test_cuda_host_codecs).

#include <cmath>
#include <cstdint>

#include "engine/backend/cuda/device_util.cuh"
#include "engine/backend/kv_block_layout.h"

namespace lr::cuda {

// Value i of a row of head_dim values in `codec`; g = kv_codec_group(head_dim).
LR_HD float kv_decode_one(uint32_t codec, const uint8_t * row, uint32_t i, uint32_t g) {
    switch (KvCodec(codec)) {
        case KvCodec::f32: return load_f32(row + 4 * i);
        case KvCodec::f16: return half_at(row + 2 * i);
        case KvCodec::q8: {
            // Group: f16 scale, then g int8 values; x = d * q.
            const uint8_t * grp = row + (i / g) * (2 + g);
            const float d = half_at(grp);
            return d * float(int8_t(grp[2 + i % g]));
        }
        case KvCodec::q4: {
            // Group: f16 scale, f16 min, g/2 bytes; value k < g/2 in the low nibble of byte k,
            // value k >= g/2 in the high nibble of byte k - g/2; x = d * q + m.
            const uint8_t * grp = row + (i / g) * (4 + g / 2);
            const float d = half_at(grp);
            const float m = half_at(grp + 2);
            const uint32_t k = i % g;
            const uint8_t byte = grp[4 + k % (g / 2)];
            const uint32_t nib = k < g / 2 ? (byte & 0x0F) : (byte >> 4);
            return mul_add(d, float(nib), m);
        }
    }
    return 0.0f;
}

LR_HD int clamp_nibble(int q) { return q < 0 ? 0 : q > 15 ? 15 : q; }

// kv_encode_row: src[0..head_dim) -> dst in `codec`.
__host__ __device__ inline void kv_encode_row_device(uint32_t codec, const float * src, uint8_t * dst, uint32_t head_dim, uint32_t g) {
    switch (KvCodec(codec)) {
        case KvCodec::f32:
            for (uint32_t i = 0; i < head_dim; ++i) store_f32(dst + 4 * i, src[i]);
            return;
        case KvCodec::f16:
            for (uint32_t i = 0; i < head_dim; ++i) store_half(dst + 2 * i, src[i]);
            return;
        case KvCodec::q8:
            for (uint32_t at = 0; at < head_dim; at += g, dst += 2 + g) {
                float amax = 0.0f;
                for (uint32_t i = 0; i < g; ++i) {
                    const float a = fabsf(src[at + i]);
                    amax = amax < a ? a : amax;  // std::max(amax, a)
                }
                const float d = div_rn(amax, 127.0f);
                const float id = amax != 0.0f ? div_rn(127.0f, amax) : 0.0f;
                store_half(dst, d);
                for (uint32_t i = 0; i < g; ++i) {
                    dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(int(rintf(mul_rn(src[at + i], id)))));
                }
            }
            return;
        case KvCodec::q4:
            for (uint32_t at = 0; at < head_dim; at += g, dst += 4 + g / 2) {
                float lo = src[at], hi = src[at];
                for (uint32_t i = 1; i < g; ++i) {
                    const float x = src[at + i];
                    lo = x < lo ? x : lo;  // std::min(lo, x)
                    hi = hi < x ? x : hi;  // std::max(hi, x)
                }
                const float d = div_rn(sub_rn(hi, lo), 15.0f);
                const float id = d != 0.0f ? div_rn(1.0f, d) : 0.0f;
                store_half(dst, d);
                store_half(dst + 2, lo);
                for (uint32_t i = 0; i < g / 2; ++i) {
                    const int a = clamp_nibble(int(rintf(mul_rn(sub_rn(src[at + i], lo), id))));
                    const int b = clamp_nibble(int(rintf(mul_rn(sub_rn(src[at + i + g / 2], lo), id))));
                    dst[4 + i] = static_cast<uint8_t>(a | (b << 4));
                }
            }
            return;
    }
}

}  // namespace lr::cuda
