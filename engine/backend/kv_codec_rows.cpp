#include "kv_codec_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/common/fp16.h"

namespace lr {
namespace {

// q8 group: f16 scale, then g int8 values (ggml Q8_0 when g = 32).
void encode_q8(const float * src, uint8_t * dst, uint32_t head_dim, uint32_t g) {
    for (uint32_t at = 0; at < head_dim; at += g, dst += 2 + g) {
        float amax = 0.0f;
        for (uint32_t i = 0; i < g; ++i) amax = std::max(amax, std::fabs(src[at + i]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(dst, &dh, 2);
        auto * q = reinterpret_cast<int8_t *>(dst + 2);
        for (uint32_t i = 0; i < g; ++i) q[i] = static_cast<int8_t>(std::nearbyint(src[at + i] * id));
    }
}

void decode_q8(const uint8_t * src, float * dst, uint32_t head_dim, uint32_t g) {
    for (uint32_t at = 0; at < head_dim; at += g, src += 2 + g) {
        uint16_t dh;
        std::memcpy(&dh, src, 2);
        const float d = fp16_to_fp32(dh);
        const auto * q = reinterpret_cast<const int8_t *>(src + 2);
        for (uint32_t i = 0; i < g; ++i) dst[at + i] = d * q[i];
    }
}

// q4 group: f16 scale, f16 min, g/2 bytes of nibbles; value i in the low nibble of byte i
// for the first half, the high nibble for the second (ggml Q4_1 when g = 32).
void encode_q4(const float * src, uint8_t * dst, uint32_t head_dim, uint32_t g) {
    for (uint32_t at = 0; at < head_dim; at += g, dst += 4 + g / 2) {
        float lo = src[at], hi = src[at];
        for (uint32_t i = 1; i < g; ++i) {
            lo = std::min(lo, src[at + i]);
            hi = std::max(hi, src[at + i]);
        }
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d), mh = fp32_to_fp16(lo);
        std::memcpy(dst, &dh, 2);
        std::memcpy(dst + 2, &mh, 2);
        uint8_t * q = dst + 4;
        for (uint32_t i = 0; i < g / 2; ++i) {
            const int a = std::clamp(int(std::nearbyint((src[at + i] - lo) * id)), 0, 15);
            const int b = std::clamp(int(std::nearbyint((src[at + i + g / 2] - lo) * id)), 0, 15);
            q[i] = static_cast<uint8_t>(a | (b << 4));
        }
    }
}

void decode_q4(const uint8_t * src, float * dst, uint32_t head_dim, uint32_t g) {
    for (uint32_t at = 0; at < head_dim; at += g, src += 4 + g / 2) {
        uint16_t dh, mh;
        std::memcpy(&dh, src, 2);
        std::memcpy(&mh, src + 2, 2);
        const float d = fp16_to_fp32(dh), m = fp16_to_fp32(mh);
        const uint8_t * q = src + 4;
        for (uint32_t i = 0; i < g / 2; ++i) {
            dst[at + i] = d * float(q[i] & 0x0F) + m;
            dst[at + i + g / 2] = d * float(q[i] >> 4) + m;
        }
    }
}

}  // namespace

void kv_encode_row(KvCodec codec, const float * src, void * dst, uint32_t head_dim) {
    auto * out = static_cast<uint8_t *>(dst);
    switch (codec) {
        case KvCodec::f32: std::memcpy(dst, src, head_dim * sizeof(float)); return;
        case KvCodec::f16: {
            auto * d = static_cast<uint16_t *>(dst);
            for (uint32_t i = 0; i < head_dim; ++i) d[i] = fp32_to_fp16(src[i]);
            return;
        }
        case KvCodec::q8: encode_q8(src, out, head_dim, kv_codec_group(head_dim)); return;
        case KvCodec::q4: encode_q4(src, out, head_dim, kv_codec_group(head_dim)); return;
    }
}

void kv_decode_row(KvCodec codec, const void * src, float * dst, uint32_t head_dim) {
    const auto * in = static_cast<const uint8_t *>(src);
    switch (codec) {
        case KvCodec::f32: std::memcpy(dst, src, head_dim * sizeof(float)); return;
        case KvCodec::f16: {
            const auto * s = static_cast<const uint16_t *>(src);
            for (uint32_t i = 0; i < head_dim; ++i) dst[i] = fp16_to_fp32(s[i]);
            return;
        }
        case KvCodec::q8: decode_q8(in, dst, head_dim, kv_codec_group(head_dim)); return;
        case KvCodec::q4: decode_q4(in, dst, head_dim, kv_codec_group(head_dim)); return;
    }
}

void kv_recode_block(const KvBlockLayout & from, const uint8_t * src, const KvBlockLayout & to, uint8_t * dst) {
    const KvBlockShape & shape = from.shape;
    std::vector<float> row(shape.head_dim);
    std::memset(dst, 0, to.block_bytes());
    for (uint32_t g = 0; g < shape.n_head_kv; ++g) {
        for (uint32_t sl = 0; sl < shape.block_tokens; ++sl) {
            kv_decode_row(from.k_codec, src + from.k_row_offset(g, sl), row.data(), shape.head_dim);
            kv_encode_row(to.k_codec, row.data(), dst + to.k_row_offset(g, sl), shape.head_dim);
            kv_decode_row(from.v_codec, src + from.v_row_offset(g, sl), row.data(), shape.head_dim);
            kv_encode_row(to.v_codec, row.data(), dst + to.v_row_offset(g, sl), shape.head_dim);
        }
    }
}

}  // namespace lr
