#pragma once
// The adaptive mode (KvSettings::adapt, --kv-adapt): between ubatches, from what the cache
// measured, it picks
//   - the split of the memory budget between the device and host tiers, when both are RAM
//     (the CPU backend): the device takes what the blocks held need, from its planned budget
//     up to the planned total of both; with a GPU, VRAM and RAM are different memories and
//     keep the budgets planned for them;
//   - the prefetch depth: as many layers ahead (0 to 2) as the device holds beside the layer
//     computing — "aggressive" when a layer is small against the device (short chats),
//     "conservative" when a prefetch would push out what the pass still reads (long
//     documents on a small device);
//   - the recent window of h2o and random: a larger share of the budget for short chats
//     (the latest turns are what a reply reads), a smaller one for long documents (their
//     heavy hitters are spread over them).
// It looks at windows of kWindowUbatches ubatches; a change needs kConfirmations windows in
// a row that propose it (a budget: one more than a quarter away from the current one, each
// within that of the last), so noisy measurements do not make it flap. Each change is logged with the measurement behind it.
// Placement stays lossless: only the recent window changes results (with h2o or random).

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/api/kv_stats.h"

namespace lr {

// What was planned; the adapter never goes beyond it.
struct KvAdaptPlan {
    uint64_t device_bytes = 0;   // 0: unbounded (nothing to split)
    uint64_t host_bytes = 0;     // 0: no host tier (nothing to split)
    bool shared_memory = false;  // the device tier is host RAM too: budget may move between them
    bool adapts_recent = false;  // a policy with a recent window (h2o, random) is on
};

struct KvAdaptChoice {
    uint64_t device_bytes = 0;
    uint64_t host_bytes = 0;
    uint32_t prefetch_layers = 1;
    double recent_ratio = 0.5;
};

// What the cache measured at a safe point: levels now, and running totals (the adapter
// takes their differences over a window).
struct KvAdaptSample {
    double at_s = 0;              // since the cache opened
    uint64_t ubatches = 0;        // applied so far
    uint32_t context_tokens = 0;  // the longest sequence's
    uint64_t held_bytes = 0;      // the blocks that may move: every sequence's full layers, every tier
    uint64_t layer_bytes = 0;     // the most one layer of one sequence holds
    uint64_t block_reads = 0;
    uint64_t block_hits = 0;
    uint64_t bytes_moved = 0;
    double move_ms = 0;
    double fetch_wait_ms = 0;
};

class KvAdapter {
public:
    static constexpr uint64_t kWindowUbatches = 4;
    static constexpr int kConfirmations = 3;
    // A sequence this short is a chat, this long a document; between them the class stays.
    static constexpr uint32_t kChatTokens = 2048;
    static constexpr uint32_t kDocumentTokens = 8192;
    // H2O's recent window, as a share of the budget. Measured on stories260K at 20 % (KL to
    // the full cache, docs/BENCHMARKS.md): half is best at 512 tokens and better than three
    // quarters at every length; a quarter is best at 2,048.
    static constexpr double kChatRecent = 0.5;
    static constexpr double kDocumentRecent = 0.25;

    KvAdapter(const KvAdaptPlan & plan, const KvAdaptChoice & start);

    // The decisions taken at this sample (most samples take none); choice() has them.
    std::vector<KvAdaptDecision> observe(const KvAdaptSample & sample);
    const KvAdaptChoice & choice() const { return choice_; }

private:
    enum class Workload { unknown, chat, document };
    // A proposed value and how many windows in a row proposed it.
    template <typename T>
    struct Pending {
        std::optional<T> value;
        int windows = 0;
    };
    struct Window;  // the differences over one window

    uint64_t device_target(const KvAdaptSample & now, const Window & w) const;
    uint32_t prefetch_target(const KvAdaptSample & now, const Window & w) const;
    // Counts `proposal` towards a change of `current`; true when it is confirmed.
    template <typename T, typename Same>
    bool confirmed(Pending<T> & pending, const T & current, const T & proposal, Same same);

    KvAdaptPlan plan_;
    KvAdaptChoice choice_;
    Workload workload_ = Workload::unknown;
    std::optional<KvAdaptSample> window_start_;
    Pending<uint64_t> device_;
    Pending<uint32_t> prefetch_;
    Pending<double> recent_;
};

}  // namespace lr
