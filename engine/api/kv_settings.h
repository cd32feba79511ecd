#pragma once
// Every knob of the KV cache in one validated struct: the same settings are CLI flags,
// GUI sliders and (later) server options. The literature's names map onto them:
//   compress_method -> policy, keep_ratio -> keep_ratio, sink tokens -> sink_tokens,
//   warm-up (the first tokens kept whole until a sequence is long enough) -> warmup_tokens,
//   recent window -> recent_ratio x budget, quant_bits -> k_bits / v_bits,
//   full-precision residual -> residual_tokens.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/kv_codec.h"
#include "engine/common/status.h"

namespace lr {

// Which token positions survive when the cache is over its budget. Written to settings
// files by name: never rename.
enum class KvPolicy {
    none,       // keep everything (the tiers still make it fit)
    h2o,        // heavy hitters by accumulated attention + recent window + sinks
    snapkv,     // at the end of prefill, top-k per head from an observation window
    streaming,  // sinks + a sliding window; runs past the trained context
    quest,      // keep everything, attend to the top blocks for the current query
    random,     // sinks + window + random positions: the evaluation baseline
};

std::string_view kv_policy_name(KvPolicy policy);
std::optional<KvPolicy> kv_policy_from_name(std::string_view name);

// Which blocks leave a full tier first (placement only: results are the same whatever the
// order). Written to settings files by name: never rename.
enum class KvDemotion {
    cycle,  // other sequences' first, then the layers the forward pass needs last (Belady on the cycle)
    lru,    // the block read or written longest ago
    fifo,   // the oldest block
};

std::string_view kv_demotion_name(KvDemotion order);
std::optional<KvDemotion> kv_demotion_from_name(std::string_view name);
// How a policy's budget is spread over the layers that evict (kvcache/layer_budgets.h): the
// total stays the same. Written to settings files by name: never rename.
enum class KvLayerBudget {
    uniform,  // every layer the same budget
    pyramid,  // lower layers keep more, upper layers fewer (PyramidKV)
    inverse,  // lower layers keep fewer, upper layers more
};

std::string_view kv_layer_budget_name(KvLayerBudget shape);
std::optional<KvLayerBudget> kv_layer_budget_from_name(std::string_view name);

struct KvSettings {
    // Placement (lossless). 0 = automatic (from free RAM and disk at start-up).
    double device_mib = 0;     // the tier attention reads from (VRAM, or the hot RAM arena)
    double host_mib = 0;       // RAM behind it (pinned with CUDA)
    double disk_mib = 0;       // cache files under `dir`
    std::string dir;           // empty: $XDG_CACHE_HOME/longread/kv (or ~/.cache/...)
    bool prefix_cache = true;  // persist prefixes on disk and restore them

    // Selection (lossy). The budget counts sinks and the recent window.
    KvPolicy policy = KvPolicy::none;
    double keep_ratio = 0.2;         // of the sequence, when budget_tokens is 0
    uint32_t budget_tokens = 0;      // an absolute budget instead of keep_ratio
    double recent_ratio = 0.5;       // h2o, random: share of the budget for the most recent tokens
    uint32_t sink_tokens = 4;        // first positions never evicted (attention sinks)
    uint32_t obs_window = 32;        // snapkv: queries at the end of the prompt that vote
    uint32_t pool_kernel = 7;        // snapkv: max-pooling width over positions
    KvPolicy then = KvPolicy::none;  // snapkv: keep growing (none) or continue with h2o
    // quest: the unit it ranks and reads is a page of quest_page tokens (at most the KV
    // block, which it divides; 8, not the paper's 16: at the same budget finer pages pick
    // out more of what matters, measured in docs/BENCHMARKS.md); each KV head reads
    // quest_pages of them per layer (0 = from the budget).
    uint32_t quest_page = 8;
    uint32_t quest_pages = 0;

    // Codecs. 16 = f16, 8 = q8, 4 = q4; 32 = f32 (exactness tests). Blocks are written in
    // f16 and re-encoded when they leave the full-precision window of residual_tokens.
    uint32_t k_bits = 16;
    uint32_t v_bits = 16;
    uint32_t residual_tokens = 128;
    // Per-tier codecs: an aged block (past the full-precision window) that moves down to RAM
    // or to disk is re-encoded to at most this many bits, K and V alike (0 = as in the
    // device tier; a block is never widened). Lossy placement, so off by default: with it
    // the tier budgets can change an answer.
    uint32_t host_bits = 0;
    uint32_t disk_bits = 0;

    uint32_t block_tokens = 32;

    // Warm-up: a sequence is neither evicted nor re-encoded to narrower codecs (aged blocks,
    // lower tiers' bits) until it holds warmup_tokens tokens, so that a policy ranks with some
    // attention gathered and short sequences stay exact (0: from the first ubatch). SnapKV
    // selects at a prompt's end only once the warm-up is over; streaming's warm-up ends at the
    // context at the latest, so its window never outgrows it. 100 by measurement
    // (docs/BENCHMARKS.md: H2O's KL on short chats 0.168 -> 0.067, unchanged on long reads).
    uint32_t warmup_tokens = 100;
    // Whether a sequence holding n tokens (after its ubatch) is still warming up: nothing is
    // evicted or re-encoded. max_tokens: the positions it may hold (where the warm-up ends at
    // the latest).
    bool warming_up(uint32_t n_tokens, uint32_t max_tokens) const { return n_tokens < std::min(warmup_tokens, max_tokens); }
    // Per-layer budgets: the shape of the budget over the full-attention layers (h2o, snapkv,
    // random; streaming keeps only sinks and its window, the same in every layer). inverse:
    // closer to the full cache than uniform and pyramid at 50/20/10 % (docs/BENCHMARKS.md).
    KvLayerBudget layer_budget = KvLayerBudget::inverse;

    KvCodec k_codec() const;
    KvCodec v_codec() const;
    // The codec a block coded `codec` takes in a tier that allows tier_bits (0: any).
    static KvCodec narrowed(KvCodec codec, uint32_t tier_bits);
    // Tokens per Quest page in blocks of block_tokens.
    uint32_t quest_page_tokens() const { return quest_page < block_tokens ? quest_page : block_tokens; }
    // Tokens kept out of n (all of them for none/quest).
    uint32_t budget_for(uint32_t n_tokens) const;

    // Placement's order and look-ahead (lossless), and the adaptive mode (kv_adapter.h),
    // which picks the tier split, the prefetch depth and the recent window from what the
    // cache measures, within the budgets above.
    KvDemotion demotion = KvDemotion::cycle;
    uint32_t prefetch_layers = 1;  // layers fetched ahead of the one computing: 0, 1 or 2
    bool adapt = false;
};

// Ranges and combinations; the message names the setting and its allowed values.
Status validate(const KvSettings & settings);

// One line for logs and the cache panel: "h2o 20% (recent 50%, 4 sinks), K q8 / V q4, RAM q4".
std::string describe(const KvSettings & settings);

}  // namespace lr
