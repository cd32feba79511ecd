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

size_t kv_codec_row_bytes(KvCodec codec, uint32_t head_dim) {
    switch (codec) {
        case KvCodec::f32: return size_t(head_dim) * 4;
        case KvCodec::f16: return size_t(head_dim) * 2;
        case KvCodec::q8: LR_ASSERT(head_dim % 32 == 0); return size_t(head_dim) / 32 * 34;
        case KvCodec::q4: LR_ASSERT(head_dim % 32 == 0); return size_t(head_dim) / 32 * 20;
    }
    return 0;
}

double kv_codec_bits(KvCodec codec) {
    switch (codec) {
        case KvCodec::f32: return 32;
        case KvCodec::f16: return 16;
        case KvCodec::q8: return 34.0 * 8 / 32;
        case KvCodec::q4: return 20.0 * 8 / 32;
    }
    return 0;
}

}  // namespace lr
