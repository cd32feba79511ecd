#pragma once
// The codecs K and V values are stored in, as settings name them.

#include <cstdint>
#include <string_view>

namespace lr {

// How K or V values are stored in a block. The numbers are written to the prefix cache
// on disk: never renumber.
enum class KvCodec : uint8_t {
    f32 = 0,  // exact (tests, oracles)
    f16 = 1,  // the default, as llama.cpp
    q8 = 2,   // 8-bit: per group of g values along head_dim, an f16 scale and g int8 (ggml Q8_0 when g = 32)
    q4 = 3,   // 4-bit with minimum: per group, f16 scale, f16 min, g/2 bytes (ggml Q4_1 when g = 32)
};

std::string_view kv_codec_name(KvCodec codec);
// Bits per value before the group overhead: 32, 16, 8, 4 (which of two codecs is narrower).
uint32_t kv_codec_bits(KvCodec codec);

}  // namespace lr
