#pragma once
// What a KV cache is built from: the model's KV shape, the user's settings, and what the
// session resolved for this machine (tier capacities, cache directory, model identity).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/kv_layer.h"
#include "engine/api/kv_settings.h"
#include "engine/api/memory_plan.h"
#include "engine/backend/kv_block_layout.h"
#include "engine/common/status.h"
#include "kvcache/file_io.h"
#include "kvcache/rope_shift.h"

namespace lr {

// The KV shape of a model: heads and head size of its attention layers, and each layer's
// kind and, where layers differ, its own heads and head size (empty: every layer full
// attention of the model's shape). The cache holds full, sliding-window, shared and
// recurrent layers; the model's heads and head size are those of its full-attention layers.
struct KvModelShape {
    uint32_t n_layer = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    std::vector<KvLayerSpec> layers;
    uint32_t n_head = 0;  // query heads (0: as many as KV heads)

    uint32_t n_query_heads() const { return n_head ? n_head : n_head_kv; }
    KvLayerKind kind(uint32_t il) const { return layers.empty() ? KvLayerKind::full : layers[il].kind; }
    bool full(uint32_t il) const { return kind(il) == KvLayerKind::full; }
    // The positions a sliding layer keeps (0 for the other kinds).
    uint32_t window(uint32_t il) const { return kind(il) == KvLayerKind::sliding_window ? layers[il].window : 0; }
    bool has(KvLayerKind k) const {
        for (const KvLayerSpec & l : layers) {
            if (l.kind == k) return true;
        }
        return false;
    }
    // Whether layer il keeps KV blocks of its own (a shared layer reads its source's, a
    // recurrent one keeps a state instead).
    bool stores(uint32_t il) const { return kind(il) != KvLayerKind::shared && kind(il) != KvLayerKind::recurrent; }
    // The layer whose blocks layer il's attention reads.
    uint32_t source(uint32_t il) const { return kind(il) == KvLayerKind::shared ? layers[il].source : il; }
    uint32_t n_storing_layers() const {
        uint32_t n = 0;
        for (uint32_t il = 0; il < n_layer; ++il) n += stores(il) ? 1 : 0;
        return n;
    }
    // Layer il's KV heads and head size.
    uint32_t n_head_kv_of(uint32_t il) const { return !layers.empty() && layers[il].n_head_kv ? layers[il].n_head_kv : n_head_kv; }
    uint32_t head_dim_of(uint32_t il) const { return !layers.empty() && layers[il].head_dim ? layers[il].head_dim : head_dim; }
    // Whether some layer has heads or a head size of its own.
    bool geometry_varies() const {
        for (uint32_t il = 0; il < n_layer; ++il) {
            if (n_head_kv_of(il) != n_head_kv || head_dim_of(il) != head_dim) return true;
        }
        return false;
    }
};

struct KvCacheConfig {
    KvSettings settings;
    uint32_t max_tokens = 4096;  // positions one sequence may hold (the policy's budget counts within)
    // Resolved tier capacities. Zero device capacity means unbounded (tests, tools).
    KvTierCapacities capacities{.device_bytes = 0, .host_bytes = 0, .disk_bytes = 0};
    std::string dir;              // cache directory (disk tier, prefix cache); empty: no disk
    uint64_t model_identity = 0;  // prefix-cache key of the model file; 0: no prefix cache
    std::shared_ptr<FileIo> io;   // file operations (tests inject faults); null: POSIX
    uint32_t max_position = 0;    // positions stay below this (trained context); 0: max_tokens
    RopeShiftParams rope;         // how keys move when streaming renumbers positions
};

// Checks ranges and that the codecs fit the head size; the message names the setting.
Status validate(const KvCacheConfig & config, const KvModelShape & shape);

}  // namespace lr
