#pragma once
// What a KV cache is built from: the model's KV shape, the user's settings, and what the
// session resolved for this machine (tier capacities, cache directory, model identity).

#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend/kv_block_layout.h"
#include "engine/common/status.h"
#include "kvcache/file_io.h"
#include "engine/api/kv_settings.h"
#include "engine/api/memory_plan.h"
#include "kvcache/rope_shift.h"

namespace lr {

// The KV shape of a model (same for every layer in the architectures we run).
struct KvModelShape {
    uint32_t n_layer = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
};

struct KvCacheConfig {
    KvSettings settings;
    uint32_t max_tokens = 4096;    // positions one sequence may hold
    // Resolved tier capacities. Zero device capacity means unbounded (tests, tools).
    KvTierCapacities capacities{.device_bytes = 0, .host_bytes = 0, .disk_bytes = 0};
    std::string dir;               // cache directory (disk tier, prefix cache); empty: no disk
    uint64_t model_identity = 0;   // prefix-cache key of the model file; 0: no prefix cache
    std::shared_ptr<FileIo> io;    // file operations (tests inject faults); null: POSIX
    uint32_t max_position = 0;     // positions stay below this (trained context); 0: max_tokens
    RopeShiftParams rope;          // how keys move when streaming renumbers positions
};

// Checks ranges and that the codecs fit the head size; the message names the setting.
Status validate(const KvCacheConfig & config, const KvModelShape & shape);

}  // namespace lr
