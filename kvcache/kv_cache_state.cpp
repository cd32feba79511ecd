#include "kvcache/kv_cache_state.h"

#include <algorithm>

namespace lr {

KvCacheState::KvCacheState(const KvCacheConfig & c, const KvModelShape & s, Backend & b) : config(c), shape(s), backend(b) {
    if (!config.io) config.io = posix_file_io();
    if (config.max_position == 0) config.max_position = config.max_tokens;
    block_shape = {config.settings.block_tokens, shape.n_head_kv, shape.head_dim};
    layout.shape = block_shape;
    // Blocks are written in full precision; the codecs of the settings apply when a block
    // leaves the full-precision window.
    layout.k_codec = config.settings.k_bits == 32 ? KvCodec::f32 : KvCodec::f16;
    layout.v_codec = config.settings.v_bits == 32 ? KvCodec::f32 : KvCodec::f16;
    for (uint32_t il = 0; il < shape.n_layer; ++il) {
        layer_shapes.push_back({config.settings.block_tokens, shape.n_head_kv_of(il), shape.head_dim_of(il)});
        const KvBlockLayout L = write_layout(il);
        std::vector<uint8_t> & empty = empty_blocks.emplace_back(L.block_bytes(), 0);
        std::fill_n(reinterpret_cast<int32_t *>(empty.data() + L.pos_offset()), L.n_slots(), kInvalidPos);
    }
    counters.tiers[0].name = "device";
    counters.tiers[1].name = "host";
    counters.tiers[2].name = "disk";
    counters.policy = describe(config.settings);
}

void KvCacheState::report_fault(const Status & s) {
    ++counters.faults;
    counters.last_fault = s.message();
}

}  // namespace lr
