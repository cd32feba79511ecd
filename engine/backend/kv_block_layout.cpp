#include "kv_block_layout.h"

#include "engine/common/assert.h"

namespace lr {

std::string_view kv_codec_name(KvCodec codec) {
    switch (codec) {
        case KvCodec::f32: return "f32";
        case KvCodec::f16: return "f16";
        case KvCodec::q8: return "q8";
        case KvCodec::q4: return "q4";
    }
    return "?";
}

uint32_t kv_codec_bits(KvCodec codec) {
    switch (codec) {
        case KvCodec::f32: return 32;
        case KvCodec::f16: return 16;
        case KvCodec::q8: return 8;
        case KvCodec::q4: return 4;
    }
    return 16;
}

uint32_t kv_codec_group(uint32_t head_dim) {
    for (uint32_t g : {32u, 16u, 8u}) {
        if (head_dim % g == 0) return g;
    }
    return 0;
}

bool kv_codec_supports(KvCodec codec, uint32_t head_dim) {
    return codec == KvCodec::f32 || codec == KvCodec::f16 || kv_codec_group(head_dim) != 0;
}

size_t kv_codec_row_bytes(KvCodec codec, uint32_t head_dim) {
    const uint32_t g = kv_codec_group(head_dim);
    switch (codec) {
        case KvCodec::f32: return size_t(head_dim) * 4;
        case KvCodec::f16: return size_t(head_dim) * 2;
        case KvCodec::q8: LR_ASSERT(g != 0); return size_t(head_dim / g) * (2 + g);
        case KvCodec::q4: LR_ASSERT(g != 0); return size_t(head_dim / g) * (4 + g / 2);
    }
    return 0;
}

}  // namespace lr
