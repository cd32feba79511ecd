#include "kv_codec_rows.h"

#include <cstring>

#include "engine/common/fp16.h"
#include "engine/quant/quant.h"

namespace lr {

void kv_encode_row(KvCodec codec, const float * src, void * dst, uint32_t head_dim) {
    switch (codec) {
        case KvCodec::f32: std::memcpy(dst, src, head_dim * sizeof(float)); return;
        case KvCodec::f16: {
            auto * d = static_cast<uint16_t *>(dst);
            for (uint32_t i = 0; i < head_dim; ++i) d[i] = fp32_to_fp16(src[i]);
            return;
        }
        case KvCodec::q8: quant::quantize_row(DType::Q8_0, src, dst, head_dim); return;
        case KvCodec::q4: quant::quantize_row(DType::Q4_1, src, dst, head_dim); return;
    }
}

void kv_decode_row(KvCodec codec, const void * src, float * dst, uint32_t head_dim) {
    switch (codec) {
        case KvCodec::f32: std::memcpy(dst, src, head_dim * sizeof(float)); return;
        case KvCodec::f16: {
            const auto * s = static_cast<const uint16_t *>(src);
            for (uint32_t i = 0; i < head_dim; ++i) dst[i] = fp16_to_fp32(s[i]);
            return;
        }
        case KvCodec::q8: quant::dequantize_row(DType::Q8_0, src, dst, head_dim); return;
        case KvCodec::q4: quant::dequantize_row(DType::Q4_1, src, dst, head_dim); return;
    }
}

}  // namespace lr
