#pragma once
// Predicts, before anything is allocated, what a model at a context size needs: weights,
// KV bytes per tier (after the policy's budget and the codecs), and the largest context
// that fits. The CLI's `info`, the GUI's model picker and sliders, and session creation
// use it to refuse early with a message that says what to change.

#include <cstdint>
#include <string>

#include <vector>

#include "engine/api/kv_layer.h"
#include "engine/api/kv_settings.h"

namespace lr {

// What the machine offers right now.
struct MachineMemory {
    uint64_t available_ram_bytes = 0;  // MemAvailable
    uint64_t free_disk_bytes = 0;      // on the KV cache directory's file system
    uint64_t free_vram_bytes = 0;      // 0 without a GPU; what is left once the weights are uploaded
};

// Reads /proc/meminfo and statvfs(kv_dir, or its nearest existing parent).
MachineMemory probe_machine_memory(const std::string & kv_dir);

// The KV cache directory settings.dir names, or the default one.
std::string resolve_kv_dir(const KvSettings & settings);

struct KvTierCapacities {
    uint64_t device_bytes = 0;
    uint64_t host_bytes = 0;
    uint64_t disk_bytes = 0;
};

// The tier budgets of `settings`, with 0 (automatic) resolved from the machine: device
// (the hot arena, or VRAM) gets half of the RAM left after the weights (or 80% of free
// VRAM), host a quarter, disk a fifth of the free disk up to 64 GiB.
KvTierCapacities resolve_capacities(const KvSettings & settings, const MachineMemory & machine, uint64_t weight_bytes,
                                    bool weights_in_vram);

struct ModelMemoryShape {
    uint32_t n_layer = 0;
    uint32_t n_head = 0;  // query heads (0: as many as KV heads)
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t n_ctx_train = 0;
    uint64_t weight_bytes = 0;
    // Mixtures of experts: of weight_bytes, the routed experts (0 for dense models); and what
    // one token reads: every other weight and the chosen share of the experts.
    uint64_t expert_weight_bytes = 0;
    uint64_t active_weight_bytes_per_token = 0;
    uint64_t scratch_bytes_per_token = 0;  // activations of one ubatch token and the backend's working buffers
    uint32_t n_vocab = 0;                  // one row of logits: what a step returns
    uint64_t metadata_bytes = 0;           // the file besides its tensors (vocabulary, merges): read at load
    uint32_t host_threads = 1;             // threads keeping a tile's attention scores each (Backend::host_threads)
    bool observed_attention = false;       // views collect attention mass whatever the policy (KvCache::observe_attention)
    std::vector<KvLayerSpec> layers;       // per layer; empty: every layer full attention
};

// The KV of the layers of one kind, at the planned context.
struct KvLayerKindPlan {
    KvLayerKind kind = KvLayerKind::full;
    uint32_t n_layers = 0;
    uint64_t kv_bytes = 0;
};

enum class MemoryVerdict { fits, needs_disk, wont_fit };

struct MemoryPlan {
    uint64_t weight_bytes = 0;
    uint64_t expert_weight_bytes = 0;            // of weight_bytes (ModelMemoryShape)
    uint64_t active_weight_bytes_per_token = 0;  // ModelMemoryShape's
    uint64_t kv_bytes = 0;                       // KV of the whole context after policy and codecs, at its peak
    uint64_t kv_device_bytes = 0;                // where it lives (device first, then host, then disk)
    uint64_t kv_host_bytes = 0;
    uint64_t kv_disk_bytes = 0;
    uint64_t scratch_bytes = 0;                // a chunk's activations and working buffers, a row of logits
    uint64_t runtime_bytes = 0;                // the file's header, the tokenizer's tables, the engine's code paged in
    uint64_t mirror_bytes = 0;                 // RAM besides the tiers: what the cache keeps per block for the
                                               // policy (positions, attention mass, quest's key bounds)
    std::vector<KvLayerKindPlan> layer_kinds;  // kv_bytes split by layer kind
    uint64_t kv_bytes_per_token = 0;           // before the policy's budget
    uint32_t max_context = 0;                  // the largest context that fits every tier (<= trained)
    MemoryVerdict verdict = MemoryVerdict::fits;
    std::string message;  // one sentence: what fits, or what to change

    // What the process holds in memory with the context full: everything but the disk tier
    // (in RAM, or VRAM for what a GPU holds). Checked against the resident memory of a run
    // by tests/runtime/test_memory_plan_truth.
    uint64_t resident_bytes() const {
        return weight_bytes + kv_device_bytes + kv_host_bytes + scratch_bytes + runtime_bytes + mirror_bytes;
    }
};

// n_ctx beyond the trained context is refused unless the policy is streaming. chunk_tokens:
// the prefill chunk (kAutoChunk: its largest).
MemoryPlan plan_memory(const ModelMemoryShape & model, uint32_t n_ctx, uint32_t chunk_tokens, const KvSettings & settings,
                       const KvTierCapacities & capacities);

// Bytes of KV for n tokens in full precision window + compressed rest.
uint64_t kv_bytes_for_tokens(const ModelMemoryShape & model, const KvSettings & settings, uint64_t n_tokens);

// Host RAM of one block's mirrors (BlockMeta): positions, attention mass for h2o and snapkv,
// two halves per channel, page and KV head for quest.
uint64_t mirror_bytes_per_block(const ModelMemoryShape & model, const KvSettings & settings);

std::string format_bytes(uint64_t bytes);  // "1.5 GiB", "12.0 MiB", "512 B"

}  // namespace lr
