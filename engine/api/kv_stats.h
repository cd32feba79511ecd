#pragma once
// What the KV cache is doing, as a plain value: cheap to copy, polled by the CLI
// (--kv-stats) and a few times a second by the desktop app's cache panel.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/api/kv_health.h"
#include "engine/api/kv_layer.h"

namespace lr {

enum class KvTier : uint8_t { device = 0, host = 1, disk = 2 };
inline constexpr size_t kKvTierCount = 3;

struct KvTierStats {
    const char * name = "";  // "device", "host", "disk"
    bool present = false;    // false: the tier is not configured (shown as absent)
    uint64_t used_bytes = 0;
    uint64_t capacity_bytes = 0;
    uint64_t blocks = 0;     // blocks held
    uint64_t bytes_in = 0;   // moved into this tier (promotions, demotions, restores)
    uint64_t bytes_out = 0;  // moved out of it
    // Health: faults this tier caused (write refused, read failed, checksum mismatch).
    uint64_t faults = 0;
};

// What the layers of one kind hold (one row per kind the model has).
struct KvLayerKindStats {
    KvLayerKind kind = KvLayerKind::full;
    uint32_t n_layers = 0;
    uint64_t bytes = 0;        // KV (or state) bytes these layers hold, over every tier
    uint64_t tokens_kept = 0;  // positions one layer holds per sequence (mean; 0 for recurrent)
    // Recurrent: the copies of the states a cut goes back to (in `bytes` too).
    uint64_t snapshots = 0;
    uint64_t snapshot_bytes = 0;
};

struct KvStats {
    std::array<KvTierStats, kKvTierCount> tiers;
    std::vector<KvLayerKindStats> layer_kinds;
    uint32_t n_sequences = 0;  // sequences the cache holds

    // Placement (lossless).
    uint64_t block_reads = 0;    // blocks attention needed
    uint64_t block_hits = 0;     // ... that were already on the device tier
    uint64_t rows_read = 0;      // KV rows (one slot of one KV head) attention read: quest reads
                                 // fewer than the blocks it fetches hold
    uint64_t bytes_moved = 0;    // between tiers, all directions
    uint64_t prefetches = 0;     // blocks fetched ahead of use
    uint64_t prefetch_hits = 0;  // ... that were fetched before attention needed them
    uint64_t demotions = 0;
    uint64_t promotions = 0;
    uint64_t narrowed_blocks = 0;  // re-encoded to a lower tier's codec on the way down (lossy)

    // Prefix cache.
    uint64_t prefix_lookups = 0;
    uint64_t prefix_hits = 0;      // blocks restored
    uint64_t restored_tokens = 0;  // from the prefix store or shared with another sequence
    uint64_t shared_blocks = 0;    // taken from another live sequence (copy-on-write)
    uint64_t restored_states = 0;  // recurrent states restored with them (snapshots)
    double prefill_ms = 0;         // time spent computing prefill
    double prefill_ms_saved = 0;   // estimated prefill time the restored tokens saved

    // Selection and codecs (lossy).
    uint64_t tokens_seen = 0;  // positions written to the cache
    uint64_t tokens_kept = 0;  // positions the policy keeps now (per layer, per head average)
    uint64_t evicted_tokens = 0;
    std::string policy;         // describe(KvSettings)
    uint64_t mirror_bytes = 0;  // host RAM the blocks' mirrors hold besides the tiers:
                                // positions, attention mass (h2o, snapkv), key bounds (quest)

    // Faults handled (disk full, I/O error, checksum mismatch, file gone).
    uint64_t faults = 0;
    std::string last_fault;  // plain words, empty if none

    // Health monitor (kvcache/kv_health.h): the findings of its latest check, and the checks
    // and repairs it has run since the cache was made.
    std::vector<KvHealthFinding> health;
    uint64_t health_checks = 0;
    uint64_t health_repairs = 0;

    double hit_rate() const { return block_reads == 0 ? 1.0 : double(block_hits) / double(block_reads); }
};

// The JSON of --kv-stats-json: tiers [{name, used_bytes, capacity_bytes, blocks}], block_reads,
// block_hits, bytes_moved, prefetch_hits, prefix_lookups, restored_tokens, restored_states,
// prefill_ms, ...
std::string to_json(const KvStats & stats);
// Human-readable lines for --kv-stats.
std::string to_text(const KvStats & stats);

}  // namespace lr
