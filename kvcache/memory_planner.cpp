#include "engine/api/memory_plan.h"
#include "engine/api/prefill_chunk.h"

#include "engine/backend/cpu/attention.h"
#include "engine/backend/kv_block_layout.h"
#include "kvcache/layer_budgets.h"
#include "kvcache/recurrent_snapshots.h"
#include "kvcache/selection_policy.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace lr {

MachineMemory probe_machine_memory(const std::string & kv_dir) {
    MachineMemory m;
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t value_kb = 0;
    std::string unit;
    while (meminfo >> key >> value_kb >> unit) {
        if (key == "MemAvailable:") m.available_ram_bytes = value_kb * 1024;
    }
    std::filesystem::path p(kv_dir);
    std::error_code ec;
    while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
    struct statvfs vfs {};
    if (!p.empty() && statvfs(p.c_str(), &vfs) == 0) m.free_disk_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize;
    return m;
}

std::string resolve_kv_dir(const KvSettings & settings) {
    if (!settings.dir.empty()) return settings.dir;
    if (const char * xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/longread/kv";
    if (const char * home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/longread/kv";
    return "/tmp/longread-kv";
}

KvTierCapacities resolve_capacities(const KvSettings & s, const MachineMemory & machine, uint64_t weight_bytes, bool weights_in_vram) {
    constexpr double kMiB = 1024.0 * 1024.0;
    const uint64_t ram_left = machine.available_ram_bytes > (weights_in_vram ? 0 : weight_bytes)
                                  ? machine.available_ram_bytes - (weights_in_vram ? 0 : weight_bytes)
                                  : 0;
    KvTierCapacities c;
    if (s.device_mib > 0) {
        c.device_bytes = uint64_t(s.device_mib * kMiB);
    } else {
        c.device_bytes = machine.free_vram_bytes > 0 ? machine.free_vram_bytes / 5 * 4 : ram_left / 2;
    }
    c.host_bytes = s.host_mib > 0 ? uint64_t(s.host_mib * kMiB) : ram_left / 4;
    c.disk_bytes = s.disk_mib > 0 ? uint64_t(s.disk_mib * kMiB) : std::min<uint64_t>(machine.free_disk_bytes / 5, uint64_t(64) << 30);
    return c;
}

namespace {

// Measured by tests/runtime/test_memory_plan_truth: the tokenizer's tables take about 340
// bytes per vocabulary entry (SentencePiece, and BPE with its merges, alike), and a model's
// first steps page in about 4 MiB of the engine's and its libraries' code and allocate half
// a MiB of fixed tables. A CPU thread's attention tile keeps the scores of 32 queries
// (cpu/attention.h): over the slots it reads while the view is shorter than
// kFlashMinSlots, and beyond that only with the attention mass collected (the flash
// attention keeps a block's at a time otherwise). Collecting the mass, attention also keeps
// each query tile's mass over the slots while prefilling (the tiles are added in order)
// and each query head's weights while decoding.
constexpr uint64_t kTokenizerBytesPerToken = 340;
constexpr uint64_t kCodeBytes = uint64_t(9) << 19;
constexpr uint64_t kAttentionTileQueries = 32;

// Layer il's KV heads and head size (ModelMemoryShape::layers may name its own).
uint32_t heads_of(const ModelMemoryShape & model, const KvLayerSpec & l) { return l.n_head_kv ? l.n_head_kv : model.n_head_kv; }
uint32_t dim_of(const ModelMemoryShape & model, const KvLayerSpec & l) { return l.head_dim ? l.head_dim : model.head_dim; }

// Bytes one token takes in every full-attention layer, K and V in these codecs.
uint64_t full_layers_bytes_per_token(const ModelMemoryShape & model, KvCodec k, KvCodec v) {
    auto per_layer = [&](uint32_t heads, uint32_t d) {
        return uint64_t(heads) * (kv_codec_row_bytes(k, d) + kv_codec_row_bytes(v, d) + sizeof(int32_t));
    };
    if (model.layers.empty()) return uint64_t(model.n_layer) * per_layer(model.n_head_kv, model.head_dim);
    uint64_t bytes = 0;
    for (const KvLayerSpec & l : model.layers) {
        if (l.kind == KvLayerKind::full) bytes += per_layer(heads_of(model, l), dim_of(model, l));
    }
    return bytes;
}

uint32_t count_layers(const ModelMemoryShape & model, KvLayerKind kind) {
    if (model.layers.empty()) return kind == KvLayerKind::full ? model.n_layer : 0;
    return uint32_t(std::count_if(model.layers.begin(), model.layers.end(), [&](const KvLayerSpec & l) { return l.kind == kind; }));
}

}  // namespace

uint64_t kv_bytes_for_tokens(const ModelMemoryShape & model, const KvSettings & settings, uint64_t n_tokens) {
    if (model.head_dim == 0) return 0;
    const uint64_t full = full_layers_bytes_per_token(model, KvCodec::f16, KvCodec::f16);
    const uint64_t coded = full_layers_bytes_per_token(model, settings.k_codec(), settings.v_codec());
    const uint64_t window = std::min<uint64_t>(n_tokens, settings.residual_tokens);
    const bool quantized = settings.k_codec() != KvCodec::f16 || settings.v_codec() != KvCodec::f16;
    if (!quantized) return n_tokens * coded;
    return window * full + (n_tokens - window) * coded;
}

namespace {

// Where the kept KV lands: the device tier first (in the device codecs), then RAM and disk,
// where aged bytes shrink to the tier's codec (the window's share is small enough to ignore).
struct TierSpread {
    uint64_t device = 0, host = 0, disk = 0;
    bool fits = false;
};

TierSpread spread_over_tiers(const ModelMemoryShape & model, const KvSettings & s, uint64_t device_coded,
                             const KvTierCapacities & capacities) {
    auto row_bytes = [&](KvCodec k, KvCodec v) {
        return double(kv_codec_row_bytes(k, model.head_dim) + kv_codec_row_bytes(v, model.head_dim) + sizeof(int32_t));
    };
    const KvCodec host_k = KvSettings::narrowed(s.k_codec(), s.host_bits), host_v = KvSettings::narrowed(s.v_codec(), s.host_bits);
    // Blocks reach the disk through RAM when there is a RAM tier, so they keep its narrowing.
    const KvCodec via_k = capacities.host_bytes > 0 ? host_k : s.k_codec(), via_v = capacities.host_bytes > 0 ? host_v : s.v_codec();
    const double device_row = row_bytes(s.k_codec(), s.v_codec());
    const double host_ratio = row_bytes(host_k, host_v) / device_row;
    const double disk_ratio = row_bytes(KvSettings::narrowed(via_k, s.disk_bits), KvSettings::narrowed(via_v, s.disk_bits)) / device_row;
    TierSpread t;
    t.device = std::min(device_coded, capacities.device_bytes);
    const uint64_t overflow = device_coded - t.device;
    t.host = std::min(uint64_t(double(overflow) * host_ratio), capacities.host_bytes);
    const uint64_t to_disk = overflow - std::min(overflow, uint64_t(double(t.host) / host_ratio));
    t.disk = uint64_t(double(to_disk) * disk_ratio);
    t.fits = t.disk <= capacities.disk_bytes;
    return t;
}

// The sliding-window layers: each holds a ring of its window, the ubatch that follows it and
// a block of slack, in the written codec, on the device tier (tiers, policies and codecs are
// the full-attention layers').
struct SlidingPart {
    uint32_t n_layers = 0;
    uint64_t bytes = 0;
    uint64_t mirror_bytes = 0;
};

SlidingPart sliding_part(const ModelMemoryShape & model, uint32_t n_ctx, uint32_t chunk_tokens, const KvSettings & s) {
    SlidingPart part;
    const uint64_t bt = s.block_tokens;
    for (const KvLayerSpec & l : model.layers) {
        if (l.kind != KvLayerKind::sliding_window) continue;
        const uint64_t heads = heads_of(model, l);
        const uint64_t block_bytes = bt * heads * (2 * kv_codec_row_bytes(KvCodec::f16, dim_of(model, l)) + sizeof(int32_t));
        const uint64_t tokens = std::min<uint64_t>(n_ctx, uint64_t(l.window) + chunk_tokens + bt);
        const uint64_t blocks = (tokens + bt - 1) / bt;
        ++part.n_layers;
        part.bytes += blocks * block_bytes;
        part.mirror_bytes += blocks * bt * heads * sizeof(int32_t);
    }
    return part;
}

// The recurrent layers: one sequence's fixed-size states and their snapshots (one per
// interval of the context and the latest turn's end), on the device tier.
struct RecurrentPart {
    uint32_t n_layers = 0;
    uint64_t bytes = 0;
    uint32_t interval = 0;  // tokens between snapshots: no ubatch crosses one
};

RecurrentPart recurrent_part(const ModelMemoryShape & model, uint32_t n_ctx, const KvSettings & s) {
    RecurrentPart part;
    for (const KvLayerSpec & l : model.layers) {
        if (l.kind != KvLayerKind::recurrent) continue;
        ++part.n_layers;
        part.bytes += l.state_bytes;
    }
    part.interval = snapshot_interval(model.layers, model.n_head_kv, model.head_dim, s.block_tokens);
    part.bytes *= 1 + n_ctx / part.interval + 1;
    return part;
}

}  // namespace

MemoryPlan plan_memory(const ModelMemoryShape & shape, uint32_t n_ctx, uint32_t chunk_tokens, const KvSettings & settings,
                       const KvTierCapacities & tier_capacities) {
    // The full-attention layers are planned over the tiers; the sliding ones and the
    // recurrent states take their bounded share of the device tier first; shared layers hold
    // nothing of their own.
    chunk_tokens = chunk_capacity(chunk_tokens);  // automatic: its largest chunk
    const SlidingPart sliding = sliding_part(shape, n_ctx, chunk_tokens, settings);
    const RecurrentPart recurrent = recurrent_part(shape, n_ctx, settings);
    const uint64_t fixed_bytes = sliding.bytes + recurrent.bytes;
    const uint32_t n_shared = count_layers(shape, KvLayerKind::shared);
    ModelMemoryShape model = shape;
    model.n_layer = count_layers(shape, KvLayerKind::full);
    KvTierCapacities capacities = tier_capacities;
    capacities.device_bytes -= std::min(capacities.device_bytes, fixed_bytes);
    MemoryPlan plan;
    plan.weight_bytes = model.weight_bytes;
    plan.expert_weight_bytes = model.expert_weight_bytes;
    plan.active_weight_bytes_per_token = model.active_weight_bytes_per_token;
    plan.runtime_bytes = model.metadata_bytes + uint64_t(model.n_vocab) * kTokenizerBytesPerToken + kCodeBytes;
    plan.kv_bytes_per_token = kv_bytes_for_tokens(model, KvSettings{}, 1);
    // The most tokens the cache holds at once: SnapKV keeps the whole prompt until it selects
    // at the prompt's end (and a prompt may fill the context); the others keep their budget.
    auto peak_tokens = [&](uint32_t n) { return settings.policy == KvPolicy::snapkv ? n : settings.budget_for(n); };
    // A warm-up holds its first tokens whole and in full precision before any of that.
    auto peak_bytes = [&](uint32_t n) {
        const uint64_t warm = kv_bytes_for_tokens(model, KvSettings{}, std::min(n, settings.warmup_tokens));
        return std::max(kv_bytes_for_tokens(model, settings, peak_tokens(n)), warm);
    };
    const uint32_t kept = std::max(peak_tokens(n_ctx), std::min(n_ctx, settings.warmup_tokens));
    // A ubatch's activations (a hybrid's ubatches end at its snapshots), a row of logits, and
    // per thread a tile's attention scores over the kept tokens and the ubatch.
    const uint32_t ubatch = std::max(recurrent.n_layers ? std::min(chunk_tokens, recurrent.interval) : chunk_tokens, 1u);
    const bool mass = model.observed_attention || settings.policy == KvPolicy::h2o || settings.policy == KvPolicy::snapkv;
    uint64_t score_slots = std::min<uint64_t>(n_ctx, uint64_t(kept) + ubatch);
    if (!mass) score_slots = std::min<uint64_t>(score_slots, cpu::kFlashMinSlots);
    plan.scratch_bytes = uint64_t(ubatch) * model.scratch_bytes_per_token + uint64_t(model.n_vocab) * sizeof(float) +
                         uint64_t(model.host_threads) * kAttentionTileQueries * score_slots * sizeof(float);
    if (mass && model.n_head_kv > 0) {
        const uint64_t n_head = std::max(model.n_head, model.n_head_kv);
        const uint64_t tile_tokens = std::max<uint64_t>(1, kAttentionTileQueries / (n_head / model.n_head_kv));
        const uint64_t tiles = (ubatch + tile_tokens - 1) / tile_tokens;
        plan.scratch_bytes += (model.n_head_kv * tiles + n_head) * score_slots * sizeof(float);
    }
    const uint64_t device_coded = peak_bytes(n_ctx);
    const TierSpread spread = spread_over_tiers(model, settings, device_coded, capacities);
    plan.kv_bytes = spread.device + spread.host + spread.disk + fixed_bytes;
    if (model.n_layer > 0)
        plan.layer_kinds.push_back({.kind = KvLayerKind::full, .n_layers = model.n_layer, .kv_bytes = plan.kv_bytes - fixed_bytes});
    if (sliding.n_layers > 0) {
        plan.layer_kinds.push_back({.kind = KvLayerKind::sliding_window, .n_layers = sliding.n_layers, .kv_bytes = sliding.bytes});
    }
    if (recurrent.n_layers > 0) {
        plan.layer_kinds.push_back({.kind = KvLayerKind::recurrent, .n_layers = recurrent.n_layers, .kv_bytes = recurrent.bytes});
    }
    if (n_shared > 0) plan.layer_kinds.push_back({.kind = KvLayerKind::shared, .n_layers = n_shared, .kv_bytes = 0});
    plan.mirror_bytes = uint64_t((kept + settings.block_tokens - 1) / settings.block_tokens) * model.n_layer *
                            mirror_bytes_per_block(model, settings) +
                        sliding.mirror_bytes;

    const uint64_t total_capacity = tier_capacities.device_bytes + tier_capacities.host_bytes + tier_capacities.disk_bytes;
    plan.kv_device_bytes = spread.device + fixed_bytes;
    plan.kv_host_bytes = spread.host;
    plan.kv_disk_bytes = std::min(spread.disk, capacities.disk_bytes);

    // Largest context: grow until the kept KV exceeds every tier together.
    const uint32_t limit = settings.policy == KvPolicy::streaming ? (1u << 24) : model.n_ctx_train;
    uint32_t lo = 0, hi = limit;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (spread_over_tiers(model, settings, peak_bytes(mid), capacities).fits) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    plan.max_context = lo;

    // The device tier must hold the layer attention reads and the one prefetched next: with
    // per-layer budgets, the widest layer (the total is the same).
    const auto policy = SelectionPolicy::create(settings, {.block_tokens = settings.block_tokens}, n_ctx);
    const std::vector<uint32_t> budgets = layer_budgets({.shape = settings.layer_budget,
                                                         .n_layers = model.n_layer,
                                                         .budget = kept,
                                                         .floor = layer_budget_floor(*policy, kept, false),
                                                         .n_tokens = n_ctx});
    const uint32_t widest = budgets.empty() ? kept : *std::max_element(budgets.begin(), budgets.end());
    const uint64_t per_layer = model.n_layer && kept ? uint64_t(double(device_coded) / model.n_layer * widest / kept) : 0;
    char buf[256];
    if (n_ctx > model.n_ctx_train && settings.policy != KvPolicy::streaming) {
        plan.verdict = MemoryVerdict::wont_fit;
        std::snprintf(buf, sizeof buf,
                      "won't fit: the model was trained for %u tokens; lower the context, or use the streaming policy to run past it",
                      model.n_ctx_train);
    } else if (!spread.fits) {
        plan.verdict = MemoryVerdict::wont_fit;
        std::snprintf(buf, sizeof buf,
                      "won't fit: the KV cache needs %s but the tiers hold %s; lower the context to %u, enable compression "
                      "(h2o or snapkv at 20%%, 8-bit KV, or fewer bits in RAM and on disk), or give the disk tier more room",
                      format_bytes(plan.kv_bytes).c_str(), format_bytes(total_capacity).c_str(), plan.max_context);
    } else if (per_layer + plan.scratch_bytes / 64 > capacities.device_bytes) {
        plan.verdict = MemoryVerdict::wont_fit;
        std::snprintf(buf, sizeof buf,
                      "won't fit: attention reads a whole layer of KV (%s) from the device tier, which holds %s; raise the device "
                      "budget, lower the context, or use h2o or streaming (they keep a layer small while the prompt is read)",
                      format_bytes(per_layer).c_str(), format_bytes(capacities.device_bytes).c_str());
    } else if (plan.kv_disk_bytes > 0) {
        plan.verdict = MemoryVerdict::needs_disk;
        std::snprintf(buf, sizeof buf, "fits with the disk tier: KV %s (%s in RAM, %s on disk)", format_bytes(plan.kv_bytes).c_str(),
                      format_bytes(plan.kv_device_bytes + plan.kv_host_bytes).c_str(), format_bytes(plan.kv_disk_bytes).c_str());
    } else {
        plan.verdict = MemoryVerdict::fits;
        std::snprintf(buf, sizeof buf, "fits: weights %s + KV %s", format_bytes(plan.weight_bytes).c_str(),
                      format_bytes(plan.kv_bytes).c_str());
    }
    plan.message = buf;
    return plan;
}

uint64_t mirror_bytes_per_block(const ModelMemoryShape & model, const KvSettings & settings) {
    const uint64_t slots = uint64_t(settings.block_tokens) * model.n_head_kv;
    uint64_t bytes = slots * sizeof(int32_t);
    if (settings.policy == KvPolicy::h2o || settings.policy == KvPolicy::snapkv) bytes += slots * sizeof(float);
    if (settings.policy == KvPolicy::quest) {
        bytes += 2 * uint64_t(settings.block_tokens / settings.quest_page_tokens()) * model.n_head_kv * model.head_dim * sizeof(uint16_t);
    }
    return bytes;
}

std::string format_bytes(uint64_t bytes) {
    char buf[32];
    if (bytes >= (uint64_t(1) << 30)) {
        std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(uint64_t(1) << 30));
    } else if (bytes >= (1u << 20)) {
        std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1u << 20));
    } else if (bytes >= 1024) {
        std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
    } else {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    }
    return buf;
}

}  // namespace lr
