#pragma once
// What a KV cache is built from: the model's KV shape and the user's cache settings.

#include <cstdint>

#include "engine/backend/kv_block_layout.h"
#include "engine/common/status.h"

namespace lr {

// The KV shape of a model (same for every layer in the architectures we run).
struct KvModelShape {
    uint32_t n_layer = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
};

struct KvCacheConfig {
    uint32_t block_tokens = 32;
    KvCodec k_codec = KvCodec::f16;
    KvCodec v_codec = KvCodec::f16;
    uint32_t max_tokens = 4096;  // positions one sequence may hold
};

// Checks ranges and that the codecs fit the head size; the message names the setting.
Status validate(const KvCacheConfig & config, const KvModelShape & shape);

}  // namespace lr
