#pragma once
// What the KV cache is doing, as a plain value: cheap to copy, polled by the CLI
// (--kv-stats) and a few times a second by the desktop app's cache panel.

#include <array>
#include <cstdint>
#include <map>
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

// One choice of the adaptive mode (kvcache/kv_adapter.h): what changed, from which
// measurement, when.
struct KvAdaptDecision {
    double at_s = 0;      // seconds since the cache opened
    uint64_t ubatch = 0;  // ubatches the cache had applied
    std::string what;     // "prefetch 1 -> 2 layers"
    std::string why;      // "short chat: 310 tokens, the device holds 40 layers of it"
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

    // Monitoring: how hard the policy works.
    uint64_t tokens_written = 0;  // positions that became part of a sequence (computed or restored), ever
    // Mean over the sequences holding tokens of kept / held: the positions a full-attention
    // layer keeps per KV head (tokens_kept's measure) over the tokens the sequence was given
    // (n_tokens, which streaming keeps counting past its window). 1 when none holds tokens.
    double retention_ratio = 1;
    // Positions evicted per full-attention layer and KV head (evicted_tokens over the layers)
    // per 1,000 tokens written.
    double evictions_per_1k = 0;
    // Ubatches refused because their tokens would not fit: the sequence's context
    // (KvCache::plan's context_full) or every tier (a view that found no room).
    uint64_t refusals = 0;
    // Per policy name ("h2o"), the time spent selecting what to evict: scoring, selection,
    // emptying the slots and the compaction after them.
    std::map<std::string, double> selection_ms;
    // Health monitor (kvcache/kv_health.h): the findings of its latest check, and the checks
    // and repairs it has run since the cache was made.
    std::vector<KvHealthFinding> health;
    uint64_t health_checks = 0;
    uint64_t health_repairs = 0;

    double hit_rate() const { return block_reads == 0 ? 1.0 : double(block_hits) / double(block_reads); }

    // Moves and waits (what the adaptive mode measures), and its latest decisions.
    double move_ms = 0;                            // copying blocks between tiers (bandwidth: bytes_moved / move_ms)
    double fetch_wait_ms = 0;                      // the engine waiting for blocks to reach the device tier
    std::vector<KvAdaptDecision> adapt_decisions;  // oldest first, the latest few
};

// The JSON of --kv-stats-json: tiers [{name, used_bytes, capacity_bytes, blocks}], block_reads,
// block_hits, bytes_moved, prefetch_hits, prefix_lookups, restored_tokens, restored_states,
// prefill_ms, ..., tokens_written, retention_ratio, evictions_per_1k, refusals,
// selection_ms {policy: ms}
std::string to_json(const KvStats & stats);
// Human-readable lines for --kv-stats.
std::string to_text(const KvStats & stats);

}  // namespace lr
