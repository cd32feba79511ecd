#pragma once
// What one layer of a model keeps for attention, as the KV cache stores it. Architectures
// mix kinds (sliding-window layers between global ones, layers that read an earlier
// layer's KV, recurrent layers with a fixed-size state); the planner, the stats, the cache
// panel and the retention view report per kind.

#include <cstdint>
#include <string_view>

namespace lr {

// Named in stats JSON ("full", ...): never rename.
enum class KvLayerKind : uint8_t {
    full,            // every position, in paged blocks over the tiers; policies apply here
    sliding_window,  // the last `window` positions only: a bounded ring
    shared,          // reads the KV of an earlier layer (`source`); holds nothing itself
    recurrent,       // a fixed-size state per sequence (convolution + delta rule), with snapshots
};
inline constexpr size_t kKvLayerKindCount = 4;

std::string_view kv_layer_kind_name(KvLayerKind kind);

struct KvLayerSpec {
    KvLayerKind kind = KvLayerKind::full;
    uint32_t window = 0;       // sliding_window: positions kept
    uint32_t source = 0;       // shared: the layer whose KV it reads (an earlier one)
    uint64_t state_bytes = 0;  // recurrent: bytes of one sequence's state
    // The layer's own KV heads and head size, where layers differ (gemma4's sliding layers
    // have more, smaller heads); 0: the model's.
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
};

}  // namespace lr
